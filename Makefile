# SPDX-License-Identifier: GPL-2.0-only
# make demo: set up, build, run the main job.  make test: set up, build, test.
SHELL := /bin/bash
# The BPF scheduler (crates/sched): scx_cargo's compiler, libbpf-sys's static libelf.
export BPF_CLANG ?= clang-19
export LIBBPF_SYS_LIBRARY_PATH ?= /usr/lib/x86_64-linux-gnu
# The static binary that `warmcore vm` puts in its initramfs.
VM_BIN := target/x86_64-unknown-linux-gnu/release/warmcore
CARGO ?= cargo
BIN := target/release/warmcore
PY := .venv/bin/python
DEMO_OUT := out/demo

.PHONY: all setup build vm-binary test test-vm demo bench fuzz-short clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace
	@test -x $(BIN)

vm-binary: setup
	RUSTFLAGS="-C target-feature=+crt-static" $(CARGO) build --release --target x86_64-unknown-linux-gnu -p warmcore
	@test -x $(VM_BIN)

# The scheduler runs only in a VM here (the machine's kernel has no sched_ext).
test-vm: build vm-binary
	@scripts/test-sched-vm.sh

test: build vm-binary
	$(CARGO) test --release --workspace
	@scripts/test-sched-vm.sh
	@if [ -d python/tests ]; then $(PY) -m pytest -q python/tests; fi
	@scripts/fuzz-short.sh

fuzz-short: setup
	@scripts/fuzz-short.sh

demo: build
	@mkdir -p $(DEMO_OUT)
	$(BIN) trace info fixtures/perf-make-j2.wct
	$(BIN) trace dump fixtures/perf-make-j2.wct --to 2ms | head -20

bench: build vm-binary
	@scripts/bench.sh
	@scripts/bench-sched.sh

clean:
	$(CARGO) clean
	rm -rf out
