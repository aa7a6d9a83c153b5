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

.PHONY: demo test test-rust test-python test-polars test-polars-newest golden venv bench clean

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
# extras (pinned as in tests/requirements.txt, so already there). The extension includes the
# `.msgpack` expression plugin, i.e. the polars crates: the first (cold) build takes much longer.
test-python: golden
	$(PY) -m pip install -q --no-build-isolation './python[test]'
	MSGPACK_ARROW_GOLDEN=$(GOLDEN) $(PY) -m pytest python/tests -q

# The tested Polars range (python/pyproject.toml: polars>=2.1,<2.2) is tested at both ends:
# tests/requirements.txt pins the lowest release (2.1.0) for test-python; this target runs the
# expression tests with the newest release in the range, in its own venv. Today 2.1.0 is the
# only 2.1 release, so both ends are the same and `make test` leaves this out; add it to `test`
# once a 2.1.x patch release exists.
VENV_NEWEST ?= $(CARGO_TARGET_DIR)/venv-polars-newest
test-polars-newest: golden
	python3 -m venv $(VENV_NEWEST)
	$(VENV_NEWEST)/bin/python -m pip install -q maturin==1.16.0 'polars>=2.1,<2.2'
	$(VENV_NEWEST)/bin/python -m pip install -q --no-build-isolation './python[test]'
	$(VENV_NEWEST)/bin/python -c 'import polars; print("polars", polars.__version__)'
	MSGPACK_ARROW_GOLDEN=$(GOLDEN) $(VENV_NEWEST)/bin/python -m pytest python/tests/test_expressions.py -q

# The core's `polars` feature (src/polars.rs: DataFrame in and out for Rust users). Its build
# of polars-core (debug profile, core features only) shares nothing with the Python extension's
# release build, so it costs a cold polars-core build of its own: not part of `make test`.
test-polars:
	cargo test --features polars --lib polars::
	cargo test --features polars --doc polars

test: test-rust test-python

# Benchmarks (README § Benchmarks). `bench`: the criterion benches (benches/peers.rs,
# benches/decode.rs), then benches/compare.py in full mode, which writes benches/RESULTS.md and
# benches/results.png (it also folds the criterion figures of this run into RESULTS.md). Run it
# on a quiet machine (`uptime`): absolute times follow the load, ratios within one run hold.
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (set on some machines here for old OpenBLAS builds) slow a
# current numpy: unset for the benchmark commands only. `bench-quick`: everything tiny, once
# (criterion's --test mode, compare.py --quick into a scratch directory): proves it all runs.
# BENCH_ARGS: more compare.py options, e.g. BENCH_ARGS="--big" for the 1e8-element panels.
BENCH_ENV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
.PHONY: bench-quick python-package

python-package: venv
	$(PY) -m pip install -q --no-build-isolation ./python

bench: venv python-package $(CLI)
	$(BENCH_ENV) cargo bench --bench peers --bench decode
	$(BENCH_ENV) $(PY) benches/compare.py $(BENCH_ARGS)

bench-quick: venv python-package $(CLI)
	MSGPACK_ARROW_BENCH_ROWS=2000 cargo bench --bench peers --bench decode -- --test
	$(PY) benches/compare.py --quick

clean:
	rm -rf $(VENV) $(OUT) $(GOLDEN)
