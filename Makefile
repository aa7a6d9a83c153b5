# Two entry points (README): `make demo` and `make test`. Both set everything up from the package
# registries: a Python venv in .venv (pinned in tests/requirements.txt) and the Rust build.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# builds live outside the clone so later runs (and CI) reuse them
export CARGO_TARGET_DIR ?= $(HOME)/.cache/msgpack-arrow/target
OUT ?= $(CARGO_TARGET_DIR)/demo
GOLDEN ?= $(CARGO_TARGET_DIR)/golden
CLI := $(CARGO_TARGET_DIR)/release/msgpack-arrow

.PHONY: demo test test-rust test-python golden venv bench clean

$(VENV)/.installed: tests/requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r tests/requirements.txt
	touch $@

venv: $(VENV)/.installed

golden: venv
	$(PY) tests/data/generate.py $(GOLDEN)

$(CLI): $(shell find src -name '*.rs') Cargo.toml
	cargo build --release --bin msgpack-arrow

demo: venv $(CLI)
	@mkdir -p $(OUT)
	$(PY) examples/make_example.py $(OUT)/embeddings.msgpack 1000
	$(CLI) schema $(OUT)/embeddings.msgpack
	$(CLI) head -n 5 $(OUT)/embeddings.msgpack
	$(CLI) convert $(OUT)/embeddings.msgpack -o $(OUT)/embeddings.parquet
	$(PY) -c "import polars as pl; print(pl.read_parquet('$(OUT)/embeddings.parquet'))"

test-rust: golden
	MSGPACK_ARROW_GOLDEN=$(GOLDEN) MSGPACK_ARROW_PYTHON=$(abspath $(PY)) cargo test --workspace --exclude msgpack-arrow-python

# The Python package: pip builds the extension with maturin (release profile, in the exported
# CARGO_TARGET_DIR, so cargo only recompiles what changed) and (re)installs it, with its test
# extras (pinned as in tests/requirements.txt, so already there).
test-python: golden
	$(PY) -m pip install -q --no-build-isolation './python[test]'
	MSGPACK_ARROW_GOLDEN=$(GOLDEN) $(PY) -m pytest python/tests -q

test: test-rust test-python

bench: venv
	cargo bench --bench decode

clean:
	rm -rf $(VENV) $(OUT) $(GOLDEN)
