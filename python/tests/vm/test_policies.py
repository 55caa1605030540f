# SPDX-License-Identifier: GPL-2.0-only
"""Each policy under a 30 s mixed stress in the main boot (guest/main.sh).

Placement checks count the share of forks placed as the policy says. For
smove, whose 2 ms timer races with emulated forks and waits, and slocal,
whose queued children idle CPUs may pull, the bounds leave room below the
ranges measured over repeated boots (smove: child on the parent's CPU
79-93 %, busy parent's child elsewhere 65-100 %; slocal: 100 of 100 on a
quiet host, 82 with parent and child both there after the wait on one at
load 8 to 12), so that emulator noise does not fail the suite while a
policy that ignores the rule still does (the default policy puts about 1
in 4 on the parent's CPU); the placement decisions themselves are counted
exactly.
No check is timed: emulated time is too noisy. What emulation cannot show
reliably (S_move's timers firing, Nest keeping a fork/wait chain on two
cores, anything about frequency) is checked deterministically by the
simulator running this same program (crates/sim/tests/scx.rs), and only
reported here."""

import re

import pytest

from .conftest import POLICIES, check_stress, ejections, report


@pytest.fixture(params=POLICIES)
def p(request):
    return request.param


def test_the_guest_script_ran_to_the_end(main_vm):
    assert "DONE" in main_vm.lines, f"the guest stopped early (status {main_vm.rc}): see {main_vm}"


def test_enabled_with_warmcore(main_vm, p):
    st = main_vm.get("STATE", p) or ""
    assert st.startswith("enabled warmcore"), f"{p}: sched_ext enabled with warmcore ({st!r})"


def test_still_enabled_after_the_stress(main_vm, p):
    assert main_vm.get("STATE_AFTER", p) == "enabled", f"{p}: {main_vm.get('STATE_AFTER', p)!r}"


def test_the_stress_and_the_pinned_cpuset_and_niced_tasks_beside_it_finished(main_vm, p):
    check_stress(main_vm, p)


def test_detached_on_sigint_with_status_0(main_vm, p):
    assert main_vm.get("SCHED_RC", p) == "0", f"{p}: {main_vm.get('SCHED_RC', p)} ({main_vm.all('ERR', p)})"


def test_disabled_after_the_scheduler_exits(main_vm, p):
    assert main_vm.get("STATE_END", p) == "disabled", f"{p}: {main_vm.get('STATE_END', p)!r}"


def test_stats_show_select_cpu_decisions(main_vm, p):
    f = main_vm.js("FINAL", p)
    assert f is not None and f["counts"]["select_cpu"] > 0, f"{p}: {f}"


# The instructions the kernel's verifier processed for each policy's
# programs (bpf_prog_info.verified_insns, in the statistics; what veristat
# counts), summed, as recorded on this VM's kernel (7.3.4, 4 CPUs,
# --freq-steer on): a change that grows a policy's total by more than a
# tenth fails here, so that the growth is seen and the record updated on
# purpose. The kernel refuses a program past 1,000,000; nest's select_cpu
# takes 140,362 of its 146,991, and warm's 12,509 of its 17,647 since a
# fork that finds no CPU idle looks for the least loaded one (8,033 of
# 13,171 before); 19,809 since the hand-off hint (select_cpu 12,987; the
# hint's test where running, stopping and tick set the target). Haiku's
# modes: 30,478 and 37,933 (enqueue 25,923 and 33,227) since a thread woken
# onto its own idle CPU is not kicked (27,429 and 35,223 before).
VERIFIED = {"default": 5492, "slocal": 5523, "smove": 7065, "nest": 146991,
            "haiku-low-latency": 30478, "haiku-power-saving": 37933, "warm": 19809}


def test_verifier_budget(main_vm, p):
    f = main_vm.js("FINAL", p)
    vi = (f or {}).get("verified_insns") or {}
    total = sum(vi.values())
    report(f"{p}: the verifier processed {total} instructions ({', '.join(f'{k} {v}' for k, v in sorted(vi.items()))})")
    if p not in VERIFIED:
        pytest.skip(f"{p}: no count recorded on this kernel yet: record the one reported above")
    assert 0 < total <= VERIFIED[p] * 1.1 and max(vi.values()) < 1_000_000, \
        f"{p}: verified instructions {total}, at most the {VERIFIED[p]} recorded plus a tenth"


def test_never_ejected(main_vm, p):
    # A run ejected while the whole guest stood still (its host ran no
    # vCPU) ran once more (guest/main.sh, run_policy): said here, checked
    # on the run that followed.
    if retry := main_vm.get("RETRY", p):
        report(f"{p}: ejected while the guest stood still ({retry}), so run once more")
    errs = ejections(main_vm.all("ERR", p))
    assert not errs, f"{p}: {errs}; the guest stood still for at most {main_vm.get('STILL', p)}"


def test_slocal_places_every_fork_on_the_parents_cpu_and_the_children_start_there(main_vm):
    fc, sb, sf = main_vm.js("FORKCPU", "slocal"), main_vm.js("STATS_BEFORE", "slocal"), main_vm.js("STATS_FORK", "slocal")
    # The decision, whatever the host's load: each fork (and each parent's
    # wake-up by its child's exit) is placed on the waker's CPU.
    placed = sf and sb and sf["counts"]["waker_placed"] - sb["counts"]["waker_placed"]
    assert fc is not None and placed is not None and placed >= fc["n"], \
        f"{placed} placed on the waker's CPU for {fc and fc['n']} forks"
    # Where the children start: an idle CPU woken for other work pulls a
    # child still queued on the parent's CPU (the base's pulling, as the
    # kernel's idle balancing would), the more often the slower the guest.
    assert fc["child_on_parent_cpu"] >= 0.6 * fc["n"], fc


def test_slocal_stats_count_waker_placements(main_vm):
    f = main_vm.js("FINAL", "slocal")
    assert f is not None and f["counts"]["waker_placed"] > 0, f


def test_smove_a_child_whose_parent_waits_runs_on_the_parents_cpu(main_vm):
    fw = main_vm.js("FORKWAIT", "smove")
    assert fw is not None and fw["child_on_parent_cpu"] >= 0.6 * fw["n"], fw


def test_smove_and_its_timer_is_cancelled(main_vm):
    fw, sb, sw = main_vm.js("FORKWAIT", "smove"), main_vm.js("STATS_BEFORE", "smove"), main_vm.js("STATS_WAIT", "smove")
    canc = sw and sb and sw["counts"]["timers_cancelled"] - sb["counts"]["timers_cancelled"]
    assert fw is not None and canc is not None and canc >= 0.6 * fw["n"], \
        f"{canc} cancelled for {fw and fw['n']} forks"


def test_smove_a_child_whose_parent_keeps_running_runs_on_another_cpu(main_vm):
    fb, fd, f = main_vm.js("FORKBUSY", "smove"), main_vm.js("FORKBUSY", "default"), main_vm.js("FINAL", "smove")
    report(f"smove: fork-to-start median {fb and fb['median_start_ns']} ns with D = 2 ms; "
           f"default policy {fd and fd['median_start_ns']} ns (no timed assertion: emulated time)")
    # Idle CPUs may pull a child before its 2 ms timer expires (each pull
    # cancels the timer), so how many fire here depends on the host.
    report(f"smove: {f and f['counts']['timers_fired']} timers fired for {fb and fb['n']} busy forks "
           "(checked in the simulator: scx_smove_moves_the_child_d_after_the_fork...)")
    assert fb is not None and fb["other_cpu"] >= 0.5 * fb["n"], fb


def test_nest_the_primary_nest_grows_to_4_cpus(main_vm):
    cn, cd = main_vm.js("CHAIN", "nest"), main_vm.js("CHAIN", "default")
    # Right after the stress, short kernel tasks preempt links or take the
    # core a child is hinted to, so the CPUs a chain uses here depend on
    # the host.
    report(f"nest: a fork/wait chain used {cn and cn['cpus_used']} CPUs, the default policy "
           f"{cd and cd['cpus_used']} (checked in the simulator: scx_nest_keeps_a_fork_wait_chain_on_two_cpus)")
    sm = main_vm.js("STATS_MID", "nest")
    assert sm is not None and sm["nest_primary_max"] >= 4, sm and sm["nest_primary_max"]


def test_nest_no_cpu_idle_while_a_hog_waits(main_vm):
    # Four hogs on four CPUs. A CPU left idle while a hog waits puts two
    # hogs on one CPU, each with about half the CPU time of the others:
    # each hog's share of the largest is what the emulator's speed does not
    # change. The share of the run's wall time does change with it (under
    # single-threaded TCG, guest wall time passes with no vCPU running when
    # the host is busy, and the default policy's run comes minutes apart),
    # so it is only held loosely to the default policy's in the same boot:
    # it catches hogs packed fairly onto fewer CPUs.
    h, hd = main_vm.js("HOGS", "nest"), main_vm.js("HOGS", "default")
    share = lambda x: x["cpu_s"] / x["wall_s"] if x and x.get("wall_s") else 0.0
    per = (h or {}).get("per_task_cpu_s") or [0.0]
    report(f"nest: hogs' CPU s {[round(c, 2) for c in per]}, CPU time / wall {round(share(h), 2)} "
           f"(default policy {round(share(hd), 2)})")
    assert len(per) == 4 and min(per) >= 0.75 * max(per), f"hogs' CPU s {per}"
    assert h is not None and hd is not None and share(h) >= 0.75 * share(hd), \
        f"CPU time / wall = {round(share(h), 2)} of 4; default policy {round(share(hd), 2)}"


@pytest.mark.parametrize("p", ["haiku-low-latency", "haiku-power-saving"])
def test_haiku_the_quantum_timer_ends_running_threads_quanta(main_vm, p):
    f = main_vm.js("FINAL", p)
    c = f and f["counts"]
    # Which core a wake-up chooses depends on the emulator's timing; the
    # modes' rules are checked in the simulator (crates/sim/tests/scx.rs,
    # scx_haiku_*).
    report(f"{p}: wake-ups cache-warm {c and c['haiku_warm']}, cold {c and c['haiku_cold']}, "
           f"moved {c and c['haiku_moved']}, preemptions {c and c['haiku_preempt']}, "
           f"on the small task core {c and c['haiku_small_core']}")
    # The quantum timer is armed in ops.running: under the stress's hogs it
    # must end quanta before the tick would, on any host.
    assert c is not None and c["haiku_timer"] > 0 and c["haiku_quantum_end"] > 0, \
        f"{c and c['haiku_timer']} by the timer, {c and c['haiku_quantum_end']} quanta used up"


@pytest.mark.parametrize("p", ["haiku-low-latency", "haiku-power-saving"])
def test_haiku_pinned_threads_go_to_their_cpus_queue(main_vm, p):
    f = main_vm.js("FINAL", p)
    c = f and f["counts"]
    assert c is not None and c["haiku_pinned"] > 0, c and c["haiku_pinned"]


def test_nest_profile_counts_select_cpu_calls(main_vm):
    prof = main_vm.js("PROF")
    assert main_vm.get("PROF_RC") == "0" and prof is not None \
        and prof.get("profile", {}).get("select_cpu", {}).get("calls", 0) > 0, \
        f"{main_vm.get('PROF_RC')}: {prof and prof.get('profile')} ({main_vm.all('PROF_ERR')})"


def test_the_watchdog_never_fired_and_the_kernel_reported_no_scheduler_error(main_vm):
    # Except in a run ejected while the guest stood still, which ran once
    # more (test_never_ejected): its span of uptime is on its RETRY line.
    spans = [tuple(map(float, r.split()[1:3])) for r in main_vm.all("RETRY")]
    def repeated(line):
        m = re.match(r"\[\s*([0-9.]+)\]", line)
        return m is not None and any(a <= float(m[1]) <= b for a, b in spans)
    kmsg = [l for l in main_vm.all("KMSG") if ("stall" in l or "error" in l.lower())]
    assert not [l for l in kmsg if not repeated(l)], kmsg
    if any(map(repeated, kmsg)):
        report(f"the kernel's lines of the runs that ran once more: {[l for l in kmsg if repeated(l)]}")


def test_warm_a_fork_wait_chain_and_no_cpu_idle_while_a_hog_waits(main_vm):
    cw, cd = main_vm.js("CHAIN", "warm"), main_vm.js("CHAIN", "default")
    report(f"warm: a fork/wait chain used {cw and cw['cpus_used']} CPUs, the default policy "
           f"{cd and cd['cpus_used']} (checked in the simulator: warm_keeps_a_fork_wait_chain_on_two_cpus)")
    f = main_vm.js("FINAL", "warm")
    assert f is not None and f["counts"]["warm_joined"] > 0, f and f["counts"]
    # As for nest: the share of the hogs' CPU time, beside the default's.
    h, hd = main_vm.js("HOGS", "warm"), main_vm.js("HOGS", "default")
    share = lambda x: x["cpu_s"] / x["wall_s"] if x and x.get("wall_s") else 0.0
    assert h is not None and hd is not None and share(h) >= 0.9 * share(hd), \
        f"CPU time / wall = {round(share(h), 2)} of 4; default policy {round(share(hd), 2)}"
