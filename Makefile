# SPDX-License-Identifier: GPL-2.0-only
# make demo: set up, build, run the main job.  make test: set up, build, test.
SHELL := /bin/bash
# The BPF parts (crates/record, crates/sched): the clang that compiles BPF,
# and where the static libelf/zlib/zstd that libbpf links against live.
export BPF_CLANG ?= clang-19
export LIBBPF_SYS_LIBRARY_PATH ?= /usr/lib/$(shell uname -m)-linux-gnu
CARGO ?= cargo
BIN := target/release/warmcore
PY := .venv/bin/python
DEMO_OUT := out/demo
# Every command that compiles runs under it: sccache as the compiler cache,
# a server of the command's own, stopped at its end (the script says why).
CACHE := scripts/with-sccache.sh

.PHONY: all setup build pgo dist test test-vm demo bench fuzz-short clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@# The Python package (bindings + viewer) into .venv, built in release
	@# mode by maturin, then the rest of the workspace. The extension's crate
	@# (crates/py) is maturin's alone: built by cargo too, each of the two
	@# builds wrote over the other's library and compiled it again on every
	@# make build.
	cd python && VIRTUAL_ENV=$(CURDIR)/.venv PATH=$(CURDIR)/.venv/bin:$$PATH $(CURDIR)/$(CACHE) maturin develop --release --quiet
	$(CACHE) $(CARGO) build --release --workspace --exclude warmcore-py
	@# The scripts and tests run $(BIN): cargo must build into target/.
	@test -x $(BIN) || { echo "make: $(BIN) was not built: CARGO_TARGET_DIR ($$CARGO_TARGET_DIR) sends cargo's output elsewhere; unset it, or make target a link to that directory" >&2; exit 1; }

# The command built with profile-guided optimisation, for studies of many
# runs: target/pgo/release/warmcore, the same results, faster
# (scripts/build-pgo.sh, BENCHMARKS.md).
pgo: setup
	@$(CACHE) scripts/build-pgo.sh

# The wheels (the command, the Python package) and the Debian package, into
# out/dist (scripts/dist.sh); make test's pytest phase makes, installs and
# checks them.
dist: build
	@$(CACHE) scripts/dist.sh

# The scheduler runs only in a VM here (the machine's kernel has no sched_ext).
# make test runs this command beside its other phases.
TEST_VM := scripts/test-sched-vm.sh
test-vm: build
	@$(TEST_VM)

# A test that cannot run here fails; WARMCORE_TEST_SKIP=root,browser,...
# skips those on request (README, Testing). Each skipped test appends a line
# to the log, which the last line of make test sums up.
SKIP_LOG := out/test-skipped.log
# Each phase's output (cargo-test, pytest, fuzz-*, vm-main, vm-rest), kept after the run.
TEST_LOGS := out/test
test: export WARMCORE_SKIP_LOG := $(CURDIR)/$(SKIP_LOG)

# The phases (scripts/test-phases.sh), on two lanes of CPUs that take them
# from one queue: the VM suite's boots, cargo test, the packages (make
# dist's script) and pytest, the fuzz build and each fuzz target; the
# failing phases are named at the end.
test: build
	@mkdir -p $(dir $(SKIP_LOG)) && rm -f $(SKIP_LOG)
	@status=0; CARGO=$(CARGO) scripts/test-phases.sh $(TEST_LOGS) '$(TEST_VM)' || status=$$?; \
	 scripts/test-skipped.sh $(SKIP_LOG); exit $$status

fuzz-short: setup
	@$(CACHE) scripts/fuzz-short.sh

demo: build
	@mkdir -p $(DEMO_OUT)
	@echo "== The simulator: the Linux fair class of 5.9 (cfs, the papers' baseline) and of today (eevdf), and the papers' policies on a small machine, a configure-like fork/wait chain"
	$(BIN) compare --machine default --workload configure --policies cfs,eevdf,slocal,smove,nest --governor powersave --runs 3
	@echo "== The sched_ext scheduler of warmcore sched, run by the simulator (scx:NAME), beside the papers' models and the fair class of today"
	$(BIN) compare --machine default --workload configure --policies cfs,eevdf,nest,scx:default,scx:nest --governor powersave --runs 3
	$(BIN) sim --machine default --workload configure --policy cfs --governor powersave --trace $(DEMO_OUT)/sim-configure.wct
	$(BIN) trace stats $(DEMO_OUT)/sim-configure.wct
	@echo "== The field table: every scheduler warmcore hosts on five workloads, one seed, one machine, ranked (field.md, field.png)"
	$(BIN) field --out $(DEMO_OUT)/field --set machines=xeon-gold-5218-2s --set seeds=1
	@sed -n '/^## Who wins where/,$$p' $(DEMO_OUT)/field/field.md
	@echo "== The papers' claims re-run in the simulator (report, claims.json, figures)"
	$(BIN) reproduce --quick --out $(DEMO_OUT)/reproduce
	@echo "== A parameter study: S_move's delay from 10 to 200 us against the fair class (one seed), and its plot"
	$(BIN) sweep workloads/sweeps/smove-delay.toml --out $(DEMO_OUT)/sweep --set seeds=1
	$(BIN) plot sweep $(DEMO_OUT)/sweep --x policy.delay_us --y makespan_ns --by governor -o $(DEMO_OUT)/sweep/makespan-by-delay.png
	@echo "== A real recording: perf sched record of make -j2, imported"
	$(BIN) trace import --from perf-script fixtures/perf-make-j2.txt.zst -o $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) trace info $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) trace dump $(DEMO_OUT)/perf-make-j2.wct --to 2ms | head -20
	$(BIN) trace stats $(DEMO_OUT)/perf-make-j2.wct
	$(BIN) trace export $(DEMO_OUT)/perf-make-j2.wct --perfetto $(DEMO_OUT)/perf-make-j2.pftrace
	@echo "== Open $(DEMO_OUT)/perf-make-j2.pftrace in ui.perfetto.dev"

bench: build pgo
	@scripts/bench.sh
	@scripts/bench-view.sh
	@scripts/bench-sweep.sh
	@scripts/bench-sched.sh
	@scripts/bench-hunt.sh
	@scripts/bench-warm.sh

clean:
	$(CARGO) clean
	rm -rf out
