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

test: build
	$(CARGO) test --release --workspace
	@if [ -d python/tests ]; then $(PY) -m pytest -q python/tests; fi
	@scripts/fuzz-short.sh

fuzz-short: setup
	@scripts/fuzz-short.sh

demo: build
	@mkdir -p $(DEMO_OUT)
	$(BIN) trace import --from perf-script fixtures/perf-make-j2.txt.zst -o $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) trace info $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) trace dump $(DEMO_OUT)/perf-make-j2.wct --to 2ms | head -20
	$(BIN) trace stats $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) compare --machine default --workload configure --policies cfs --governor powersave --runs 3
	$(BIN) sim --machine default --workload configure --policy cfs --governor powersave --trace $(DEMO_OUT)/sim-configure.wct
	$(BIN) trace stats $(DEMO_OUT)/sim-configure.wct

bench: build
	@scripts/bench.sh

clean:
	$(CARGO) clean
	rm -rf out
