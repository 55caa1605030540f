// SPDX-License-Identifier: GPL-2.0-only
//! The event record and the built-in event set.
//!
//! A record is SchedLog's 24-byte ring-buffer entry (Fork/wait, section 3.1):
//! an 8-byte timestamp in ns, a 4-byte pid, a 4-byte event id and an
//! 8-byte event-specific argument. The CPU is not stored: a record lives in its
//! CPU's stream.

use bytemuck::{Pod, Zeroable};

/// One event as stored on disk: 24 bytes, little-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, Default)]
pub struct Event {
    pub ts: u64,
    pub pid: u32,
    pub id: u32,
    pub arg: [u8; 8],
}

pub const EVENT_SIZE: usize = std::mem::size_of::<Event>();
const _: () = assert!(EVENT_SIZE == 24);

impl Event {
    // Inline across crates: the simulator makes one per event, and a call
    // returns it through memory, read back at once (a stall each time).
    #[inline]
    pub fn new(ts: u64, pid: u32, id: u32, a: u32, b: u32) -> Self {
        let mut arg = [0u8; 8];
        arg[..4].copy_from_slice(&a.to_le_bytes());
        arg[4..].copy_from_slice(&b.to_le_bytes());
        Event { ts, pid, id, arg }
    }

    /// An event whose argument is a task name, as EXEC's is.
    pub fn with_comm(ts: u64, pid: u32, id: u32, comm: &str) -> Self {
        let mut arg = [0u8; 8];
        let bytes = comm.as_bytes();
        let n = bytes.len().min(8);
        arg[..n].copy_from_slice(&bytes[..n]);
        Event { ts, pid, id, arg }
    }

    /// The low half of the argument.
    pub fn a(&self) -> u32 {
        u32::from_le_bytes(self.arg[..4].try_into().unwrap())
    }

    /// The high half of the argument.
    pub fn b(&self) -> u32 {
        u32::from_le_bytes(self.arg[4..].try_into().unwrap())
    }

    /// The argument read as up to 8 characters of a task name.
    pub fn comm(&self) -> String {
        let end = self.arg.iter().position(|&c| c == 0).unwrap_or(8);
        String::from_utf8_lossy(&self.arg[..end]).into_owned()
    }
}

/// An event together with the CPU whose stream it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuEvent {
    pub cpu: u32,
    pub ev: Event,
}

/// Events built by hand, as generators and tests build traces.
pub mod build {
    use super::{ids, CpuEvent, Event};

    pub fn event(cpu: u32, ts: u64, pid: u32, id: u32, a: u32, b: u32) -> CpuEvent {
        CpuEvent { cpu, ev: Event::new(ts, pid, id, a, b) }
    }

    /// CTX_SWITCH from `prev` (leaving in `state`, a `prev_state`) to `next`.
    pub fn switch(cpu: u32, ts: u64, prev: u32, next: u32, state: u32) -> CpuEvent {
        event(cpu, ts, prev, ids::CTX_SWITCH, next, state)
    }

    /// WAKEUP of `pid`, recorded on `cpu`, placed on `target`, by `waker`.
    pub fn wakeup(cpu: u32, ts: u64, pid: u32, target: u32, waker: u32) -> CpuEvent {
        event(cpu, ts, pid, ids::WAKEUP, target, waker)
    }

    /// FREQ_CHANGE of `cpu` to `khz`.
    pub fn freq(cpu: u32, ts: u64, khz: u32) -> CpuEvent {
        event(cpu, ts, 0, ids::FREQ_CHANGE, khz, 0)
    }
}

/// How a task left the CPU, carried in CTX_SWITCH's high argument.
pub mod prev_state {
    /// Preempted: still runnable, waits on this CPU's queue.
    pub const RUNNABLE: u32 = 0;
    pub const BLOCKED: u32 = 1;
    pub const BLOCKED_IO: u32 = 2;
    pub const DEAD: u32 = 3;
}

/// Nest membership carried in NEST_CHANGE's low argument.
pub mod nest {
    pub const NONE: u32 = 0;
    pub const RESERVE: u32 = 1;
    pub const PRIMARY: u32 = 2;
}

macro_rules! event_ids {
    ($( $(#[$doc:meta])* $name:ident = $id:expr ),* $(,)?) => {
        /// The ids warmcore's writers use. A file's own name table is the
        /// authority when reading: see `EventTable`.
        pub mod ids {
            $( $(#[$doc])* pub const $name: u32 = $id; )*
        }
        /// The built-in (id, name) pairs, in id order.
        pub const BUILTIN: &[(u32, &str)] = &[ $( ($id, stringify!($name)) ),* ];
    };
}

// SchedLog's event set (docs/papers.md, Fork/wait), then what the simulator and
// the schedulers know exactly. Argument layouts: `a` is the low u32, `b` the
// high u32 of the 8-byte argument.
event_ids! {
    /// pid execs; arg = first 8 bytes of the new comm.
    EXEC = 1,
    /// pid exits.
    EXIT = 2,
    /// pid is woken; a = target CPU, b = waker pid. On the waker's CPU.
    WAKEUP = 3,
    /// A new task pid is woken for the first time; a = target CPU, b = parent pid.
    WAKEUP_NEW = 4,
    /// pid blocks (sleeps).
    BLOCK = 5,
    /// pid blocks waiting for I/O.
    BLOCK_IO = 6,
    /// pid is created; a = parent pid.
    FORK = 7,
    /// pid waits for a child; a = the child's pid, 0 for any.
    WAIT_PID = 8,
    /// Scheduler tick while pid runs; a = frequency in kHz (0: unknown), b = need_resched.
    TICK = 9,
    /// pid leaves the CPU; a = next pid (0: idle), b = prev_state.
    CTX_SWITCH = 10,
    /// pid moves; a = old CPU, b = new CPU.
    MIGRATE = 11,
    /// Run-queue size changes; a = nr_running, b = delta (i32).
    RQ_SIZE = 12,
    IDLE_BALANCE_BEGIN = 13,
    IDLE_BALANCE_END = 14,
    PERIODIC_BALANCE_BEGIN = 15,
    PERIODIC_BALANCE_END = 16,
    /// pid waits on a futex; a = low 32 bits of the address.
    FUTEX_WAIT = 17,
    /// pid wakes a futex; a = low 32 bits of the address, b = tasks woken.
    FUTEX_WAKE = 18,
    /// The CPU's frequency changes; a = new frequency in kHz.
    FREQ_CHANGE = 19,
    /// The CPU enters an idle state; a = state index.
    IDLE_ENTER = 20,
    /// The CPU leaves its idle state.
    IDLE_EXIT = 21,
    /// The CPU's nest membership changes; a = nest::{NONE, RESERVE, PRIMARY}.
    NEST_CHANGE = 22,
    /// S_move timer armed for pid; a = CPU chosen first, b = CPU used instead.
    MOVE_TIMER_ARMED = 23,
    /// S_move timer expired for pid; a = CPU chosen first, b = 1 if migrated.
    MOVE_TIMER_FIRED = 24,
    /// S_move timer cancelled: pid was picked to run.
    MOVE_TIMER_CANCELLED = 25,
}

/// The name table of one file: id -> name. Ids not in the table are kept and
/// shown as `EVENT_<id>`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventTable {
    pub names: Vec<(u32, String)>,
}

impl Default for EventTable {
    fn default() -> Self {
        EventTable {
            names: BUILTIN.iter().map(|&(id, n)| (id, n.to_string())).collect(),
        }
    }
}

impl EventTable {
    pub fn name(&self, id: u32) -> String {
        self.names
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| format!("EVENT_{id}"))
    }

    /// The id a name has in this file, accepting `EVENT_<id>` for unnamed ids.
    pub fn id(&self, name: &str) -> Option<u32> {
        let upper = name.to_ascii_uppercase();
        self.names
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(&upper))
            .map(|(i, _)| *i)
            .or_else(|| upper.strip_prefix("EVENT_").and_then(|s| s.parse().ok()))
    }

    /// Map this file's id for a built-in event name to the file's own id,
    /// so that analysis works on files whose writers numbered events otherwise.
    pub fn builtin_to_file(&self, builtin_id: u32) -> Option<u32> {
        let name = BUILTIN.iter().find(|(i, _)| *i == builtin_id)?.1;
        self.id(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let e = Event::new(5, 7, ids::MIGRATE, 3, 9);
        assert_eq!((e.a(), e.b()), (3, 9));
        let c = Event::with_comm(1, 2, ids::EXEC, "configure-long");
        assert_eq!(c.comm(), "configur");
        assert_eq!(Event::with_comm(1, 2, ids::EXEC, "sh").comm(), "sh");
    }

    #[test]
    fn unknown_ids_have_names() {
        let t = EventTable { names: vec![(3, "WAKEUP".into()), (77, "CUSTOM".into())] };
        assert_eq!(t.name(77), "CUSTOM");
        assert_eq!(t.name(12), "EVENT_12");
        assert_eq!(t.id("event_12"), Some(12));
        assert_eq!(t.id("custom"), Some(77));
        assert_eq!(t.builtin_to_file(ids::WAKEUP), Some(3));
        assert_eq!(t.builtin_to_file(ids::EXEC), None);
    }
}
