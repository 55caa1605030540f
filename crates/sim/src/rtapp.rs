// SPDX-License-Identifier: GPL-2.0-only
//! rt-app JSON workloads (`--workload rtapp:file=F.json`), read as they are.
//!
//! Supported: `global.duration` (s); per task `instance`/`instances`,
//! `loop` (-1: until the duration), `phases` (each with its own `loop`) or
//! events directly; events `run` and `runtime` (us of work; rt-app's
//! calibration is taken as the 2 GHz reference), `sleep` (us), `timer`
//! (`period` us; modelled as a sleep of period minus the work since the last
//! timer of that task, floor 0: an APPROXIMATION of rt-app's absolute
//! periods), `suspend`/`resume` (a named futex), `barrier` (all instances of
//! all tasks naming it), `lock`/`unlock` (ignored: no mutex model yet),
//! `fork` (start an instance of the named task). Event keys may carry a
//! numeric suffix (run0, sleep1) as in rt-app; their order is kept.

use std::collections::HashMap;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::program::{Amount, ProgId, Step, Workload, MAX_INITIAL_TASKS, REF_CYCLES_PER_US};
use crate::SimError;

/// JSON with object keys in file order (rt-app's event order matters).
#[derive(Clone, Debug)]
enum J {
    Obj(Vec<(String, J)>),
    Num(f64),
    Str(String),
    Other,
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = m.next_entry::<String, J>()? {
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<J, A::Error> {
                // Arrays carry nothing rt-app events need here; skip them.
                while s.next_element::<J>()?.is_some() {}
                Ok(J::Other)
            }
            fn visit_f64<E>(self, x: f64) -> Result<J, E> {
                Ok(J::Num(x))
            }
            fn visit_i64<E>(self, x: i64) -> Result<J, E> {
                Ok(J::Num(x as f64))
            }
            fn visit_u64<E>(self, x: u64) -> Result<J, E> {
                Ok(J::Num(x as f64))
            }
            fn visit_str<E>(self, x: &str) -> Result<J, E> {
                Ok(J::Str(x.to_string()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<J, E> {
                Ok(J::Other)
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Other)
            }
        }
        d.deserialize_any(V)
    }
}

impl J {
    fn get(&self, k: &str) -> Option<&J> {
        match self {
            J::Obj(v) => v.iter().find(|(n, _)| n == k).map(|(_, x)| x),
            _ => None,
        }
    }
    fn num(&self) -> Option<f64> {
        match self {
            J::Num(x) => Some(*x),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            J::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Events of rt-app, without a numeric suffix.
fn event_name(k: &str) -> &str {
    k.trim_end_matches(|c: char| c.is_ascii_digit())
}

pub fn load(path: &str) -> Result<Workload, SimError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| SimError::Input(format!("cannot read rt-app file {path}: {e}")))?;
    parse(&text, path)
}

pub fn parse(text: &str, origin: &str) -> Result<Workload, SimError> {
    // Names from the file are shown escaped: an error stays on one line.
    let err = |m: String| SimError::Input(format!("rt-app {origin}: {m}"));
    let root: J = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
    let duration_ns = root.get("global").and_then(|g| g.get("duration")).and_then(J::num).unwrap_or(-1.0);
    let duration_ns = if duration_ns > 0.0 { (duration_ns * 1e9) as u64 } else { 0 };
    let Some(J::Obj(tasks)) = root.get("tasks") else {
        return Err(err("no \"tasks\" object".into()));
    };
    let mut w = Workload::new("rtapp");
    let mut futexes: HashMap<String, u32> = HashMap::new();
    // Barriers: count the instances naming each.
    let mut barrier_users: HashMap<String, u32> = HashMap::new();
    let instances = |t: &J| t.get("instance").or(t.get("instances")).and_then(J::num).unwrap_or(1.0).max(0.0) as u32;
    let total: u64 = tasks.iter().map(|(_, t)| instances(t) as u64).sum();
    if total > MAX_INITIAL_TASKS {
        return Err(err(format!("the tasks' instances add up to {total}: at most {MAX_INITIAL_TASKS}")));
    }
    fn walk<'a>(t: &'a J, out: &mut Vec<(&'a str, &'a J)>) {
        if let J::Obj(v) = t {
            for (k, x) in v {
                if k == "phases" {
                    if let J::Obj(ph) = x {
                        for (_, p) in ph {
                            walk(p, out);
                        }
                    }
                } else {
                    out.push((k.as_str(), x));
                }
            }
        }
    }
    for (_, t) in tasks {
        let mut evs = Vec::new();
        walk(t, &mut evs);
        let mut seen = Vec::new();
        for (k, x) in evs {
            if event_name(k) == "barrier" {
                if let Some(b) = x.str() {
                    if !seen.contains(&b) {
                        seen.push(b);
                        *barrier_users.entry(b.to_string()).or_default() += instances(t);
                    }
                }
            }
        }
    }
    let mut barriers: HashMap<String, u32> = HashMap::new();
    let mut bnames: Vec<_> = barrier_users.into_iter().collect();
    bnames.sort();
    for (b, n) in bnames {
        barriers.insert(b, w.barrier(n));
    }
    // Program ids: one per task, in file order.
    let ids: HashMap<&str, ProgId> = tasks.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i as ProgId)).collect();
    /// (task name, its own events, its phases with their loop counts, its loop count)
    type Body = (String, Vec<Step>, Vec<(Vec<Step>, i64)>, i64);
    let mut bodies: Vec<Body> = Vec::new();
    for (name, t) in tasks {
        let conv = |evs: &[(String, J)], w: &mut Workload, futexes: &mut HashMap<String, u32>| -> Result<Vec<Step>, SimError> {
            let mut steps = Vec::new();
            let mut since_timer = 0.0;
            for (k, x) in evs {
                let at = format!("task {}, event {}", name.escape_debug(), k.escape_debug());
                let num = || x.num().filter(|v| *v >= 0.0).ok_or_else(|| err(format!("{at}: expected a number of us")));
                match event_name(k) {
                    "run" | "runtime" => {
                        let us = num()?;
                        since_timer += us;
                        steps.push(Step::Compute(Amount::fixed(us * REF_CYCLES_PER_US)));
                    }
                    "sleep" => steps.push(Step::Sleep(Amount::fixed(num()? * 1e3))),
                    "timer" => {
                        let period = x.get("period").and_then(J::num).ok_or_else(|| err(format!("{at}: timer needs a period")))?;
                        let left = (period - since_timer).max(0.0);
                        since_timer = 0.0;
                        if left > 0.0 {
                            steps.push(Step::Sleep(Amount::fixed(left * 1e3)));
                        }
                    }
                    "suspend" | "resume" => {
                        let n = x.str().map(str::to_string).unwrap_or_else(|| name.clone());
                        let next = w.futexes;
                        let f = *futexes.entry(n).or_insert(next);
                        if f == next {
                            w.futex();
                        }
                        steps.push(if event_name(k) == "suspend" { Step::FutexWait(f) } else { Step::FutexWake(f, 1) });
                    }
                    "barrier" => {
                        let b = x.str().ok_or_else(|| err(format!("{at}: barrier needs a name")))?;
                        steps.push(Step::Barrier(barriers[b]));
                    }
                    "fork" => {
                        let target = x.str().ok_or_else(|| err(format!("{at}: fork needs a task name")))?;
                        let p = *ids.get(target).ok_or_else(|| err(format!("{at}: no task named '{}'", target.escape_debug())))?;
                        steps.push(Step::Fork(p));
                    }
                    "lock" | "unlock" | "instance" | "instances" | "loop" | "priority" | "policy" | "cpus" | "delay"
                    | "nice" | "dl-runtime" | "dl-period" | "dl-deadline" | "taskgroup" | "util_min" | "util_max" => {}
                    other => return Err(err(format!("{at}: unsupported event '{}'", other.escape_debug()))),
                }
            }
            Ok(steps)
        };
        let J::Obj(top) = t else { return Err(err(format!("task {} is not an object", name.escape_debug()))) };
        let lp = t.get("loop").and_then(J::num).unwrap_or(-1.0) as i64;
        let mut phases = Vec::new();
        if let Some(J::Obj(ph)) = t.get("phases") {
            for (_, p) in ph {
                let J::Obj(pe) = p else { continue };
                let plp = p.get("loop").and_then(J::num).unwrap_or(1.0) as i64;
                phases.push((conv(pe, &mut w, &mut futexes)?, plp));
            }
        }
        let direct: Vec<(String, J)> = top.iter().filter(|(k, _)| k != "phases").cloned().collect();
        let steps = conv(&direct, &mut w, &mut futexes)?;
        bodies.push((name.clone(), steps, phases, lp));
    }
    // Reserve program ids 0..n for the tasks, then add loop bodies.
    let n = bodies.len();
    for (name, _, _, _) in &bodies {
        w.add(name, Vec::new());
    }
    for (i, (name, steps, phases, lp)) in bodies.into_iter().enumerate() {
        let mut body = steps;
        for (ps, plp) in phases {
            let p = w.add(&format!("{name}-phase"), ps);
            body.push(Step::Repeat(p, plp.max(1) as u64));
        }
        let b = w.add(&format!("{name}-loop"), body);
        let main = if lp < 0 {
            if duration_ns == 0 {
                return Err(err(format!("task {} loops for ever and global.duration is not set", name.escape_debug())));
            }
            vec![Step::RepeatFor(b, duration_ns), Step::Exit]
        } else {
            vec![Step::Repeat(b, lp as u64), Step::Exit]
        };
        w.programs[i].steps = main;
    }
    let _ = n;
    if duration_ns > 0 {
        w.end_ns = Some(duration_ns);
    }
    for (name, t) in tasks {
        for _ in 0..instances(t) {
            w.initial.push((ids[name.as_str()], name.clone(), None));
        }
    }
    w.validate().map_err(err)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"{
        "global": { "duration": 0.2, "calibration": "CPU0" },
        "tasks": {
            "producer": { "loop": -1, "run0": 500, "resume": "consumer", "sleep0": 1000 },
            "consumer": { "instance": 1, "loop": -1, "suspend": "consumer", "run": 300 },
            "phased": { "instances": 2, "loop": 3,
                "phases": { "p1": { "loop": 2, "run": 100, "timer": { "ref": "t", "period": 1000 } },
                            "p2": { "run": 50, "barrier": "b" } } }
        }
    }"#;

    #[test]
    fn rtapp_json_keeps_event_order_and_runs() {
        let w = parse(EXAMPLE, "x.json").unwrap();
        assert_eq!(w.initial.len(), 4);
        assert_eq!(w.barriers, vec![2]);
        let loop_p = w.programs.iter().find(|p| p.name == "producer-loop").unwrap();
        assert!(matches!(loop_p.steps[0], Step::Compute(_)));
        assert!(matches!(loop_p.steps[1], Step::FutexWake(..)));
        assert!(matches!(loop_p.steps[2], Step::Sleep(_)));
        let p1 = w.programs.iter().find(|p| p.name == "phased-phase").unwrap();
        // run 100 us then a timer of 1000 us: sleep 900 us.
        assert_eq!(p1.steps[1], Step::Sleep(Amount::fixed(900e3)));
        let m = crate::Machine::load("default").unwrap();
        let p = crate::policies::make_policy("cfs", &m).unwrap();
        let mut e = crate::Engine::new(m, crate::Governor::Schedutil, p, w, 1, Box::new(crate::engine::CountSink::default()))
            .unwrap();
        e.check_invariants = true;
        let out = e.run(crate::Limits::default()).unwrap();
        assert!(out.partial.is_none());
        // The global duration ends the run, even with the consumer waiting.
        assert_eq!(out.makespan_ns, 200_000_000);
    }

    #[test]
    fn rtapp_errors_name_the_event() {
        let e = parse(&EXAMPLE.replace("\"sleep0\"", "\"yield\""), "x.json").unwrap_err().to_string();
        assert!(e.contains("yield"), "{e}");
        let e = parse("{\"tasks\": 3}", "x.json").unwrap_err().to_string();
        assert!(e.contains("tasks"), "{e}");
    }

    /// Found by fuzzing (fuzz/fuzz_targets/rtapp_json.rs): a task name with
    /// a newline made a two-line error; a huge instance count would allocate
    /// billions of tasks.
    #[test]
    fn errors_stay_on_one_line_and_sizes_are_bounded() {
        let crash = r#"{ "tasks": { "par\nt": { "loop": 5, "runtime": 200, "*ock": "m" } } }"#;
        let e = parse(crash, "x.json").unwrap_err().to_string();
        assert!(e.contains("task par\\nt, event *ock") && !e.contains('\n'), "{e}");
        let e = parse(&EXAMPLE.replace("\"instances\": 2", "\"instances\": 1e12"), "x.json").unwrap_err().to_string();
        assert!(e.contains("at most 100000"), "{e}");
    }
}
