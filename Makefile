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

.PHONY: demo demo-venv test test-rust test-python test-python-lowest wheel wheel-plugin test-polars golden venv bench clean

# demo-venv: what the demo needs (examples/requirements.txt); venv: everything the tests and
# benchmarks need (tests/requirements.txt, a superset with the same pins)
$(VENV)/.demo-installed: examples/requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r examples/requirements.txt
	touch $@

$(VENV)/.installed: tests/requirements.txt $(VENV)/.demo-installed
	$(PY) -m pip install -q -r tests/requirements.txt
	touch $@

demo-venv: $(VENV)/.demo-installed
venv: $(VENV)/.installed

# made anew each time: a case renamed in generate.py must not linger under its old name
golden: venv
	rm -rf $(GOLDEN)
	$(PY) tests/data/generate.py $(GOLDEN)

$(CLI): $(shell find src -name '*.rs') Cargo.toml
	cargo build --release --bin msgpack-arrow

# The demo's CLI is the package's console script (the same commands as the Rust binary, from the
# extension module): one build, not two.
demo: python-package
	@mkdir -p $(OUT)
	$(PY) examples/make_example.py $(OUT)/embeddings.msgpack 1000
	$(VENV)/bin/msgpack-arrow schema $(OUT)/embeddings.msgpack
	$(VENV)/bin/msgpack-arrow head -n 5 $(OUT)/embeddings.msgpack
	$(VENV)/bin/msgpack-arrow convert $(OUT)/embeddings.msgpack -o $(OUT)/embeddings.parquet
	$(PY) -c "import polars as pl; print(pl.read_parquet('$(OUT)/embeddings.parquet'))"
	$(PY) examples/python_demo.py $(OUT)/embeddings.msgpack

test-rust: golden
	MSGPACK_ARROW_GOLDEN=$(GOLDEN) MSGPACK_ARROW_PYTHON=$(abspath $(PY)) cargo test --workspace --exclude msgpack-arrow-python --features msgpack-arrow/python-tests
	# the API docs build without a broken link
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p msgpack-arrow

# The Python package: maturin builds the extension (release profile, in the exported
# CARGO_TARGET_DIR, so cargo only recompiles what changed) into an abi3 wheel. `wheel`: the base
# package, without the polars crates (what `pip install ./python` builds; make demo). `wheel-plugin`:
# with the `.msgpack` expression plugin (cargo feature `plugin`: the polars crates, most of a cold
# build); make test builds only this one and both test venvs install it.
WHEELS := $(CARGO_TARGET_DIR)/wheels
wheel: demo-venv
	rm -f $(WHEELS)/base/msgpack_arrow-*.whl
	$(VENV)/bin/maturin build --release -m python/Cargo.toml -o $(WHEELS)/base

wheel-plugin: venv
	rm -f $(WHEELS)/plugin/msgpack_arrow-*.whl
	$(VENV)/bin/maturin build --release -m python/Cargo.toml --features plugin -o $(WHEELS)/plugin

# MSGPACK_ARROW_REQUIRE_PLUGIN: the plugin tests run (and fail if the wheel lacks it), never skip
test-python: golden wheel-plugin
	$(PY) -m pip install -q --force-reinstall --no-deps $(WHEELS)/plugin/msgpack_arrow-*.whl
	MSGPACK_ARROW_REQUIRE_PLUGIN=1 MSGPACK_ARROW_REQUIRE_REMOTE=1 MSGPACK_ARROW_GOLDEN=$(GOLDEN) $(PY) -m pytest python/tests -q

# The expression plugin's Polars range (msgpack_arrow.TESTED_POLARS: >=2.0,<2.2; the base package
# only needs polars>=2.0) is tested at both ends: test-python uses the upper end pinned in
# tests/requirements.txt (2.1.0); this target runs all of python/tests again with the lowest
# release (2.0.0) in a venv of its own, same wheel.
VENV_LOWEST ?= $(CARGO_TARGET_DIR)/venv-polars-lowest
POLARS_LOWEST := polars==2.0.0 polars-runtime-32==2.0.0
$(VENV_LOWEST)/.installed: tests/requirements.txt
	python3 -m venv $(VENV_LOWEST)
	$(VENV_LOWEST)/bin/python -m pip install -q --upgrade pip
	grep -v '^polars' tests/requirements.txt > $(VENV_LOWEST)/requirements.txt
	$(VENV_LOWEST)/bin/python -m pip install -q -r $(VENV_LOWEST)/requirements.txt $(POLARS_LOWEST)
	touch $@

test-python-lowest: golden wheel-plugin $(VENV_LOWEST)/.installed
	$(VENV_LOWEST)/bin/python -m pip install -q --force-reinstall --no-deps $(WHEELS)/plugin/msgpack_arrow-*.whl
	$(VENV_LOWEST)/bin/python -c 'import polars; print("lowest tested polars:", polars.__version__)'
	MSGPACK_ARROW_REQUIRE_PLUGIN=1 MSGPACK_ARROW_REQUIRE_REMOTE=1 MSGPACK_ARROW_GOLDEN=$(GOLDEN) $(VENV_LOWEST)/bin/python -m pytest python/tests -q

# The core's `polars` feature (src/polars.rs: DataFrame in and out for Rust users). Its build
# of polars-core (debug profile, core features only) shares nothing with the Python extension's
# release build: about 2 minutes cold on 2 cores (measured), so `make test` runs it too.
test-polars:
	cargo test --features polars --lib polars::
	cargo test --features polars --doc polars

test: test-rust test-polars test-python test-python-lowest

# Benchmarks (README § Benchmarks). `bench`: the criterion benches (benches/peers.rs,
# benches/decode.rs), then benches/compare.py in full mode, which writes benches/RESULTS.md and
# benches/results.png (it also folds the criterion figures of this run into RESULTS.md). Run it
# on a quiet machine (`uptime`): absolute times follow the load, ratios within one run hold.
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (set on some machines here for old OpenBLAS builds) slow a
# current numpy: unset for the benchmark commands only. `bench-quick`: everything tiny, once
# (criterion's --test mode, compare.py --quick into a scratch directory): proves it all runs.
# benches/remote.py: a URL read vs download + local read, on a local HTTP server.
# benches/shapes.py: every other shape (first rows, warm reads, wide maps, small arrays, writes,
# Parquet, glob memory, cores), fresh and warm, peers beside it: writes benches/SHAPES.md.
# BENCH_ARGS: more compare.py options, e.g. BENCH_ARGS="--big" for the 1e8-element panels.
BENCH_ENV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
.PHONY: bench-quick python-package

python-package: wheel
	$(PY) -m pip install -q --force-reinstall --no-deps $(WHEELS)/base/msgpack_arrow-*.whl

bench: venv python-package $(CLI)
	$(BENCH_ENV) cargo bench --bench peers --bench decode
	$(BENCH_ENV) $(PY) benches/compare.py $(BENCH_ARGS)
	$(BENCH_ENV) $(PY) benches/remote.py
	$(BENCH_ENV) $(PY) benches/shapes.py --cli $(CLI)

bench-quick: venv python-package $(CLI)
	MSGPACK_ARROW_BENCH_ROWS=2000 cargo bench --bench peers --bench decode -- --test
	$(PY) benches/compare.py --quick
	$(PY) benches/remote.py --quick
	$(PY) benches/shapes.py --quick --cli $(CLI)

# Fuzzing (fuzz/README.md): every target in turn for FUZZ_SECONDS each, in a throughput build
# (no sanitizer; FUZZ_SANITIZER=address for ASan), seeded with the golden files; a crash stops
# it with the input saved under fuzz/artifacts/. FUZZ_ARGS: more libFuzzer flags (-fork=2). cargo-fuzz needs nightly flags: RUSTC_BOOTSTRAP.
FUZZ_TARGETS ?= decode roundtrip salvage index
FUZZ_SECONDS ?= 900
FUZZ_SANITIZER ?= none
FUZZ_ARGS ?=
.PHONY: fuzz
fuzz: golden
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	fuzz/seed.sh $(GOLDEN)
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$(HOME)/.cache/msgpack-arrow/fuzz-target \
	    cargo fuzz run -s $(FUZZ_SANITIZER) -O $$t -- -max_len=16384 -timeout=10 \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(FUZZ_ARGS) || exit 1; \
	done

clean:
	rm -rf $(VENV) $(OUT) $(GOLDEN)
