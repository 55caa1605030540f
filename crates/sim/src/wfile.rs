// SPDX-License-Identifier: GPL-2.0-only
//! Workload files (workloads/*.toml): programs of steps written by hand.
//!
//! ```toml
//! name = "example"
//! [[pipe]]
//! name = "p"
//! capacity = 16
//! [[program]]
//! name = "main"
//! steps = [ { exec = "sh" }, { repeat = "child-loop", times = 10 }, { exit = true } ]
//! [[task]]
//! program = "main"
//! cpu = 0
//! ```
//! Steps (one action per table): compute_us (+ jitter), sleep_us, io_us,
//! fork = program, exec = comm, wait = true, wait_all = true, exit = true,
//! pipe_write = pipe, pipe_read = pipe, pipe_spin_read = pipe (busy-waits
//! for the message), futex_wait = futex, futex_wake = futex (+ count),
//! barrier = barrier (+ spin_us: spin that long before blocking), repeat =
//! program (+ times), repeat_for = program (+ ms), nice = -20..19,
//! policy = "idle" or "normal" (sched_setscheduler to SCHED_IDLE or back;
//! inherited by children forked later), migrate_disable = true and
//! migrate_enable = true (a section where the task stays on its CPU),
//! cpuset = name (the task joins that cpuset, made at its first mention
//! with every CPU; children forked later are born in it), cpuset_cpus =
//! "0-3" + of = name (the cpuset's CPUs: its members' allowed CPUs are
//! those they asked for within them, or all of them if none is; "" is
//! every CPU),
//! affinity = "0-3,8" (sched_setaffinity: a CPU list as taskset -c takes
//! it, or an array of CPUs; + of = "children" for the task's live children
//! in place of itself),
//! cpu_offline = N and cpu_online = N (CPU hotplug: CPU N goes offline, its
//! tasks move to other CPUs, or comes back).
//!
//! `stall` (0 to 1, default 0) at the top is the share of each
//! computation's time spent stalled on memory, which does not scale with
//! frequency (docs/model.md, Workloads).

use std::collections::HashMap;

use serde::Deserialize;

use crate::program::{Amount, ProgId, Step, Workload, MAX_INITIAL_TASKS, REF_CYCLES_PER_US};
use crate::SimError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    stall: f64,
    #[serde(default)]
    pipe: Vec<Named>,
    #[serde(default)]
    futex: Vec<Named>,
    #[serde(default)]
    barrier: Vec<Named>,
    program: Vec<Prog>,
    task: Vec<Task>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
    #[serde(default)]
    capacity: Option<u32>,
    #[serde(default)]
    count: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Prog {
    name: String,
    steps: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Task {
    program: String,
    #[serde(default)]
    comm: Option<String>,
    #[serde(default)]
    cpu: Option<u32>,
    #[serde(default = "one")]
    instances: u32,
}

fn one() -> u32 {
    1
}

const ACTIONS: &str = "compute_us, sleep_us, io_us, fork, exec, wait, wait_all, exit, pipe_write, pipe_read, pipe_spin_read, futex_wait, futex_wake, barrier, repeat, repeat_for, nice, policy, affinity, migrate_disable, migrate_enable, cpuset, cpuset_cpus, cpu_offline, cpu_online";

/// The highest CPU number a mask may name, plus one (the programs handle
/// 1024 CPUs; no modelled machine has more).
const MAX_CPU: i64 = 1024;

/// The CPUs of a step's field: a CPU list or an array of CPUs; `empty_ok`:
/// "" or [] is no CPU (a cpuset's "the parent's").
fn cpus_of(v: Option<&toml::Value>, empty_ok: bool) -> Result<Vec<u32>, ()> {
    match v {
        Some(toml::Value::String(list)) if empty_ok && list.trim().is_empty() => Ok(Vec::new()),
        Some(toml::Value::String(list)) => parse_cpulist(list),
        Some(toml::Value::Array(a)) if a.is_empty() && !empty_ok => Err(()),
        Some(toml::Value::Array(a)) => {
            a.iter().map(|v| v.as_integer().filter(|c| (0..MAX_CPU).contains(c)).map(|c| c as u32).ok_or(())).collect()
        }
        _ => Err(()),
    }
}

/// The number of cpuset `name`, numbered in order of first mention.
fn cpuset_id(ids: &mut Vec<String>, name: &str) -> u32 {
    match ids.iter().position(|n| n == name) {
        Some(i) => i as u32,
        None => {
            ids.push(name.to_string());
            (ids.len() - 1) as u32
        }
    }
}

/// A CPU list as the kernel prints and taskset -c takes it: "0-3,8,10-11".
fn parse_cpulist(list: &str) -> Result<Vec<u32>, ()> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (i64, i64) = (a.trim().parse().map_err(|_| ())?, b.trim().parse().map_err(|_| ())?);
        if a < 0 || b < a || b >= MAX_CPU {
            return Err(());
        }
        out.extend(a as u32..=b as u32);
    }
    Ok(out)
}

pub fn load(path: &str) -> Result<Workload, SimError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SimError::Input(format!("cannot read workload file {path}: {e}")))?;
    parse(&text, path)
}

pub fn parse(text: &str, origin: &str) -> Result<Workload, SimError> {
    let f: File = toml::from_str(text)
        .map_err(|e| SimError::Input(format!("workload {origin}: {}", e.message().trim().replace('\n', " "))))?;
    // Names from the file are shown escaped: an error stays on one line.
    let err = |m: String| SimError::Input(format!("workload {origin}: {m}"));
    let mut w = Workload::new(&f.name);
    if !(0.0..=1.0).contains(&f.stall) {
        return Err(err(format!("field `stall` must be a share between 0 and 1, not {}", f.stall)));
    }
    w.stall = f.stall;
    let mut pipes = HashMap::new();
    for p in &f.pipe {
        pipes.insert(p.name.clone(), w.pipe(p.capacity.unwrap_or(16)));
    }
    let mut futexes = HashMap::new();
    for x in &f.futex {
        futexes.insert(x.name.clone(), w.futex());
    }
    let mut barriers = HashMap::new();
    for b in &f.barrier {
        let c = b.count.ok_or_else(|| err(format!("barrier {} needs a count", b.name.escape_debug())))?;
        barriers.insert(b.name.clone(), w.barrier(c));
    }
    let progs: HashMap<&str, ProgId> =
        f.program.iter().enumerate().map(|(i, p)| (p.name.as_str(), i as ProgId)).collect();
    let mut cpusets: Vec<String> = Vec::new();
    for p in &f.program {
        let mut steps = Vec::new();
        for (i, t) in p.steps.iter().enumerate() {
            let at = format!("program {}, step {}", p.name.escape_debug(), i + 1);
            let num = |k: &str| -> Result<Option<f64>, SimError> {
                match t.get(k) {
                    None => Ok(None),
                    Some(v) => v
                        .as_float()
                        .or_else(|| v.as_integer().map(|i| i as f64))
                        .filter(|x| *x >= 0.0 && x.is_finite())
                        .map(Some)
                        .ok_or_else(|| err(format!("{at}: field `{k}` must be a finite non-negative number"))),
                }
            };
            let name = |k: &str| -> Result<&str, SimError> {
                t.get(k).and_then(|v| v.as_str()).ok_or_else(|| err(format!("{at}: field `{k}` must be a name")))
            };
            let look = |map: &HashMap<String, u32>, k: &str, what: &str| -> Result<u32, SimError> {
                let n = name(k)?;
                map.get(n).copied().ok_or_else(|| err(format!("{at}: no {what} named '{}'", n.escape_debug())))
            };
            let prog = |k: &str| -> Result<ProgId, SimError> {
                let n = name(k)?;
                progs.get(n).copied().ok_or_else(|| err(format!("{at}: no program named '{}'", n.escape_debug())))
            };
            let jitter = num("jitter")?.unwrap_or(0.0);
            let action = t
                .keys()
                .find(|k| !matches!(k.as_str(), "jitter" | "times" | "ms" | "count" | "spin_us" | "of"))
                .ok_or_else(|| err(format!("{at}: no action; valid: {ACTIONS}")))?;
            let step = match action.as_str() {
                "compute_us" => Step::Compute(Amount::work_us(num("compute_us")?.unwrap(), jitter)),
                "sleep_us" => Step::Sleep(Amount::jittered(num("sleep_us")?.unwrap() * 1e3, jitter)),
                "io_us" => Step::Io(Amount::jittered(num("io_us")?.unwrap() * 1e3, jitter)),
                "fork" => Step::Fork(prog("fork")?),
                "exec" => Step::Exec(name("exec")?.to_string()),
                "wait" => Step::Wait,
                "wait_all" => Step::WaitAll,
                "exit" => Step::Exit,
                "pipe_write" => Step::PipeWrite(look(&pipes, "pipe_write", "pipe")?),
                "pipe_read" => Step::PipeRead(look(&pipes, "pipe_read", "pipe")?),
                "pipe_spin_read" => Step::PipeSpinRead(look(&pipes, "pipe_spin_read", "pipe")?),
                "futex_wait" => Step::FutexWait(look(&futexes, "futex_wait", "futex")?),
                "futex_wake" => {
                    Step::FutexWake(look(&futexes, "futex_wake", "futex")?, num("count")?.unwrap_or(1.0) as u32)
                }
                "barrier" => match num("spin_us")? {
                    Some(us) if us > 0.0 => Step::BarrierSpin(look(&barriers, "barrier", "barrier")?, Amount::work_us(us, 0.0)),
                    _ => Step::Barrier(look(&barriers, "barrier", "barrier")?),
                },
                "repeat" => Step::Repeat(prog("repeat")?, num("times")?.unwrap_or(1.0) as u64),
                "repeat_for" => Step::RepeatFor(prog("repeat_for")?, (num("ms")?.unwrap_or(0.0) * 1e6) as u64),
                "nice" => Step::Nice(
                    t.get("nice")
                        .and_then(|v| v.as_integer())
                        .filter(|n| (-20..=19).contains(n))
                        .ok_or_else(|| err(format!("{at}: field `nice` must be an integer from -20 to 19")))? as i8,
                ),
                "migrate_disable" => Step::MigrateDisable,
                "migrate_enable" => Step::MigrateEnable,
                "policy" => match t.get("policy").and_then(|v| v.as_str()) {
                    Some("idle") => Step::SchedIdle(true),
                    Some("normal") => Step::SchedIdle(false),
                    _ => return Err(err(format!("{at}: field `policy` must be \"idle\" (SCHED_IDLE) or \"normal\" (SCHED_NORMAL)"))),
                },
                "cpuset" => Step::JoinCpuset(cpuset_id(&mut cpusets, name("cpuset")?)),
                "cpuset_cpus" => {
                    let cpus = cpus_of(t.get("cpuset_cpus"), true).map_err(|_| {
                        err(format!("{at}: field `cpuset_cpus` must be a CPU list such as \"0-3,8\", \"\" or an array of CPUs below {MAX_CPU}"))
                    })?;
                    Step::CpusetCpus(cpuset_id(&mut cpusets, name("of")?), cpus.into_boxed_slice())
                }
                "affinity" => {
                    let cpus = cpus_of(t.get("affinity"), false)
                    .map_err(|_| err(format!("{at}: field `affinity` must be a CPU list such as \"0-3,8\" or an array of CPUs below {MAX_CPU}")))?;
                    let children = match t.get("of").map(|v| v.as_str()) {
                        None | Some(Some("self")) => false,
                        Some(Some("children")) => true,
                        _ => return Err(err(format!("{at}: field `of` must be \"self\" or \"children\""))),
                    };
                    Step::Affinity(cpus.into_boxed_slice(), children)
                }
                "cpu_offline" | "cpu_online" => Step::CpuOnline(
                    t.get(action.as_str())
                        .and_then(|v| v.as_integer())
                        .filter(|c| (0..MAX_CPU).contains(c))
                        .ok_or_else(|| err(format!("{at}: field `{action}` must be a CPU number below {MAX_CPU}")))? as u32,
                    action == "cpu_online",
                ),
                other => return Err(err(format!("{at}: unknown action `{}`; valid: {ACTIONS}", other.escape_debug()))),
            };
            steps.push(step);
        }
        w.add(&p.name, steps);
    }
    let total: u64 = f.task.iter().map(|t| t.instances as u64).sum();
    if total > MAX_INITIAL_TASKS {
        return Err(err(format!("the tasks' instances add up to {total}: at most {MAX_INITIAL_TASKS}")));
    }
    for t in &f.task {
        let p = progs.get(t.program.as_str()).copied().ok_or_else(|| err(format!("task: no program named '{}'", t.program.escape_debug())))?;
        for _ in 0..t.instances {
            w.initial.push((p, t.comm.clone().unwrap_or_else(|| t.program.clone()), t.cpu));
        }
    }
    w.cpusets = cpusets.len() as u32;
    w.validate().map_err(err)?;
    Ok(w)
}

/// A workload as a file `parse` reads back to the same workload (its
/// programs, tasks and objects; names made unique where they are not).
/// Errors on what the format cannot say: marks and measures (a built-in
/// workload's metric).
pub fn to_toml(w: &Workload) -> Result<String, String> {
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let num = |x: f64| if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x:?}") };
    let jit = |a: &Amount| if a.jitter > 0.0 { format!(", jitter = {}", num(a.jitter)) } else { String::new() };
    let mut names: Vec<String> = Vec::new();
    for p in &w.programs {
        let mut n = p.name.clone();
        let mut i = 1;
        while names.contains(&n) {
            i += 1;
            n = format!("{}-{i}", p.name);
        }
        names.push(n);
    }
    let mut out = format!("name = {}\n", q(&w.name));
    if w.stall > 0.0 {
        out += &format!("stall = {}\n", num(w.stall));
    }
    for (i, cap) in w.pipes.iter().enumerate() {
        out += &format!("[[pipe]]\nname = \"pipe{i}\"\ncapacity = {cap}\n");
    }
    for i in 0..w.futexes {
        out += &format!("[[futex]]\nname = \"futex{i}\"\n");
    }
    for (i, count) in w.barriers.iter().enumerate() {
        out += &format!("[[barrier]]\nname = \"barrier{i}\"\ncount = {count}\n");
    }
    let us = REF_CYCLES_PER_US;
    for (p, name) in w.programs.iter().zip(&names) {
        let mut steps = Vec::new();
        for s in &p.steps {
            steps.push(match s {
                Step::Compute(a) => format!("{{ compute_us = {}{} }}", num(a.mean / us), jit(a)),
                Step::Sleep(a) => format!("{{ sleep_us = {}{} }}", num(a.mean / 1e3), jit(a)),
                Step::Io(a) => format!("{{ io_us = {}{} }}", num(a.mean / 1e3), jit(a)),
                Step::Fork(c) => format!("{{ fork = {} }}", q(&names[*c as usize])),
                Step::Exec(comm) => format!("{{ exec = {} }}", q(comm)),
                Step::Wait => "{ wait = true }".into(),
                Step::WaitAll => "{ wait_all = true }".into(),
                Step::Exit => "{ exit = true }".into(),
                Step::PipeWrite(i) => format!("{{ pipe_write = \"pipe{i}\" }}"),
                Step::PipeRead(i) => format!("{{ pipe_read = \"pipe{i}\" }}"),
                Step::PipeSpinRead(i) => format!("{{ pipe_spin_read = \"pipe{i}\" }}"),
                Step::FutexWait(i) => format!("{{ futex_wait = \"futex{i}\" }}"),
                Step::FutexWake(i, n) => format!("{{ futex_wake = \"futex{i}\", count = {n} }}"),
                Step::Barrier(i) => format!("{{ barrier = \"barrier{i}\" }}"),
                Step::BarrierSpin(i, a) => format!("{{ barrier = \"barrier{i}\", spin_us = {} }}", num(a.mean / us)),
                Step::Repeat(c, n) => format!("{{ repeat = {}, times = {n} }}", q(&names[*c as usize])),
                Step::RepeatFor(c, ns) => format!("{{ repeat_for = {}, ms = {} }}", q(&names[*c as usize]), num(*ns as f64 / 1e6)),
                Step::Nice(n) => format!("{{ nice = {n} }}"),
                Step::JoinCpuset(i) => format!("{{ cpuset = \"cpuset{i}\" }}"),
                Step::CpusetCpus(i, cpus) => format!(
                    "{{ cpuset_cpus = [{}], of = \"cpuset{i}\" }}",
                    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
                ),
                Step::MigrateDisable => "{ migrate_disable = true }".into(),
                Step::MigrateEnable => "{ migrate_enable = true }".into(),
                Step::SchedIdle(idle) => format!("{{ policy = \"{}\" }}", if *idle { "idle" } else { "normal" }),
                Step::Affinity(cpus, children) => format!(
                    "{{ affinity = [{}]{} }}",
                    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
                    if *children { ", of = \"children\"" } else { "" }
                ),
                Step::CpuOnline(c, online) => format!("{{ cpu_{} = {c} }}", if *online { "online" } else { "offline" }),
                Step::Mark(_) | Step::Measure(_) => {
                    return Err(format!("workload {}: a measured interval cannot be written to a workload file", w.name))
                }
            });
        }
        out += &format!("[[program]]\nname = {}\nsteps = [\n", q(name));
        for s in steps {
            out += &format!("    {s},\n");
        }
        out += "]\n";
    }
    for (p, comm, cpu) in &w.initial {
        out += &format!("[[task]]\nprogram = {}\ncomm = {}\n", q(&names[*p as usize]), q(comm));
        if let Some(c) = cpu {
            out += &format!("cpu = {c}\n");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIPELINE: &str = include_str!("../../../workloads/pipeline.toml");

    #[test]
    fn shipped_file_parses_and_runs() {
        let w = parse(PIPELINE, "pipeline.toml").unwrap();
        assert_eq!(w.name, "pipeline");
        assert_eq!(w.pipes, vec![16]);
        assert_eq!(w.initial.len(), 1);
        let m = crate::Machine::load("default").unwrap();
        let p = crate::policies::make_policy("cfs", &m).unwrap();
        let mut e = crate::Engine::new(m, crate::Governor::Powersave, p, w, 1, Box::new(crate::engine::CountSink::default()))
            .unwrap();
        let out = e.run(crate::Limits::default()).unwrap();
        assert!(out.partial.is_none());
        // 50 pipelines, each at least 20 x 200 us of producer work at 3 GHz or less.
        assert!(out.makespan_ns > 50 * 20 * 200_000 * 2 / 3);
    }

    #[test]
    fn errors_name_the_step_and_field() {
        let e = parse(&PIPELINE.replace("pipe_write = \"p\"", "pipe_writ = \"p\""), "x").unwrap_err().to_string();
        assert!(e.contains("program produce, step 2") && e.contains("pipe_writ"), "{e}");
        let e = parse(&PIPELINE.replace("fork = \"consumer\"", "fork = \"nobody\""), "x").unwrap_err().to_string();
        assert!(e.contains("no program named 'nobody'"), "{e}");
        let e = parse(&PIPELINE.replace("compute_us = 300", "compute_us = -3"), "x").unwrap_err().to_string();
        assert!(e.contains("compute_us"), "{e}");
        let e = parse(&PIPELINE.replace("capacity = 16", "capacity = 16\nsize = 3"), "x").unwrap_err().to_string();
        assert!(e.contains("size"), "{e}");
    }

    #[test]
    fn nice_takes_a_nice_value() {
        let w = parse(&PIPELINE.replace("{ exec = \"producer\" }", "{ nice = 19 }, { exec = \"producer\" }"), "x").unwrap();
        assert_eq!(w.programs[0].steps[0], Step::Nice(19));
        for bad in ["20", "-21", "1.5", "\"low\""] {
            let e = parse(&PIPELINE.replace("{ exec = \"producer\" }", &format!("{{ nice = {bad} }}")), "x").unwrap_err().to_string();
            assert!(e.contains("program producer, step 1") && e.contains("from -20 to 19"), "{bad}: {e}");
        }
    }

    #[test]
    fn policy_is_idle_or_normal() {
        let with = |step: &str| parse(&PIPELINE.replace("{ exec = \"producer\" }", step), "x");
        assert_eq!(with("{ policy = \"idle\" }").unwrap().programs[0].steps[0], Step::SchedIdle(true));
        assert_eq!(with("{ policy = \"normal\" }").unwrap().programs[0].steps[0], Step::SchedIdle(false));
        for bad in ["{ policy = \"batch\" }", "{ policy = 5 }"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("program producer, step 1") && e.contains("SCHED_IDLE"), "{bad}: {e}");
        }
    }

    #[test]
    fn cpusets_are_named_by_steps_and_read_back() {
        let with = |step: &str| parse(&PIPELINE.replace("{ exec = \"producer\" }", step), "x");
        let w = with("{ cpuset = \"db\" }, { cpuset_cpus = \"2-3\", of = \"web\" }, { cpuset_cpus = \"\", of = \"db\" }").unwrap();
        assert_eq!(w.cpusets, 2);
        assert_eq!(&w.programs[0].steps[..3], &[Step::JoinCpuset(0), Step::CpusetCpus(1, [2u32, 3].into()), Step::CpusetCpus(0, [].into())]);
        let back = parse(&to_toml(&w).unwrap(), "x").unwrap();
        assert_eq!((back.cpusets, &back.programs[0].steps), (2, &w.programs[0].steps));
        for bad in ["{ cpuset = 3 }", "{ cpuset_cpus = \"1\" }", "{ cpuset_cpus = \"x\", of = \"db\" }"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("program producer, step 1"), "{bad}: {e}");
        }
    }

    #[test]
    fn affinity_takes_a_cpu_list_or_an_array_for_the_task_or_its_children() {
        let with = |step: &str| parse(&PIPELINE.replace("{ exec = \"producer\" }", step), "x");
        let w = with("{ affinity = \"0-2,8\" }").unwrap();
        assert_eq!(w.programs[0].steps[0], Step::Affinity([0u32, 1, 2, 8].into(), false));
        let w = with("{ affinity = [3, 1], of = \"children\" }").unwrap();
        assert_eq!(w.programs[0].steps[0], Step::Affinity([3u32, 1].into(), true));
        for bad in ["{ affinity = \"3-1\" }", "{ affinity = \"x\" }", "{ affinity = [-1] }", "{ affinity = [5000] }", "{ affinity = 3 }"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("program producer, step 1") && e.contains("CPU list"), "{bad}: {e}");
        }
        let e = with("{ affinity = \"1\", of = \"parent\" }").unwrap_err().to_string();
        assert!(e.contains("`of`"), "{e}");
    }

    #[test]
    fn cpu_offline_and_online_name_a_cpu() {
        let with = |step: &str| parse(&PIPELINE.replace("{ exec = \"producer\" }", step), "x");
        let w = with("{ cpu_offline = 3 }, { cpu_online = 3 }").unwrap();
        assert_eq!(&w.programs[0].steps[..2], &[Step::CpuOnline(3, false), Step::CpuOnline(3, true)]);
        let back = parse(&to_toml(&w).unwrap(), "x").unwrap();
        assert_eq!(&back.programs[0].steps[..2], &w.programs[0].steps[..2]);
        for bad in ["{ cpu_offline = -1 }", "{ cpu_online = \"3\" }", "{ cpu_offline = 5000 }"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("program producer, step 1") && e.contains("CPU number"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_workload_written_reads_back_the_same() {
        let w = parse(PIPELINE, "x").unwrap();
        let back = parse(&to_toml(&w).unwrap(), "y").unwrap();
        assert_eq!(back.pipes, w.pipes);
        assert_eq!(back.initial, w.initial);
        for (a, b) in back.programs.iter().zip(&w.programs) {
            assert_eq!((&a.name, &a.steps), (&b.name, &b.steps));
        }
    }

    #[test]
    fn stall_spinning_reads_and_spinning_barriers() {
        let text = r#"
name = "spin"
stall = 0.25
[[pipe]]
name = "flag"
[[barrier]]
name = "b"
count = 2
[[program]]
name = "w"
steps = [ { pipe_spin_read = "flag" }, { barrier = "b", spin_us = 50 }, { barrier = "b" }, { exit = true } ]
[[task]]
program = "w"
"#;
        let w = parse(text, "x").unwrap();
        assert_eq!(w.stall, 0.25);
        let steps = &w.programs[0].steps;
        assert_eq!(steps[0], Step::PipeSpinRead(0));
        assert_eq!(steps[1], Step::BarrierSpin(0, Amount::work_us(50.0, 0.0)));
        assert_eq!(steps[2], Step::Barrier(0));
        let e = parse(&text.replace("stall = 0.25", "stall = 1.5"), "x").unwrap_err().to_string();
        assert!(e.contains("stall") && e.contains("between 0 and 1"), "{e}");
        let e = parse(&text.replace("stall = 0.25", "stall = nan"), "x").unwrap_err().to_string();
        assert!(e.contains("stall"), "{e}");
    }

    /// Found by fuzzing (fuzz/fuzz_targets/workload_toml.rs): errors stay on
    /// one line whatever the names, and a file cannot ask for billions of tasks.
    #[test]
    fn errors_stay_on_one_line_and_sizes_are_bounded() {
        let e = parse(&PIPELINE.replace("fork = \"consumer\"", "fork = \"no\\nbody\""), "x").unwrap_err().to_string();
        assert!(e.contains("no program named 'no\\nbody'") && !e.contains('\n'), "{e}");
        let e = parse(&PIPELINE.replace("name = \"pipeline\"", "name = \"a\\nb\"").replace("[[task]]", "[[nothing]]"), "x");
        assert!(!e.unwrap_err().to_string().contains('\n'));
        let e = parse(&PIPELINE.replace("cpu = 0", "cpu = 0\ninstances = 4000000000"), "x").unwrap_err().to_string();
        assert!(e.contains("at most 100000"), "{e}");
        let e = parse(&PIPELINE.replace("compute_us = 300", "compute_us = inf"), "x").unwrap_err().to_string();
        assert!(e.contains("compute_us") && e.contains("finite"), "{e}");
    }
}
