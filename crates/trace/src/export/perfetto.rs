// SPDX-License-Identifier: GPL-2.0-only
//! Perfetto export: a protobuf `Trace` of `TracePacket`s as the Perfetto UI
//! and trace processor read them.
//!
//! Scheduling events become ftrace events in one `FtraceEventBundle` per CPU
//! and flush, as the kernel's ftrace data source writes them, so that the UI
//! draws its native CPU scheduling tracks. Frequencies (TICK, FREQ_CHANGE)
//! become `cpu_frequency` events and idle periods (IDLE_ENTER, IDLE_EXIT)
//! `cpu_idle` events: the UI's per-CPU cpufreq and cpuidle counter tracks.
//! The UI draws cpufreq only next to cpuidle data, so a trace with
//! frequencies but no idle events gets `cpu_idle` events derived from the
//! switches to and from the idle task (pid 0).
//!
//! Timestamps are the `.wct` file's own, in ns, unchanged. The trace has no
//! clock snapshot, so Perfetto takes them as its default clock (boot time).
//!
//! Memory: events are encoded as they are read into one byte buffer per CPU,
//! written out as a packet when the buffer reaches [`BUNDLE_BYTES`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use prost::Message;

use super::{BuiltinMap, LeftOut};
use crate::error::{Result, TraceError};
use crate::event::{ids, prev_state, Event};
use crate::reader::{Trace, Window};

/// Perfetto's messages, written by hand with the field numbers of Perfetto's
/// own definitions (protos/perfetto/trace/trace.proto, trace_packet.proto,
/// ftrace/ftrace_event_bundle.proto, ftrace/ftrace_event.proto, sched.proto,
/// task.proto, power.proto, ps/process_tree.proto). Only the fields the
/// exporter writes are declared; Perfetto's messages are proto2, so every
/// scalar is `optional` and written even when zero.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<TracePacket>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacket {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        // The two members of TracePacket's `data` oneof the exporter uses.
        #[prost(message, optional, tag = "1")]
        pub ftrace_events: Option<FtraceEventBundle>,
        #[prost(message, optional, tag = "2")]
        pub process_tree: Option<ProcessTree>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FtraceEventBundle {
        #[prost(uint32, optional, tag = "1")]
        pub cpu: Option<u32>,
        #[prost(message, repeated, tag = "2")]
        pub event: Vec<FtraceEvent>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FtraceEvent {
        #[prost(uint64, optional, tag = "1")]
        pub timestamp: Option<u64>,
        /// The task running on the CPU that recorded the event (common_pid).
        #[prost(uint32, optional, tag = "2")]
        pub pid: Option<u32>,
        #[prost(oneof = "ftrace_event::Event", tags = "4, 11, 13, 20, 114, 235, 236, 238, 491")]
        pub event: Option<ftrace_event::Event>,
    }

    pub mod ftrace_event {
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Event {
            #[prost(message, tag = "4")]
            SchedSwitch(super::SchedSwitchFtraceEvent),
            #[prost(message, tag = "11")]
            CpuFrequency(super::CpuFrequencyFtraceEvent),
            #[prost(message, tag = "13")]
            CpuIdle(super::CpuIdleFtraceEvent),
            #[prost(message, tag = "20")]
            SchedWaking(super::SchedWakingFtraceEvent),
            #[prost(message, tag = "114")]
            SchedWakeupNew(super::SchedWakingFtraceEvent),
            #[prost(message, tag = "235")]
            TaskNewtask(super::TaskNewtaskFtraceEvent),
            #[prost(message, tag = "236")]
            TaskRename(super::TaskRenameFtraceEvent),
            #[prost(message, tag = "238")]
            SchedProcessExit(super::SchedProcessExitFtraceEvent),
            #[prost(message, tag = "491")]
            SchedMigrateTask(super::SchedMigrateTaskFtraceEvent),
        }
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchedSwitchFtraceEvent {
        #[prost(string, optional, tag = "1")]
        pub prev_comm: Option<String>,
        #[prost(int32, optional, tag = "2")]
        pub prev_pid: Option<i32>,
        #[prost(int32, optional, tag = "3")]
        pub prev_prio: Option<i32>,
        #[prost(int64, optional, tag = "4")]
        pub prev_state: Option<i64>,
        #[prost(string, optional, tag = "5")]
        pub next_comm: Option<String>,
        #[prost(int32, optional, tag = "6")]
        pub next_pid: Option<i32>,
        #[prost(int32, optional, tag = "7")]
        pub next_prio: Option<i32>,
    }

    /// SchedWakingFtraceEvent; SchedWakeupNewFtraceEvent has the same fields.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchedWakingFtraceEvent {
        #[prost(string, optional, tag = "1")]
        pub comm: Option<String>,
        #[prost(int32, optional, tag = "2")]
        pub pid: Option<i32>,
        #[prost(int32, optional, tag = "3")]
        pub prio: Option<i32>,
        #[prost(int32, optional, tag = "4")]
        pub success: Option<i32>,
        #[prost(int32, optional, tag = "5")]
        pub target_cpu: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CpuFrequencyFtraceEvent {
        /// kHz.
        #[prost(uint32, optional, tag = "1")]
        pub state: Option<u32>,
        #[prost(uint32, optional, tag = "2")]
        pub cpu_id: Option<u32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CpuIdleFtraceEvent {
        /// The idle state entered, or [`super::IDLE_EXIT_STATE`] on exit.
        #[prost(uint32, optional, tag = "1")]
        pub state: Option<u32>,
        #[prost(uint32, optional, tag = "2")]
        pub cpu_id: Option<u32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TaskNewtaskFtraceEvent {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, optional, tag = "2")]
        pub comm: Option<String>,
        #[prost(uint64, optional, tag = "3")]
        pub clone_flags: Option<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TaskRenameFtraceEvent {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, optional, tag = "2")]
        pub oldcomm: Option<String>,
        #[prost(string, optional, tag = "3")]
        pub newcomm: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchedProcessExitFtraceEvent {
        #[prost(string, optional, tag = "1")]
        pub comm: Option<String>,
        #[prost(int32, optional, tag = "2")]
        pub pid: Option<i32>,
        #[prost(int32, optional, tag = "3")]
        pub tgid: Option<i32>,
        #[prost(int32, optional, tag = "4")]
        pub prio: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchedMigrateTaskFtraceEvent {
        #[prost(string, optional, tag = "1")]
        pub comm: Option<String>,
        #[prost(int32, optional, tag = "2")]
        pub pid: Option<i32>,
        #[prost(int32, optional, tag = "3")]
        pub prio: Option<i32>,
        #[prost(int32, optional, tag = "4")]
        pub orig_cpu: Option<i32>,
        #[prost(int32, optional, tag = "5")]
        pub dest_cpu: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProcessTree {
        #[prost(message, repeated, tag = "1")]
        pub processes: Vec<process_tree::Process>,
    }

    pub mod process_tree {
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Process {
            #[prost(int32, optional, tag = "1")]
            pub pid: Option<i32>,
            #[prost(int32, optional, tag = "2")]
            pub ppid: Option<i32>,
            #[prost(string, repeated, tag = "3")]
            pub cmdline: Vec<String>,
            #[prost(bool, optional, tag = "9")]
            pub cmdline_is_comm: Option<bool>,
        }
    }
}

use proto::ftrace_event::Event as Fe;

/// cpu_idle's state on leaving idle: the kernel's PWR_EVENT_EXIT, (u32)-1.
pub const IDLE_EXIT_STATE: u32 = u32::MAX;
/// Priority given to every task: the trace records none, and 120 is the
/// kernel's priority of a nice-0 task (and of the idle task).
pub const DEFAULT_PRIO: i32 = 120;
/// A CPU's encoded events are written out as one bundle at this size.
pub const BUNDLE_BYTES: usize = 32 << 10;
/// Processes per ProcessTree packet.
const PROCESSES_PER_PACKET: usize = 1024;
/// The packet sequence every packet is written on.
const SEQUENCE_ID: u32 = 1;

/// Linux's sched_switch prev_state bits (include/linux/sched.h): S, D, and
/// EXIT_DEAD, which has the same value in every kernel's report format.
fn kernel_prev_state(s: u32) -> i64 {
    match s {
        prev_state::BLOCKED => 0x1,
        prev_state::BLOCKED_IO => 0x2,
        prev_state::DEAD => 0x10,
        _ => 0, // RUNNABLE (preempted), and values this exporter does not know
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfettoSummary {
    /// Events read from the trace (in the window).
    pub events_read: u64,
    /// Ftrace events written, derived ones included.
    pub ftrace_events: u64,
    /// cpu_frequency events written.
    pub freq_samples: u64,
    /// cpu_idle events written.
    pub idle_events: u64,
    /// True when cpu_idle events were derived from switches to the idle task.
    pub idle_derived: bool,
    /// Processes named in ProcessTree packets.
    pub processes: u64,
    pub packets: u64,
    /// Events with no Perfetto equivalent, by name.
    pub left_out: LeftOut,
}

/// Export the events of `t` in `w` to a new Perfetto trace at `out`. On
/// failure the partial output is removed.
pub fn export(t: &Trace, w: Window, out: &Path) -> Result<PerfettoSummary> {
    super::with_output(t.path(), out, |f: File, name| write(t, w, f, name))
}

/// Write the events of `t` in `w` as a Perfetto trace to `out`, called
/// `name` in errors.
pub fn write<W: Write>(t: &Trace, w: Window, out: W, name: &str) -> Result<PerfettoSummary> {
    let map = BuiltinMap::new(&t.header.events);
    let (has_freq, has_idle) = scan(t, w, &map)?;
    let mut x = Exporter {
        t,
        map,
        out: BufWriter::with_capacity(1 << 20, out),
        name: name.to_string(),
        bufs: vec![Vec::new(); t.nr_cpus() as usize],
        renamed: HashMap::new(),
        running: vec![0; t.nr_cpus() as usize],
        derive_idle: has_freq && !has_idle,
        sum: PerfettoSummary { idle_derived: has_freq && !has_idle, ..Default::default() },
        scratch: Vec::new(),
    };
    x.process_tree(w)?;
    for e in t.events(None, w) {
        let e = e?;
        x.event(e.cpu, &e.ev)?;
    }
    for cpu in 0..t.nr_cpus() {
        x.flush_cpu(cpu)?;
    }
    x.out.flush().map_err(|e| TraceError::io(&x.name, e).writing())?;
    Ok(x.sum)
}

/// Whether the window has frequency data, and idle events.
fn scan(t: &Trace, w: Window, map: &BuiltinMap) -> Result<(bool, bool)> {
    let mut has_freq = false;
    for cpu in 0..t.nr_cpus() {
        for ev in t.cpu_events(cpu, w) {
            let ev = ev?;
            match map.get(ev.id) {
                Some(ids::IDLE_ENTER | ids::IDLE_EXIT) => return Ok((has_freq, true)),
                Some(ids::FREQ_CHANGE) => has_freq = true,
                Some(ids::TICK) if ev.a() != 0 => has_freq = true,
                _ => {}
            }
        }
    }
    Ok((has_freq, false))
}

struct Exporter<'a, W: Write> {
    t: &'a Trace,
    map: BuiltinMap,
    out: BufWriter<W>,
    name: String,
    /// Each CPU's encoded FtraceEvents (bundle field 2), not yet written.
    bufs: Vec<Vec<u8>>,
    /// Names given by EXEC events seen so far that differ from the process
    /// table's; other tasks go by the table's name.
    renamed: HashMap<u32, String>,
    /// The task each CPU last switched to (or ticked in).
    running: Vec<u32>,
    derive_idle: bool,
    sum: PerfettoSummary,
    scratch: Vec<u8>,
}

impl<W: Write> Exporter<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| TraceError::io(&self.name, e).writing())
    }

    /// Write one `Trace.packet` field: its key, length and the packet's
    /// body given as pieces.
    fn packet(&mut self, parts: &[&[u8]]) -> Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut head = vec![(1 << 3) | 2]; // Trace.packet, length-delimited
        prost::encode_length_delimiter(len, &mut head).expect("a Vec grows");
        self.put(&head)?;
        for p in parts {
            self.put(p)?;
        }
        self.sum.packets += 1;
        Ok(())
    }

    /// The name of `pid` now: its latest EXEC's, or the process table's.
    fn comm(&self, pid: u32, cpu: u32) -> String {
        if pid == 0 {
            return format!("swapper/{cpu}");
        }
        if let Some(c) = self.renamed.get(&pid) {
            return c.clone();
        }
        self.t.comm(pid).map(str::to_string).unwrap_or_default()
    }

    /// ProcessTree packets naming every process of the process table (all
    /// of them, whatever the window: importers may not know when a process
    /// was first and last seen), [`PROCESSES_PER_PACKET`] at a time.
    fn process_tree(&mut self, w: Window) -> Result<()> {
        let ts = w.from.max(self.t.span().map(|s| s.0).unwrap_or(0));
        let t = self.t;
        let mut procs = t.processes().values().filter(|p| p.pid != 0).peekable();
        while procs.peek().is_some() {
            let chunk: Vec<proto::process_tree::Process> = procs
                .by_ref()
                .take(PROCESSES_PER_PACKET)
                .map(|p| proto::process_tree::Process {
                    pid: Some(p.pid as i32),
                    ppid: Some(p.ppid as i32),
                    cmdline: if p.comm.is_empty() { vec![] } else { vec![p.comm.clone()] },
                    cmdline_is_comm: Some(true),
                })
                .collect();
            self.sum.processes += chunk.len() as u64;
            let p = proto::TracePacket {
                timestamp: Some(ts),
                trusted_packet_sequence_id: Some(SEQUENCE_ID),
                process_tree: Some(proto::ProcessTree { processes: chunk }),
                ftrace_events: None,
            };
            self.packet(&[&p.encode_to_vec()])?;
        }
        Ok(())
    }

    /// Add one ftrace event to `cpu`'s bundle.
    fn emit(&mut self, cpu: u32, ts: u64, pid: u32, ev: Fe) -> Result<()> {
        match ev {
            Fe::CpuFrequency(_) => self.sum.freq_samples += 1,
            Fe::CpuIdle(_) => self.sum.idle_events += 1,
            _ => {}
        }
        let fe = proto::FtraceEvent { timestamp: Some(ts), pid: Some(pid), event: Some(ev) };
        let buf = &mut self.bufs[cpu as usize];
        buf.push((2 << 3) | 2); // FtraceEventBundle.event, length-delimited
        fe.encode_length_delimited(buf).expect("a Vec grows");
        self.sum.ftrace_events += 1;
        if buf.len() >= BUNDLE_BYTES {
            self.flush_cpu(cpu)?;
        }
        Ok(())
    }

    /// Write `cpu`'s pending events as one FtraceEventBundle packet.
    fn flush_cpu(&mut self, cpu: u32) -> Result<()> {
        let events = std::mem::take(&mut self.bufs[cpu as usize]);
        if events.is_empty() {
            self.bufs[cpu as usize] = events;
            return Ok(());
        }
        let seq = proto::TracePacket { trusted_packet_sequence_id: Some(SEQUENCE_ID), ..Default::default() };
        let cpu_field = proto::FtraceEventBundle { cpu: Some(cpu), event: vec![] }.encode_to_vec();
        let mut head = std::mem::take(&mut self.scratch);
        head.clear();
        seq.encode(&mut head).expect("a Vec grows");
        head.push((1 << 3) | 2); // TracePacket.ftrace_events, length-delimited
        prost::encode_length_delimiter(cpu_field.len() + events.len(), &mut head).expect("a Vec grows");
        head.extend_from_slice(&cpu_field);
        let r = self.packet(&[&head, &events]);
        self.scratch = head;
        let mut events = events;
        events.clear();
        self.bufs[cpu as usize] = events;
        r
    }

    fn event(&mut self, cpu: u32, ev: &Event) -> Result<()> {
        self.sum.events_read += 1;
        let (ts, pid, a, b) = (ev.ts, ev.pid, ev.a(), ev.b());
        let Some(id) = self.map.get(ev.id) else {
            *self.sum.left_out.entry(self.t.header.events.name(ev.id)).or_default() += 1;
            return Ok(());
        };
        match id {
            ids::CTX_SWITCH => {
                // The kernel leaves idle before it switches to a task, and
                // enters idle after it switched to the idle task.
                if self.derive_idle && pid == 0 && a != 0 {
                    self.emit(cpu, ts, pid, idle(IDLE_EXIT_STATE, cpu))?;
                }
                let sw = proto::SchedSwitchFtraceEvent {
                    prev_comm: Some(self.comm(pid, cpu)),
                    prev_pid: Some(pid as i32),
                    prev_prio: Some(DEFAULT_PRIO),
                    prev_state: Some(kernel_prev_state(b)),
                    next_comm: Some(self.comm(a, cpu)),
                    next_pid: Some(a as i32),
                    next_prio: Some(DEFAULT_PRIO),
                };
                self.emit(cpu, ts, pid, Fe::SchedSwitch(sw))?;
                self.running[cpu as usize] = a;
                if self.derive_idle && a == 0 && pid != 0 {
                    self.emit(cpu, ts, 0, idle(0, cpu))?;
                }
            }
            ids::WAKEUP | ids::WAKEUP_NEW => {
                let wk = proto::SchedWakingFtraceEvent {
                    comm: Some(self.comm(pid, cpu)),
                    pid: Some(pid as i32),
                    prio: Some(DEFAULT_PRIO),
                    success: Some(1),
                    target_cpu: Some(a as i32),
                };
                let fe = if id == ids::WAKEUP { Fe::SchedWaking(wk) } else { Fe::SchedWakeupNew(wk) };
                // Recorded on the waker's (parent's) CPU, by the waker.
                self.emit(cpu, ts, b, fe)?;
            }
            ids::FORK => {
                // clone_flags 0: the trace does not tell threads from
                // processes, and every task is a process in the ProcessTree.
                let nt = proto::TaskNewtaskFtraceEvent {
                    pid: Some(pid as i32),
                    comm: Some(self.comm(pid, cpu)),
                    clone_flags: Some(0),
                };
                self.emit(cpu, ts, a, Fe::TaskNewtask(nt))?;
            }
            ids::EXEC => {
                let old = self.comm(pid, cpu);
                let short = ev.comm();
                // EXEC carries 8 bytes of the name: take the table's whole
                // name when it begins with them.
                let new = match self.t.comm(pid) {
                    Some(full) if full.starts_with(&short) => full.to_string(),
                    _ => short,
                };
                // Only names the table does not give are kept, so that this
                // map stays small.
                if self.t.comm(pid) == Some(new.as_str()) {
                    self.renamed.remove(&pid);
                } else {
                    self.renamed.insert(pid, new.clone());
                }
                let rn = proto::TaskRenameFtraceEvent { pid: Some(pid as i32), oldcomm: Some(old), newcomm: Some(new) };
                self.emit(cpu, ts, pid, Fe::TaskRename(rn))?;
            }
            ids::EXIT => {
                let ex = proto::SchedProcessExitFtraceEvent {
                    comm: Some(self.comm(pid, cpu)),
                    pid: Some(pid as i32),
                    tgid: Some(pid as i32),
                    prio: Some(DEFAULT_PRIO),
                };
                self.emit(cpu, ts, pid, Fe::SchedProcessExit(ex))?;
            }
            ids::MIGRATE => {
                let mg = proto::SchedMigrateTaskFtraceEvent {
                    comm: Some(self.comm(pid, cpu)),
                    pid: Some(pid as i32),
                    prio: Some(DEFAULT_PRIO),
                    orig_cpu: Some(a as i32),
                    dest_cpu: Some(b as i32),
                };
                let cur = self.running[cpu as usize];
                self.emit(cpu, ts, cur, Fe::SchedMigrateTask(mg))?;
            }
            ids::TICK => {
                self.running[cpu as usize] = pid;
                if a != 0 {
                    self.emit(cpu, ts, pid, freq(a, cpu))?;
                } else {
                    *self.sum.left_out.entry("TICK (no frequency)".into()).or_default() += 1;
                }
            }
            ids::FREQ_CHANGE => {
                let cur = self.running[cpu as usize];
                self.emit(cpu, ts, cur, freq(a, cpu))?;
            }
            ids::IDLE_ENTER => {
                let cur = self.running[cpu as usize];
                self.emit(cpu, ts, cur, idle(a, cpu))?;
            }
            ids::IDLE_EXIT => {
                let cur = self.running[cpu as usize];
                self.emit(cpu, ts, cur, idle(IDLE_EXIT_STATE, cpu))?;
            }
            _ => {
                *self.sum.left_out.entry(self.t.header.events.name(ev.id)).or_default() += 1;
            }
        }
        Ok(())
    }
}

fn freq(khz: u32, cpu: u32) -> Fe {
    Fe::CpuFrequency(proto::CpuFrequencyFtraceEvent { state: Some(khz), cpu_id: Some(cpu) })
}

fn idle(state: u32, cpu: u32) -> Fe {
    Fe::CpuIdle(proto::CpuIdleFtraceEvent { state: Some(state), cpu_id: Some(cpu) })
}
