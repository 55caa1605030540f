// SPDX-License-Identifier: GPL-2.0-only
//! The Perfetto exporter, decoded back with the exporter's message structs.
//! (python/tests/test_export.py decodes the same output with Perfetto's own
//! definitions.)

#[path = "export_common/mod.rs"]
mod common;

use prost::Message;
use warmcore_trace::event::prev_state;
use warmcore_trace::export::perfetto::{self, proto, proto::ftrace_event::Event as Fe, IDLE_EXIT_STATE};
use warmcore_trace::*;

const PRIO: Option<i32> = Some(perfetto::DEFAULT_PRIO);

/// The ftrace events each input event must become, per CPU, in order: the
/// mapping stated independently of the exporter.
fn expected(t: &Trace, evs: &[CpuEvent], derive_idle: bool) -> Vec<Vec<proto::FtraceEvent>> {
    let table = &t.header.events;
    let builtin = |id: u32| event::BUILTIN.iter().find(|(_, n)| table.name(id) == *n).map(|(b, _)| *b);
    let comm = |pid: u32, cpu: u32| if pid == 0 { format!("swapper/{cpu}") } else { common::comm_of(pid) };
    let mut out = vec![Vec::new(); t.nr_cpus() as usize];
    let mut running = vec![0u32; t.nr_cpus() as usize];
    for e in evs {
        let (cpu, ev) = (e.cpu, e.ev);
        let (pid, a, b) = (ev.pid, ev.a(), ev.b());
        let mut put = |common_pid: u32, fe: Fe| {
            out[cpu as usize].push(proto::FtraceEvent { timestamp: Some(ev.ts), pid: Some(common_pid), event: Some(fe) })
        };
        let idle = |state: u32| Fe::CpuIdle(proto::CpuIdleFtraceEvent { state: Some(state), cpu_id: Some(cpu) });
        let freq = |khz: u32| Fe::CpuFrequency(proto::CpuFrequencyFtraceEvent { state: Some(khz), cpu_id: Some(cpu) });
        let waking = proto::SchedWakingFtraceEvent {
            comm: Some(comm(pid, cpu)),
            pid: Some(pid as i32),
            prio: PRIO,
            success: Some(1),
            target_cpu: Some(a as i32),
        };
        match builtin(ev.id) {
            Some(ids::CTX_SWITCH) => {
                if derive_idle && pid == 0 && a != 0 {
                    put(0, idle(IDLE_EXIT_STATE));
                }
                let state = match b {
                    prev_state::RUNNABLE => 0,
                    prev_state::BLOCKED => 1,
                    prev_state::BLOCKED_IO => 2,
                    prev_state::DEAD => 16,
                    _ => unreachable!(),
                };
                put(
                    pid,
                    Fe::SchedSwitch(proto::SchedSwitchFtraceEvent {
                        prev_comm: Some(comm(pid, cpu)),
                        prev_pid: Some(pid as i32),
                        prev_prio: PRIO,
                        prev_state: Some(state),
                        next_comm: Some(comm(a, cpu)),
                        next_pid: Some(a as i32),
                        next_prio: PRIO,
                    }),
                );
                running[cpu as usize] = a;
                if derive_idle && a == 0 && pid != 0 {
                    put(0, idle(0));
                }
            }
            Some(ids::WAKEUP) => put(b, Fe::SchedWaking(waking)),
            Some(ids::WAKEUP_NEW) => put(b, Fe::SchedWakeupNew(waking)),
            Some(ids::FORK) => put(
                a,
                Fe::TaskNewtask(proto::TaskNewtaskFtraceEvent {
                    pid: Some(pid as i32),
                    comm: Some(comm(pid, cpu)),
                    clone_flags: Some(0),
                }),
            ),
            Some(ids::EXEC) => put(
                pid,
                Fe::TaskRename(proto::TaskRenameFtraceEvent {
                    pid: Some(pid as i32),
                    oldcomm: Some(comm(pid, cpu)),
                    newcomm: Some(comm(pid, cpu)),
                }),
            ),
            Some(ids::EXIT) => put(
                pid,
                Fe::SchedProcessExit(proto::SchedProcessExitFtraceEvent {
                    comm: Some(comm(pid, cpu)),
                    pid: Some(pid as i32),
                    tgid: Some(pid as i32),
                    prio: PRIO,
                }),
            ),
            Some(ids::MIGRATE) => put(
                running[cpu as usize],
                Fe::SchedMigrateTask(proto::SchedMigrateTaskFtraceEvent {
                    comm: Some(comm(pid, cpu)),
                    pid: Some(pid as i32),
                    prio: PRIO,
                    orig_cpu: Some(a as i32),
                    dest_cpu: Some(b as i32),
                }),
            ),
            Some(ids::TICK) => {
                running[cpu as usize] = pid;
                if a != 0 {
                    put(pid, freq(a));
                }
            }
            Some(ids::FREQ_CHANGE) => put(running[cpu as usize], freq(a)),
            Some(ids::IDLE_ENTER) => put(running[cpu as usize], idle(a)),
            Some(ids::IDLE_EXIT) => put(running[cpu as usize], idle(IDLE_EXIT_STATE)),
            _ => {}
        }
    }
    out
}

struct Decoded {
    per_cpu: Vec<Vec<proto::FtraceEvent>>,
    processes: Vec<proto::process_tree::Process>,
    packets: usize,
    max_packet: usize,
}

fn decode(bytes: &[u8], ncpu: u32) -> Decoded {
    let trace = proto::Trace::decode(bytes).expect("the output decodes as a Trace");
    let mut d = Decoded { per_cpu: vec![Vec::new(); ncpu as usize], processes: vec![], packets: 0, max_packet: 0 };
    let mut seen_bundle = false;
    for p in trace.packet {
        d.packets += 1;
        d.max_packet = d.max_packet.max(p.encoded_len());
        assert_eq!(p.trusted_packet_sequence_id, Some(1));
        match (p.ftrace_events, p.process_tree) {
            (Some(b), None) => {
                seen_bundle = true;
                let cpu = b.cpu.expect("every bundle names its CPU");
                assert!(!b.event.is_empty());
                d.per_cpu[cpu as usize].extend(b.event);
            }
            (None, Some(tree)) => {
                assert!(!seen_bundle, "process names come before the events");
                d.processes.extend(tree.processes)
            }
            other => panic!("a packet carries one of ftrace_events or process_tree: {other:?}"),
        }
    }
    d
}

fn export(o: &common::Opts, w: Window) -> (Trace, Vec<CpuEvent>, Vec<u8>, perfetto::PerfettoSummary) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    let all = common::write(&p, o);
    let t = Trace::open(&p).unwrap();
    let mut buf = Vec::new();
    let s = perfetto::write(&t, w, &mut buf, "mem").unwrap();
    let evs = all.into_iter().filter(|e| w.contains(e.ev.ts)).collect();
    (t, evs, buf, s)
}

fn count(per_cpu: &[Vec<proto::FtraceEvent>], f: impl Fn(&Fe) -> bool) -> u64 {
    per_cpu.iter().flatten().filter(|e| f(e.event.as_ref().unwrap())).count() as u64
}

#[test]
fn every_event_with_frequency_derives_idle() {
    let o = common::Opts::default();
    let (t, evs, buf, s) = export(&o, Window::ALL);
    let d = decode(&buf, o.cpus);
    let want = expected(&t, &evs, true);
    assert_eq!(d.per_cpu.len(), want.len());
    for (cpu, (got, want)) in d.per_cpu.iter().zip(&want).enumerate() {
        assert_eq!(got.len(), want.len(), "CPU {cpu}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g, w, "CPU {cpu}, event {i}");
        }
    }
    let freq = count(&d.per_cpu, |e| matches!(e, Fe::CpuFrequency(_)));
    let idle = count(&d.per_cpu, |e| matches!(e, Fe::CpuIdle(_)));
    assert!(freq > 1000 && idle > 1000, "{freq} frequency samples, {idle} idle events");
    assert!(s.idle_derived);
    assert_eq!((s.freq_samples, s.idle_events), (freq, idle));
    assert_eq!(s.ftrace_events, d.per_cpu.iter().map(|v| v.len() as u64).sum::<u64>());
    assert_eq!(s.events_read, evs.len() as u64);
    // Events with no equivalent are counted by their file's names.
    for name in ["BLOCK", "RQ_SIZE", &format!("EVENT_{}", common::UNNAMED_ID)] {
        assert!(s.left_out.get(name).copied().unwrap_or(0) > 0, "{name} in {:?}", s.left_out);
    }
    // Streamed: many bundles, none larger than the flush size plus one event.
    assert!(d.packets > 4 * o.cpus as usize, "{} packets", d.packets);
    assert!(d.max_packet < perfetto::BUNDLE_BYTES + 512, "largest packet {} bytes", d.max_packet);
    // Every task is named.
    assert_eq!(d.processes.len(), t.processes().len());
    for p in &d.processes {
        let pid = p.pid.unwrap() as u32;
        assert_eq!(p.cmdline, vec![t.processes()[&pid].comm.clone()]);
        assert_eq!(p.ppid, Some(t.processes()[&pid].ppid as i32));
    }
}

#[test]
fn no_frequency_no_cpufreq_and_no_derived_idle() {
    let o = common::Opts { freq: false, seed: 11, ..Default::default() };
    let (t, evs, buf, s) = export(&o, Window::ALL);
    let d = decode(&buf, o.cpus);
    assert_eq!(d.per_cpu, expected(&t, &evs, false));
    assert_eq!(count(&d.per_cpu, |e| matches!(e, Fe::CpuFrequency(_) | Fe::CpuIdle(_))), 0);
    assert!(!s.idle_derived);
    assert!(count(&d.per_cpu, |e| matches!(e, Fe::SchedSwitch(_))) > 1000);
}

#[test]
fn recorded_idle_events_are_kept_and_none_derived() {
    let o = common::Opts { idle: true, seed: 5, ..Default::default() };
    let (t, evs, buf, s) = export(&o, Window::ALL);
    let d = decode(&buf, o.cpus);
    assert_eq!(d.per_cpu, expected(&t, &evs, false));
    assert!(!s.idle_derived);
    let recorded = evs
        .iter()
        .filter(|e| matches!(t.header.events.name(e.ev.id).as_str(), "IDLE_ENTER" | "IDLE_EXIT"))
        .count() as u64;
    assert!(recorded > 100);
    assert_eq!(count(&d.per_cpu, |e| matches!(e, Fe::CpuIdle(_))), recorded);
}

#[test]
fn renumbered_table_and_window() {
    let o = common::Opts { renumber: true, seed: 3, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    common::write(&p, &o);
    let t = Trace::open(&p).unwrap();
    let (a, b) = t.span().unwrap();
    let w = Window { from: a + (b - a) / 3, to: a + (b - a) / 2 };
    let (t, evs, buf, s) = export(&o, w);
    assert!(evs.len() > 1000 && evs.len() < 10_000);
    let d = decode(&buf, o.cpus);
    assert_eq!(d.per_cpu, expected(&t, &evs, true));
    assert_eq!(s.events_read, evs.len() as u64);
    for e in d.per_cpu.iter().flatten() {
        assert!(w.contains(e.timestamp.unwrap()));
    }
}

#[test]
fn unwritable_output_is_one_line_naming_it() {
    let o = common::Opts { steps: 100, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    common::write(&p, &o);
    let t = Trace::open(&p).unwrap();
    let out = dir.path().join("no-such-dir/out.pftrace");
    let e = perfetto::export(&t, Window::ALL, &out).unwrap_err().to_string();
    assert!(e.contains("no-such-dir/out.pftrace") && !e.contains('\n'), "{e}");
    assert!(!out.exists());
    // Writing over the trace being read is refused, and leaves it whole.
    let before = std::fs::read(&p).unwrap();
    let e = perfetto::export(&t, Window::ALL, &p).unwrap_err().to_string();
    assert!(e.contains("t.wct") && e.contains("another output"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
}
