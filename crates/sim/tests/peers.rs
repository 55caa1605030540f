// SPDX-License-Identifier: GPL-2.0-only
//! The scx project's schedulers (peers/Cargo.toml) run unmodified by the
//! simulator as `scx:bpfland`, `scx:flash`, `scx:cosmos`, with their
//! loaders as recipes (peers/NAME.toml); and each piece of the host layer
//! they need, shown by a variant of a peer's source that fails without it.

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::scx::{build_variant, peers, ScxPolicy, Source};
use warmcore_sim::workloads;
use warmcore_sim::{Governor, Machine};
use warmcore_trace::ids;

mod common;
use common::{of, simulate, Collect};

fn wl(spec: &str, m: &Machine) -> Workload {
    let (name, params) = warmcore_sim::parse_spec(spec);
    workloads::build(name, &params, m).unwrap()
}

/// The peers that were built (their sources fetched): all of them, or the
/// test says how to fetch them.
fn built() -> Vec<&'static str> {
    let missing: Vec<&str> = peers::PEERS.iter().filter(|p| p.so.is_none()).map(|p| p.name).collect();
    assert!(missing.is_empty(), "peers {missing:?} were not built: run `cargo fetch --manifest-path peers/Cargo.toml` and build again");
    assert!(peers::PEERS.len() >= 3, "peers/Cargo.toml names bpfland, flash and cosmos");
    peers::PEERS.iter().map(|p| p.name).collect()
}

/// The wake-up storm's shape (1000 tasks of 100 us run and 100 us sleep),
/// shorter than the benchmark's 3 s. 50 ms holds every phase of a longer
/// one: all 1000 tasks wake within the first period, the E7's 160 CPUs
/// are overloaded about threefold (each peer's run lasts 170 to 190 ms),
/// then the queues drain; a longer storm only holds the overload longer
/// (150 ms: 410 to 490 ms, about the same events per millisecond and the
/// same share of migrations), at three times the cost.
const STORM: &str = "periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=50";

#[test]
fn every_peer_runs_configure_hackbench_and_the_storm_on_the_e7_deterministically() {
    let m = common::quiet("xeon-e7-8870v4");
    for peer in built() {
        let policy = format!("scx:{peer}");
        for spec in ["configure", "hackbench", STORM] {
            let (out, a) = simulate(&m, Governor::Powersave, &policy, wl(spec, &m));
            assert!(!out.ejected, "{policy} {spec}: {:?}", out.partial);
            assert!(!a.is_empty());
            let (_, b) = simulate(&m, Governor::Powersave, &policy, wl(spec, &m));
            assert!(a == b, "{policy} {spec}: same inputs, same events");
        }
    }
}

fn ctx_switches(m: &Machine, policy: &str) -> usize {
    // 20 CPU-bound tasks on 16 CPUs: they share the CPUs slice by slice.
    let w = wl("periodic:tasks=20,run_us=1000000,sleep_us=10,duration_ms=600", m);
    let (out, evs) = simulate(m, Governor::Performance, policy, w);
    assert!(!out.ejected, "{policy}: {:?}", out.partial);
    of(&evs, ids::CTX_SWITCH).iter().filter(|(_, e)| e.pid != 0 && e.a() != 0).count()
}

#[test]
fn a_shorter_slice_gives_more_context_switches() {
    let m = common::quiet("default");
    for peer in built() {
        let long = ctx_switches(&m, &format!("scx:{peer}:slice_us=80000"));
        let short = ctx_switches(&m, &format!("scx:{peer}:slice_us=8000"));
        assert!(short > 3 * long, "scx:{peer}: {short} switches with 8 ms slices, {long} with 80 ms");
    }
}

#[test]
fn the_options_are_the_loaders_long_options_with_its_defaults() {
    let m = common::quiet("xeon-e7-8870v4");
    // bpfland's loader sets slice_max from --slice-us, and local_pcpu,
    // local_kthreads and sticky_tasks false though the BPF file has them
    // true.
    let p = ScxPolicy::new(&m, "bpfland", &[]).unwrap();
    assert_eq!(p.global("slice_max", 0), Some(1_000_000));
    for g in ["local_pcpu", "local_kthreads", "sticky_tasks"] {
        assert_eq!(p.global(g, 0), Some(0), "{g}");
    }
    assert_eq!(p.global("numa_enabled", 0), Some(1));
    let p = ScxPolicy::new(&m, "bpfland", &[("slice_us".into(), "5000".into()), ("sticky_tasks".into(), "on".into())]).unwrap();
    assert_eq!(p.global("slice_max", 0), Some(5_000_000));
    assert_eq!(p.global("sticky_tasks", 0), Some(1));
    let p = ScxPolicy::new(&m, "flash", &[]).unwrap();
    assert_eq!(p.global("slice_max", 0), Some(700_000));
    assert_eq!(p.global("slice_lag", 0), Some(20_000_000));
    let p = ScxPolicy::new(&m, "cosmos", &[]).unwrap();
    assert_eq!(p.global("cpufreq_enabled", 0), Some(1));
    assert_eq!(p.global("nr_node_ids", 0), Some(4));
    assert_eq!(p.global("gpu_enabled", 0), Some(0));
    let err = |s: &str| make_policy(s, &m).err().map(|e| e.to_string()).unwrap_or_default();
    let e = err("scx:bpfland:slice=5");
    assert!(e.starts_with("scx:bpfland has no option 'slice'; valid: slice_us, ") && !e.contains('\n'), "{e}");
    assert_eq!(err("scx:bpfland:slice_us=-5"), "scx:bpfland: slice_us=-5: expected a whole number from 0 to 18446744073709551615");
    assert!(err("scx:cosmos:perf_config=cache-misses").contains("models no PMU"));
    let e = err("scx:nope");
    assert!(e.contains("scx:default") && e.contains("scx:bpfland, scx:cosmos, scx:flash"), "{e}");
}

#[test]
fn flash_limits_the_idle_states_through_pm_qos() {
    // scx_flash's loader writes pm_qos_resume_latency_us = 32 on every CPU:
    // the E7's C3 (40 us) and C6 (133 us) are then out of reach.
    let m = common::quiet("xeon-e7-8870v4");
    let deepest = |policy: &str| {
        let w = wl("periodic:tasks=4,run_us=100,sleep_us=20000,duration_ms=200", &m);
        let (_, evs) = simulate(&m, Governor::Powersave, policy, w);
        // (After the CPUs' first idle entry, when the run starts, before the
        // scheduler is loaded.)
        of(&evs, ids::IDLE_ENTER).iter().skip(m.nr_cpus as usize).map(|(_, e)| e.a()).max().unwrap()
    };
    assert!(deepest("scx:bpfland") >= 2, "bpfland sets no PM QoS: deep states");
    assert!(deepest("scx:flash") <= 1, "C1 and C1E only");
    assert!(deepest("scx:flash:idle_resume_us=-1") >= 2);
}

/// A run of a variant of a peer, with globals of the variant reported.
fn run_variant(m: &Machine, peer: &str, source: &Source, w: Workload, report: &[&str]) -> Outcome {
    let so = build_variant(source).unwrap_or_else(|e| panic!("{e}"));
    let mut p = ScxPolicy::with_program(m, peer, &[], Some(&so)).unwrap_or_else(|e| panic!("{e}"));
    p.report(report);
    let c = Collect::default();
    let mut e = Engine::new(m.clone(), Governor::Powersave, Box::new(p), w, 1, Box::new(c)).unwrap();
    e.check_invariants = true;
    e.run(Limits::default()).unwrap()
}

fn stat(out: &Outcome, k: &str) -> u64 {
    out.policy_stats[k].as_u64().unwrap_or_else(|| panic!("no {k} in {}", out.policy_stats))
}

fn bpfland() -> Source {
    built();
    Source::peer("bpfland").unwrap()
}

const INIT: &str = "s32 BPF_STRUCT_OPS_SLEEPABLE(bpfland_init)\n{\n";

#[test]
fn enum_values_are_the_kernels_and_selected_wakeups_say_so() {
    let m = common::quiet("xeon-e7-8870v4");
    // __COMPAT_is_enq_cpu_selected reads SCX_ENQ_CPU_SELECTED's value with
    // bpf_core_enum_value: it must not be SCX_ENQ_WAKEUP's bit.
    let v = bpfland().replace(
        INIT,
        &format!(
            "SEC(\"syscall\") int test_enum(void *ctx)\n{{\n\treturn __COMPAT_is_enq_cpu_selected(SCX_ENQ_CPU_SELECTED) && !__COMPAT_is_enq_cpu_selected(SCX_ENQ_WAKEUP);\n}}\n\n{INIT}"
        ),
    );
    let so = build_variant(&v).unwrap();
    let mut p = ScxPolicy::with_program(&m, "bpfland", &[], Some(&so)).unwrap();
    assert_eq!(p.run_syscall("test_enum", &[]), Ok(1));

    // Wake-ups that ops.select_cpu did not dispatch reach ops.enqueue with
    // SCX_ENQ_CPU_SELECTED; forks do not (wake_up_new_task).
    let enqueue = "void BPF_STRUCT_OPS(bpfland_enqueue, struct task_struct *p, u64 enq_flags)\n{\n";
    let select = "\ts32 cpu, this_cpu = bpf_get_smp_processor_id();\n";
    let v = bpfland()
        .replace(
            enqueue,
            &format!("volatile u64 test_selected, test_wakeups, test_enqueues;\n{enqueue}\ttest_enqueues++;\n\tif (__COMPAT_is_enq_cpu_selected(enq_flags))\n\t\ttest_selected++;\n\tif (enq_flags & SCX_ENQ_WAKEUP)\n\t\ttest_wakeups++;\n"),
        )
        .replace(select, &format!("{select}\tif (prev_cpu >= 0)\n\t\treturn prev_cpu;\n"));
    let out = run_variant(&m, "bpfland", &v, wl("hackbench:groups=2,loops=20", &m), &["test_selected", "test_wakeups", "test_enqueues"]);
    assert!(!out.ejected, "{:?}", out.partial);
    assert!(stat(&out, "test_wakeups") > 100);
    assert_eq!(stat(&out, "test_selected"), stat(&out, "test_wakeups"));
    assert!(stat(&out, "test_enqueues") > stat(&out, "test_wakeups"), "forks and preemptions are not selected");
}

#[test]
fn per_cpu_kernel_variables_and_per_cpu_maps_follow_the_topology() {
    let m = common::quiet("xeon-e7-8870v4");
    // cpu_llc_id() and cpu_llc_size() (scx's percpu.bpf.h) read sd_llc_id
    // and sd_llc_size with bpf_per_cpu_ptr: the first CPU of the CPU's LLC
    // (a socket of the E7: CPUs 20s..20s+19 and their siblings 80 up) and
    // its 40 CPUs.
    let v = bpfland().replace(
        INIT,
        &format!("SEC(\"syscall\") int test_llc(struct cpu_arg *a)\n{{\n\treturn cpu_llc_id(a->cpu_id) * 1000 + cpu_llc_size(a->cpu_id);\n}}\n\n{INIT}"),
    );
    let so = build_variant(&v).unwrap();
    let mut p = ScxPolicy::with_program(&m, "bpfland", &[], Some(&so)).unwrap();
    for (cpu, llc) in [(0, 0), (19, 0), (85, 0), (20, 20), (101, 20), (79, 60), (159, 60)] {
        assert_eq!(p.run_syscall("test_llc", &[("cpu_id", cpu)]), Ok(llc * 1000 + 40), "CPU {cpu}");
    }
    // bpfland's per-CPU context (bpf_map_lookup_percpu_elem) holds each
    // CPU's SMT sibling, which its loader's enable_sibling_cpu wrote: at
    // ops.init every CPU's sibling's sibling is itself.
    let v = bpfland().replace(
        INIT,
        &format!("{INIT}\t{{\n\t\ts32 c;\n\t\tbpf_for(c, 0, scx_bpf_nr_cpu_ids()) {{\n\t\t\tif (smt_sibling(c) == c || smt_sibling(smt_sibling(c)) != c)\n\t\t\t\tscx_bpf_error(\"CPU %d: sibling %d\", c, smt_sibling(c));\n\t\t}}\n\t}}\n"),
    );
    let out = run_variant(&m, "bpfland", &v, wl("configure:checks=5", &m), &[]);
    assert!(!out.ejected, "{:?}", out.partial);
}

#[test]
fn runnable_and_quiescent_wrap_enqueue_running_and_stopping_as_in_the_kernel() {
    // Each task's state by the callbacks (ext.c, enqueue_task_scx,
    // set_next_task_scx, put_prev_task_scx, dequeue_task_scx): quiescent
    // (0) -runnable-> runnable (1) -running-> running (2); stopping gives 1
    // back if still runnable, else 3, and only then quiescent gives 0;
    // ops.enqueue only while runnable and not running.
    let m = common::quiet("xeon-e7-8870v4");
    let mut v = bpfland();
    let check = |from: &str, to: &str, what: &str| {
        format!("\ttest_step(p, {from}, {to}, \"{what}\");\n")
    };
    let helper = "struct {\n\t__uint(type, BPF_MAP_TYPE_TASK_STORAGE);\n\t__uint(map_flags, BPF_F_NO_PREALLOC);\n\t__type(key, int);\n\t__type(value, u32);\n} test_state SEC(\".maps\");\n\
volatile u64 test_runnable, test_quiescent;\n\
static void test_step(struct task_struct *p, u32 from, u32 to, const char *what)\n{\n\
\tu32 *s = bpf_task_storage_get(&test_state, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);\n\
\tif (!s)\n\t\treturn;\n\
\tif (*s != from && from != 9)\n\t\tscx_bpf_error(\"%s of pid %d in state %u\", what, p->pid, *s);\n\
\tif (to != 9)\n\t\t*s = to;\n}\n\n";
    for (hook, body) in [
        ("void BPF_STRUCT_OPS(bpfland_runnable, struct task_struct *p, u64 enq_flags)\n{\n", format!("\ttest_runnable++;\n{}", check("0", "1", "runnable"))),
        ("void BPF_STRUCT_OPS(bpfland_enqueue, struct task_struct *p, u64 enq_flags)\n{\n", check("1", "9", "enqueue")),
        ("void BPF_STRUCT_OPS(bpfland_running, struct task_struct *p)\n{\n", check("1", "2", "running")),
        ("void BPF_STRUCT_OPS(bpfland_stopping, struct task_struct *p, bool runnable)\n{\n", check("2", "runnable ? 1 : 3", "stopping")),
    ] {
        v = v.replace(hook, &format!("{hook}{body}"));
    }
    let quiescent = format!(
        "void BPF_STRUCT_OPS(bpfland_quiescent, struct task_struct *p, u64 deq_flags)\n{{\n\ttest_quiescent++;\n\tif (!(deq_flags & SCX_DEQ_SLEEP))\n\t\tscx_bpf_error(\"quiescent without SLEEP\");\n{}}}\n\n",
        check("3", "0", "quiescent")
    );
    v = v.replace("void BPF_STRUCT_OPS(bpfland_enable, struct task_struct *p)\n", &format!("{quiescent}void BPF_STRUCT_OPS(bpfland_enable, struct task_struct *p)\n"));
    v = v.replace("\t       .runnable\t\t= (void *)bpfland_runnable,\n", "\t       .runnable\t\t= (void *)bpfland_runnable,\n\t       .quiescent\t\t= (void *)bpfland_quiescent,\n");
    v = v.replace("static u64 vtime_now;\n", &format!("static u64 vtime_now;\n\n{helper}"));
    for spec in ["configure:checks=20", "hackbench:groups=2,loops=20", STORM] {
        let out = run_variant(&m, "bpfland", &v, wl(spec, &m), &["test_runnable", "test_quiescent"]);
        assert!(!out.ejected, "{spec}: {:?}", out.partial);
        assert!(stat(&out, "test_runnable") > 50 && stat(&out, "test_quiescent") > 50, "{spec}: {}", out.policy_stats);
    }
}

#[test]
fn division_by_zero_is_bpfs_not_a_signal() {
    // The BPF ISA: x / 0 = 0, x % 0 = x (and the smallest signed value
    // divided by -1 is itself, its remainder 0); bpfland's update_freq()
    // divides by an interval.
    let m = common::quiet("default");
    let v = bpfland().replace(
        INIT,
        &format!(
            "volatile u64 test_zero;\nvolatile s64 test_minus_one = -1;\nvolatile u64 test_div, test_mod, test_freq, test_sdiv, test_smod;\n{INIT}\
\ttest_div = 100 / test_zero;\n\ttest_mod = 7 % test_zero;\n\ttest_freq = update_freq(8, test_zero);\n\
\ttest_sdiv = (u64)((s64)(-9223372036854775807LL - 1) / test_minus_one);\n\ttest_smod = (u64)((s64)(-9223372036854775807LL - 1) % test_minus_one);\n"
        ),
    );
    let out = run_variant(&m, "bpfland", &v, wl("configure:checks=2", &m), &["test_div", "test_mod", "test_freq", "test_sdiv", "test_smod"]);
    assert!(!out.ejected, "{:?}", out.partial);
    assert_eq!(stat(&out, "test_div"), 0);
    assert_eq!(stat(&out, "test_mod"), 7);
    assert_eq!(stat(&out, "test_freq"), 6, "calc_avg(8, 100 ms / 0)");
    assert_eq!(stat(&out, "test_sdiv"), 1 << 63);
    assert_eq!(stat(&out, "test_smod"), 0);
}

#[test]
fn a_kfunc_or_helper_the_host_lacks_is_named_at_load() {
    let m = common::quiet("default");
    let load = |decl: &str, call: &str| {
        let v = bpfland().replace(INIT, &format!("{decl}\n{INIT}{call}\n"));
        let so = build_variant(&v).unwrap_or_else(|e| panic!("{e}"));
        ScxPolicy::with_program(&m, "bpfland", &[], Some(&so)).err().map(|e| e.to_string())
    };
    // A kfunc declared without __weak: the kernel's loader cannot resolve it.
    let e = load("void scx_bpf_not_a_kfunc(void) __ksym;", "\tscx_bpf_not_a_kfunc();").unwrap();
    assert!(e.starts_with("scx:bpfland: the program needs the kernel symbol scx_bpf_not_a_kfunc") && !e.contains('\n'), "{e}");
    // A weak one called whatever bpf_ksym_exists says.
    let e = load("void scx_bpf_weak_absent(u32 x) __ksym __weak;", "\tscx_bpf_weak_absent(1);").unwrap();
    assert!(e.contains("the program calls the kfunc scx_bpf_weak_absent, which the simulator's host does not provide"), "{e}");
    // Behind bpf_ksym_exists, as the compat headers call kfuncs, it loads
    // (the verifier prunes the branch; so does the host build).
    assert_eq!(load("void scx_bpf_weak_absent(u32 x) __ksym __weak;", "\tif (bpf_ksym_exists(scx_bpf_weak_absent))\n\t\tscx_bpf_weak_absent(1);"), None);
    // A BPF helper the host does not provide.
    let e = load("", "\tbpf_get_stack(0, 0, 0, 0);").unwrap();
    assert!(e.contains("the program calls the BPF helper bpf_get_stack, which the simulator's host does not provide"), "{e}");
}

#[test]
fn recipe_errors_name_the_file_and_line() {
    let m = common::quiet("default");
    built();
    let recipe = peers::find("bpfland").unwrap().recipe;
    let with = |from: &str, to: &str| {
        assert_eq!(recipe.matches(from).count(), 1, "{from:?}: the recipe changed: update this test");
        let text = recipe.replace(from, to);
        let line = text[..text.find(to).unwrap()].matches('\n').count() + 1;
        let e = ScxPolicy::with_recipe(&m, "bpfland", &[], None, Some(("peers/bpfland.toml", &text))).err().unwrap().to_string();
        (e, line)
    };
    let (e, line) = with("slice_max = \"slice_us * 1000\"", "slice_maxx = \"slice_us * 1000\"");
    assert_eq!(e, format!("scx:bpfland: peers/bpfland.toml:{line}: the program has no global slice_maxx"));
    let (e, line) = with("syscall = \"enable_sibling_cpu\"", "syscall = \"enable_cousin_cpu\"");
    let step = line - 1; // the [[after_load]] header above
    assert_eq!(e, format!("scx:bpfland: peers/bpfland.toml:{step}: the program has no SEC(\"syscall\") program enable_cousin_cpu"));
    let (e, line) = with("args = { cpu_id = \"cpu\", sibling_cpu_id = \"sibling[cpu]\" }", "args = { cpu_id = \"cpu\", sibling = \"sibling[cpu]\" }");
    assert!(e.starts_with(&format!("scx:bpfland: peers/bpfland.toml:{}: syscall program enable_sibling_cpu: its argument has no member sibling", line - 4)), "{e}");
    let (e, line) = with("numa_enabled = \"!disable_numa && nr_nodes > 1\"", "numa_enabled = \"!disable_numa && nr_nodes >\"");
    assert_eq!(e, format!("peers/bpfland.toml:{line}: numa_enabled: unexpected end"));
}

#[test]
fn a_directory_with_a_copy_of_a_peer_runs_as_the_peer() {
    // bpf:DIR with bpfland's files as built and its recipe: the same run as
    // scx:bpfland (built on first use, then from the cache).
    built();
    let m = common::quiet("default");
    let dir = tempfile::tempdir().unwrap();
    let src = Source::peer("bpfland").unwrap();
    for name in src.names() {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, src.file(name).unwrap()).unwrap();
    }
    std::fs::write(dir.path().join("recipe.toml"), peers::find("bpfland").unwrap().recipe).unwrap();
    let spec = format!("bpf:{}", dir.path().display());
    for params in ["", ":slice_us=5000"] {
        let (_, mine) = simulate(&m, Governor::Powersave, &format!("{spec}{params}"), wl("hackbench:groups=2,loops=10", &m));
        let (_, builtin) = simulate(&m, Governor::Powersave, &format!("scx:bpfland{params}"), wl("hackbench:groups=2,loops=10", &m));
        assert!(mine == builtin, "bpf:DIR{params} and scx:bpfland{params} differ");
    }
}

#[test]
fn a_peer_loaded_again_after_hotplug_gets_its_loaders_plan_for_the_cpus_online() {
    // A peer without ops.cpu_offline is exited at a CPU's offlining and its
    // loader starts again, reading scx_utils' Topology, which lists the
    // online CPUs only: scx_bpfland's Scheduler::init sets primary_all to
    // `domain.weight() == *NR_CPU_IDS`, true on the whole machine, false
    // with its primary domain (every CPU online) one CPU short.
    built();
    let m = common::quiet("default");
    let run = |offline: bool| {
        let mut w = Workload::new("offline");
        let busy = w.add("busy", vec![Step::Compute(Amount::work_us(30_000.0, 0.0)), Step::Exit]);
        let mut steps = vec![Step::Sleep(Amount::fixed(5e6))];
        if offline {
            steps.push(Step::CpuOnline(3, false));
        }
        steps.push(Step::Exit);
        let ctl = w.add("ctl", steps);
        for i in 0..m.nr_cpus {
            w.initial.push((busy, format!("busy{i}"), None));
        }
        w.initial.push((ctl, "ctl".into(), Some(0)));
        let mut p = ScxPolicy::with_program(&m, "bpfland", &[], None).unwrap_or_else(|e| panic!("{e}"));
        p.report(&["primary_all"]);
        let mut e = Engine::new(m.clone(), Governor::Powersave, Box::new(p), w, 1, Box::new(Collect::default())).unwrap();
        e.check_invariants = true;
        let out = e.run(Limits::default()).unwrap();
        assert!(out.partial.is_none(), "{:?}", out.partial);
        stat(&out, "primary_all")
    };
    assert_eq!(run(false), 1);
    assert_eq!(run(true), 0);
}
