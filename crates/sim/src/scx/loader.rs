// SPDX-License-Identifier: GPL-2.0-only
//! What a loader does to the program before and after it loads it, run on
//! the host build: one code path for warmcore's own loader (its settings,
//! crates/sched-settings) and for the peers' recipes (recipe.rs). Both give
//! a [`Plan`]: globals written before load, then, after load, globals,
//! map entries and SEC("syscall") programs with their arguments, in order.

use super::program::Program;
use super::recipe::{Action, OpsFlags, Plan, Write};
use warmcore_sched_settings::{Settings, Topology};

/// warmcore sched's loader (crates/sched/src/lib.rs): the settings'
/// globals, and the ops flags it sets (SCX_OPS_ENQ_EXITING |
/// SCX_OPS_ENQ_LAST | SCX_OPS_KEEP_BUILTIN_IDLE).
pub fn warmcore_plan(settings: &Settings, topo: &Topology) -> Plan {
    Plan {
        rodata: settings
            .globals(topo)
            .into_iter()
            .map(|g| Write { name: g.name.to_string(), index: g.index, value: g.value as i128, at: String::new() })
            .collect(),
        flags: OpsFlags { enq_last: true, enq_exiting: true, keep_builtin_idle: true, ..OpsFlags::default() },
        ..Plan::default()
    }
}

fn at(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!("{at}: ")
    }
}

/// Check every name the plan uses against the program: its globals (and
/// their elements), maps and syscall programs with their arguments'
/// members. The first error, one line.
pub fn check(prog: &Program, plan: &Plan) -> Result<(), String> {
    let global = |w: &Write| -> Result<(), String> {
        match prog.global_info(&w.name) {
            None => Err(format!("{}the program has no global {}", at(&w.at), w.name)),
            Some((_, count)) if w.index >= count => {
                Err(format!("{}the program's global {} has {count} element(s), not {}", at(&w.at), w.name, w.index + 1))
            }
            Some(_) => Ok(()),
        }
    };
    for w in &plan.rodata {
        global(w)?;
    }
    for a in &plan.after_load {
        match a {
            Action::Global(w) => global(w)?,
            Action::Syscall { name, args, at: a } => {
                let Some(s) = prog.syscall(name) else {
                    return Err(format!("{}the program has no SEC(\"syscall\") program {name}", at(a)));
                };
                for (k, _) in args {
                    if !s.fields.iter().any(|(f, _, _)| f == k) {
                        return Err(format!(
                            "{}syscall program {name}: its argument has no member {k}; members: {}",
                            at(a),
                            s.fields.iter().map(|(f, _, _)| f.as_str()).collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
            Action::Map { name, at: a, .. } => match prog.map_info(name) {
                None => return Err(format!("{}the program has no map {name}", at(a))),
                Some((k, v)) if k > 16 || v > 16 => {
                    return Err(format!("{}map {name}: keys of {k} and values of {v} bytes are not integers", at(a)))
                }
                Some(_) => {}
            },
        }
    }
    Ok(())
}

/// Write a global (before or after load).
pub fn write(prog: &mut Program, w: &Write) -> Result<(), String> {
    prog.set(&w.name, w.index, w.value as u64).map_err(|e| format!("{}{e}", at(&w.at)))
}

/// `v` as `n` little-endian bytes (two's complement).
fn bytes(v: i128, n: usize) -> Vec<u8> {
    v.to_le_bytes()[..n].to_vec()
}

/// Do one step after load, as the loader does; a syscall program that
/// returns non-zero fails, as the loaders bail out.
pub fn act(prog: &mut Program, a: &Action) -> Result<(), String> {
    match a {
        Action::Global(w) => write(prog, w),
        Action::Syscall { name, args, at: a } => {
            let s = prog.syscall(name).ok_or_else(|| format!("{}the program has no SEC(\"syscall\") program {name}", at(a)))?;
            let mut buf = vec![0u8; s.arg_size.max(8)];
            for (k, v) in args {
                let (_, off, size) = s.fields.iter().find(|(f, _, _)| f == k).cloned().ok_or_else(|| format!("{}{name}: no member {k}", at(a)))?;
                buf[off..off + size].copy_from_slice(&bytes(*v, size));
            }
            match prog.run_syscall(&s, &mut buf) {
                0 => Ok(()),
                r => Err(format!(
                    "{}the loader's {name}({}) returned {r}",
                    at(a),
                    args.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
                )),
            }
        }
        Action::Map { name, key, value, at: a } => {
            let (k, v) = prog.map_info(name).ok_or_else(|| format!("{}the program has no map {name}", at(a)))?;
            prog.map_update_bytes(name, &bytes(*key, k), &bytes(*value, v)).map_err(|e| format!("{}{e}", at(a)))
        }
    }
}
