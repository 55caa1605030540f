// SPDX-License-Identifier: GPL-2.0-only
//! CPU hotplug (the workload steps cpu_offline and cpu_online) in the
//! fair-class models and the sched_ext host, against kernel/sched/core.c
//! (sched_cpu_deactivate, balance_push, select_fallback_rq) and
//! kernel/sched/ext.c (handle_hotplug: the scheduler's exit with
//! SCX_ECODE_ACT_RESTART | SCX_ECODE_RSN_HOTPLUG, and its reload).

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::policies::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::simulate;

const CPU: u32 = 3;

/// One task per CPU computing 60 ms, and a controller that takes CPU 3
/// offline at 10 ms and back at 40 ms; `extra` steps for the tasks first.
fn offline_window(m: &Machine, extra: Vec<Step>) -> Workload {
    let mut w = Workload::new("hotplug");
    w.cpusets = 1;
    let mut steps = extra;
    steps.extend([Step::Compute(Amount::work_us(60_000.0, 0.0)), Step::Exit]);
    let busy = w.add("busy", steps);
    let ctl = w.add(
        "ctl",
        vec![
            Step::Sleep(Amount::fixed(10e6)),
            Step::CpuOnline(CPU, false),
            Step::Sleep(Amount::fixed(30e6)),
            Step::CpuOnline(CPU, true),
            Step::Exit,
        ],
    );
    for i in 0..m.nr_cpus {
        w.initial.push((busy, format!("busy{i}"), None));
    }
    w.initial.push((ctl, "ctl".into(), Some(0)));
    w
}

/// When the controller took the CPU offline and brought it back: the
/// first task moved off the CPU after the controller's switch-in that
/// runs the step (balance_push moves the running task at once), and its
/// switch-in for the second step (before it runs).
fn window(evs: &[(u32, Event)]) -> (u64, u64) {
    let ctl = last_pid(evs);
    let ins: Vec<u64> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == ctl).map(|(_, e)| e.ts).collect();
    let moved = evs.iter().find(|(_, e)| e.id == ids::MIGRATE && e.a() == CPU && e.ts >= ins[1]);
    let off = moved.expect("a task moved off the CPU going offline").1.ts;
    assert!(off - ins[1] < 100_000, "the move at {off} ns is not the step's at {} ns", ins[1]);
    (off, ins[2])
}

/// The pid of the last initial task (the controller).
fn last_pid(evs: &[(u32, Event)]) -> u32 {
    evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| e.pid).max().unwrap()
}

/// The tasks switched in on `cpu` within `from..to`.
fn switch_ins(evs: &[(u32, Event)], cpu: u32, from: u64, to: u64) -> usize {
    evs.iter().filter(|(c, e)| *c == cpu && e.id == ids::CTX_SWITCH && e.a() != 0 && (from..to).contains(&e.ts)).count()
}

const POLICIES: &[&str] = &["cfs", "eevdf", "scx:default"];

#[test]
fn an_offline_cpu_runs_nothing_its_tasks_move_and_it_is_used_again_when_back() {
    for &policy in POLICIES {
        let m = common::quiet("default");
        let (out, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, vec![]));
        let (off, on) = window(&evs);
        assert!(on > off, "{policy}");
        assert_eq!(switch_ins(&evs, CPU, off + 1, on), 0, "{policy}: CPU {CPU} ran a task while offline");
        // Offline, it idles in its deepest state.
        let deepest = m.spec.idle.len() as u32 - 1;
        let idle = evs.iter().filter(|(c, e)| *c == CPU && e.id == ids::IDLE_ENTER && (off..on).contains(&e.ts)).last();
        assert_eq!(idle.map(|(_, e)| e.a()), Some(deepest), "{policy}");
        assert!(switch_ins(&evs, CPU, on, u64::MAX) > 0, "{policy}: CPU {CPU} unused once back");
        if policy.starts_with("scx:") {
            // warmcore's program has no ops.cpu_offline or ops.cpu_online:
            // the kernel exits it twice, and the host loads it again.
            assert_eq!(common::stat(&out, "hotplug_restarts"), 2, "{policy}");
        }
    }
}

#[test]
fn a_task_whose_cpus_are_all_offline_falls_back_to_its_cpuset_then_to_any_cpu() {
    for &policy in POLICIES {
        let m = common::quiet("default");
        // select_fallback_rq: the cpuset's CPUs first (cpuset_cpus_allowed_fallback).
        let pinned = vec![Step::CpusetCpus(0, [2u32, 3].into()), Step::JoinCpuset(0), Step::Affinity([CPU].into(), false)];
        let (_, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, pinned));
        let (off, on) = window(&evs);
        let member = evs.iter().find(|(_, e)| e.id == ids::WAKEUP_NEW).unwrap().1.pid;
        let after: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == member && e.ts > off && e.ts < on).map(|x| x.0).collect();
        assert!(!after.is_empty() && after.iter().all(|&c| c == 2), "{policy}: {after:?}");
        // Then every CPU, and it stays so (no longer affine) after CPU 3
        // is back: the tasks all pinned to it spread and stay spread.
        let alone = vec![Step::Affinity([CPU].into(), false)];
        let (_, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, alone));
        let (off, on) = window(&evs);
        let ctl = last_pid(&evs);
        let cpus = |from: u64, to: u64| -> std::collections::BTreeSet<u32> {
            let ins = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0 && e.a() != ctl && (from..to).contains(&e.ts));
            ins.map(|x| x.0).collect()
        };
        let during = cpus(off + 1, on);
        assert!(during.len() > 1 && !during.contains(&CPU), "{policy}: {during:?}");
        assert!(cpus(on, u64::MAX).len() > 1, "{policy}: {:?}", cpus(on, u64::MAX));
    }
}

/// The error of a run of `w` on `machine` under cfs.
fn run_error(machine: &str, w: Workload) -> String {
    let m = common::quiet(machine);
    let p = make_policy("cfs", &m).unwrap();
    let mut e = Engine::new(m, Governor::Powersave, p, w, 1, Box::new(warmcore_sim::engine::CountSink::default())).unwrap();
    let r: Result<Outcome, _> = e.run(Limits::default());
    r.err().map(|e| e.to_string()).unwrap_or_default()
}

#[test]
fn the_last_online_cpu_and_a_cpu_the_machine_lacks_are_refused() {
    let one = |steps: Vec<Step>| {
        let mut w = Workload::new("refuse");
        let p = w.add("p", steps.into_iter().chain([Step::Exit]).collect());
        w.initial.push((p, "p".into(), None));
        w
    };
    // core2duo-e8400 has CPUs 0 and 1.
    let e = run_error("core2duo-e8400", one(vec![Step::CpuOnline(1, false), Step::CpuOnline(0, false)]));
    assert!(e.contains("cpu_offline = 0") && e.contains("last online CPU") && e.contains("EBUSY"), "{e}");
    let e = run_error("core2duo-e8400", one(vec![Step::CpuOnline(2, false)]));
    assert!(e.contains("cpu_offline = 2") && e.contains("CPUs 0 to 1"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    // Taking an offline CPU down again, or one that is online up, changes nothing.
    let e = run_error("core2duo-e8400", one(vec![Step::CpuOnline(1, false), Step::CpuOnline(1, false), Step::CpuOnline(0, true)]));
    assert_eq!(e, "");
}

/// A test scheduler of tests/fixtures (bpf:DIR).
fn fixture(name: &str) -> String {
    format!("bpf:{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_online_cpumask_a_program_gets_follows_hotplug() {
    // ext.c, scx_bpf_get_online_cpumask: cpu_online_mask, and
    // scx_bpf_get_possible_cpumask: cpu_possible_mask, every CPU. A CPU
    // going down leaves cpu_online_mask after ops.cpu_offline (called from
    // sched_cpu_deactivate, before takedown_cpu's set_cpu_online); one
    // coming up enters it before ops.cpu_online (sched_cpu_activate). The
    // fixture keeps the weights it saw at ops.init and ops.running.
    let m = common::quiet("default");
    let n = m.nr_cpus as u64;
    let (out, _) = simulate(&m, Governor::Powersave, &fixture("online-mask"), offline_window(&m, vec![]));
    let s = |k: &str| common::stat(&out, k);
    assert_eq!((s("init_online"), s("init_possible")), (n, n));
    assert_eq!((s("min_online"), s("max_online")), (n - 1, n));
    assert_eq!((s("nr_cpu_offline"), s("offline_was_online")), (1, 1));
    assert_eq!((s("nr_cpu_online"), s("online_was_online")), (1, 1));
    // Without the operations the kernel exits the scheduler and its loader
    // loads it again once the CPU is down: the new copy sees it offline
    // from ops.init on, and every CPU as possible.
    let mut w = offline_window(&m, vec![]);
    let ctl = w.initial.last().unwrap().0;
    w.programs[ctl as usize].steps.truncate(2);
    w.programs[ctl as usize].steps.push(Step::Exit);
    let (out, _) = simulate(&m, Governor::Powersave, &fixture("online-mask-reload"), w);
    let s = |k: &str| common::stat(&out, k);
    assert_eq!((s("init_online"), s("init_possible")), (n - 1, n));
    assert_eq!((s("min_online"), s("max_online")), (n - 1, n - 1));
    assert_eq!(s("nr_cpu_offline"), 0);
}

#[test]
fn a_cpusets_effective_cpus_follow_hotplug() {
    // kernel/cgroup/cpuset.c, cpuset_handle_hotplug and
    // hotplug_update_tasks (cgroup v2): a cpuset's effective_cpus are its
    // CPUs that are online, its members' masks follow them, and the CPUs
    // come back with the CPU; a cpuset none of whose CPUs is online takes
    // its parent's, the root's every online CPU, until one is back.
    for &policy in POLICIES {
        let m = common::quiet("default");
        let member_cpus = |evs: &[(u32, Event)], from: u64, to: u64| -> std::collections::BTreeSet<u32> {
            let ctl = last_pid(evs);
            let ins = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0 && e.a() != ctl && e.ts > from && e.ts < to);
            ins.map(|x| x.0).collect()
        };
        // CPUs 2 and 3: CPU 2 alone while 3 is down, both again after.
        let two = vec![Step::CpusetCpus(0, [2u32, CPU].into()), Step::JoinCpuset(0)];
        let (_, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, two));
        let (off, on) = window(&evs);
        assert_eq!(member_cpus(&evs, off, on), [2].into(), "{policy}");
        assert_eq!(member_cpus(&evs, on, u64::MAX), [2, CPU].into(), "{policy}");
        // CPU 3 alone: every online CPU while it is down, CPU 3 alone again
        // after (the select_fallback_rq path would have left them every CPU).
        let one = vec![Step::CpusetCpus(0, [CPU].into()), Step::JoinCpuset(0)];
        let (_, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, one));
        let (off, on) = window(&evs);
        let during = member_cpus(&evs, off, on);
        assert!(during.len() > 1 && !during.contains(&CPU), "{policy}: {during:?}");
        assert_eq!(member_cpus(&evs, on, u64::MAX), [CPU].into(), "{policy}");
    }
}

#[test]
fn haikus_models_never_run_a_task_on_an_offline_cpu_or_outside_its_cpus() {
    // The run ends with the affinity error if either happens (engine,
    // is_cpu_allowed); simulate() asserts that it ran to its end.
    for policy in ["haiku-low-latency", "haiku-power-saving", "haiku-old"] {
        let m = common::quiet("default");
        let (_, evs) = simulate(&m, Governor::Powersave, policy, offline_window(&m, vec![]));
        // The controller's switch-ins that run its two steps (a Haiku model
        // may have left CPU 3 idle, so no task need move off it).
        let ctl = last_pid(&evs);
        let ins: Vec<u64> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == ctl).map(|(_, e)| e.ts).collect();
        let (off, on) = (ins[1], ins[2]);
        assert_eq!(switch_ins(&evs, CPU, off + 1, on), 0, "{policy}: CPU {CPU} ran a task while offline");
        let pinned = vec![Step::CpusetCpus(0, [2u32, CPU].into()), Step::JoinCpuset(0), Step::Affinity([CPU].into(), false)];
        simulate(&m, Governor::Powersave, policy, offline_window(&m, pinned));
        simulate(&m, Governor::Powersave, policy, offline_window(&m, vec![Step::Affinity([CPU].into(), false)]));
    }
}

#[test]
fn an_affinity_of_offline_cpus_only_is_refused() {
    // core.c, __set_cpus_allowed_ptr_locked: a mask with no CPU of
    // cpu_valid_mask (the active CPUs) is EINVAL and nothing changes. The
    // hunt's reproducer: CPU 0 goes offline, then a parent allows its
    // child CPU 0 alone; the change was taken and the child ran on CPU 1.
    let w = warmcore_sim::wfile::parse(include_str!("fixtures/hunt-offline-mask.toml"), "hunt-offline-mask.toml").unwrap();
    let m = Machine::from_toml(include_str!("fixtures/hunt-offline-mask-machine.toml"), "hunt-offline-mask-machine.toml").unwrap();
    for policy in ["eevdf", "cfs", "scx:default", "haiku-old", "haiku-low-latency"] {
        let failure = warmcore_sim::hunt::check(&m, policy, &w, 3_920_108_951_097_904_595).unwrap();
        assert!(failure.is_none(), "{policy}: {:?}", failure.map(|f| f.what));
    }
}
