# SPDX-License-Identifier: GPL-2.0-only
# make demo: set up, build, run the main job.  make test: set up, build, test.
SHELL := /bin/bash
CARGO ?= cargo
BIN := target/release/warmcore
PY := .venv/bin/python
DEMO_OUT := out/demo

.PHONY: all setup build test demo bench fuzz-short clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace
	@test -x $(BIN)
	@# The Python package (bindings + viewer) into .venv, built in release mode.
	cd python && VIRTUAL_ENV=$(CURDIR)/.venv PATH=$(CURDIR)/.venv/bin:$$PATH maturin develop --release --quiet

test: build
	$(CARGO) test --release --workspace
	@if [ -d python/tests ]; then $(PY) -m pytest -q python/tests; fi
	@scripts/fuzz-short.sh

fuzz-short: setup
	@scripts/fuzz-short.sh

demo: build
	@mkdir -p $(DEMO_OUT)
	$(BIN) trace info fixtures/perf-make-j2.wct
	$(BIN) trace dump fixtures/perf-make-j2.wct --to 2ms | head -20

bench: build
	@scripts/bench.sh
	@scripts/bench-view.sh

clean:
	$(CARGO) clean
	rm -rf out
