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
//! program (+ times), repeat_for = program (+ ms).
//!
//! `stall` (0 to 1, default 0) at the top is the share of each
//! computation's time spent stalled on memory, which does not scale with
//! frequency (docs/model.md, Workloads).

use std::collections::HashMap;

use serde::Deserialize;

use crate::program::{Amount, ProgId, Step, Workload, MAX_INITIAL_TASKS};
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

const ACTIONS: &str = "compute_us, sleep_us, io_us, fork, exec, wait, wait_all, exit, pipe_write, pipe_read, pipe_spin_read, futex_wait, futex_wake, barrier, repeat, repeat_for, nice";

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
                .find(|k| !matches!(k.as_str(), "jitter" | "times" | "ms" | "count" | "spin_us"))
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
    w.validate().map_err(err)?;
    Ok(w)
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
