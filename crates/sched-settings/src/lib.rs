// SPDX-License-Identifier: GPL-2.0-only
//! The settings of warmcore's sched_ext program (crates/sched/src/bpf), defined
//! once: names, defaults, ranges and help in [`Settings`], and their
//! translation to the program's `const volatile` globals in
//! [`Settings::globals`].
//!
//! Two loaders use it: `warmcore sched` (crates/sched), which puts the
//! globals in the program's `.rodata` before the kernel loads it, and the
//! simulator's `scx:NAME` (crates/sim/src/scx), which sets them in its host
//! build. `warmcore sched`'s options are the fields below; `scx:NAME`'s
//! parameters are the same options by a shorter key ([`Settings::from_params`]):
//! the option's name without its policy's prefix, and a `--nest-no-X` switch
//! as `X=off`. So `--smove-delay-us 50` is `scx:smove:delay_us=50` and
//! `--nest-no-reserve` is `scx:nest:reserve=off`, with the same defaults and
//! ranges, because they are the same definition.

use clap::{CommandFactory, Parser};

/// The most CPUs the program handles (intf.h's WC_MAX_CPUS; crates/sched's
/// tests check that they agree).
pub const MAX_CPUS: u32 = 1024;
/// The performance scale of scx_bpf_cpuperf_cur/set (the kernel's
/// SCHED_CAPACITY_SCALE, SCX_CPUPERF_ONE).
pub const CPUPERF_ONE: u32 = 1024;

/// The program's policies, numbered as intf.h's `enum wc_policy` (checked by
/// crates/sched's tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[repr(u32)]
pub enum Policy {
    /// sched_ext's built-in idle-CPU selection; each CPU's frequency target
    /// follows its utilisation, as under the fair class.
    Default = 0,
    /// S_local: the woken or forked task goes to the waker's CPU; frequency
    /// targets follow utilisation.
    Slocal = 1,
    /// S_move: the waker's CPU when the chosen CPU is slow, with a move
    /// timer; frequency targets follow utilisation.
    Smove = 2,
    /// Nest: primary and reserve nests, warm cores; primary-nest CPUs ask
    /// for the highest frequency, the others follow their utilisation.
    Nest = 3,
    /// Haiku's scheduler, low latency mode: a queue per core ordered by
    /// effective priority (Linux nice 0 is Haiku's normal priority 10, nice
    /// -20 is 20 and nice 19 is 1, SCHED_IDLE 1), penalties that cycle it,
    /// quanta of 2 ms at priority 10 bounded by 5 ms / waiting threads
    /// (at least 100 us); wake-ups spread over idle cores; frequency
    /// targets step toward a load of 550/1000. --slice-us and
    /// --slice-min-us do not apply.
    HaikuLowLatency = 4,
    /// Haiku's scheduler, power saving mode: as haiku-low-latency with
    /// quanta of 6 ms bounded by 20 ms / waiting threads (at least 500
    /// us); small tasks are packed on one core while it stays below a load
    /// of 700/1000, leaving the others idle.
    HaikuPowerSaving = 5,
    /// warm, warmcore's own (docs/warm.md): a woken task keeps its idle
    /// warm CPU, a forked one queues on its parent's (unless the set is
    /// held in polling; or takes its parent's previous child's), else the
    /// lowest idle CPU of the warm set (CPUs a task ran on in the last
    /// --warm-window-us), else any idle CPU. Frequency: while the warm set
    /// has at most --warm-perf-cpus CPUs, they ask for the highest
    /// performance (scx_bpf_cpuperf_set) until they leave it, a window
    /// after their last run, and so does a CPU that ran a task woken by a
    /// hand-off (a pipe's or socket's reader, SCX_WAKE_SYNC) in that
    /// window; a larger set's other CPUs and the rest follow their
    /// utilisation, so the governor lowers what is not used. Idle: while
    /// the set has at most --warm-poll-cpus CPUs, they are held in the
    /// polling idle state (PM QoS resume latency, restored at exit).
    Warm = 6,
}

impl Policy {
    /// Every policy, in intf.h's order.
    pub const ALL: [Policy; 7] = [
        Policy::Default,
        Policy::Slocal,
        Policy::Smove,
        Policy::Nest,
        Policy::HaikuLowLatency,
        Policy::HaikuPowerSaving,
        Policy::Warm,
    ];

    /// The number the program knows it by.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The name `--policy` and `scx:NAME` take.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Default => "default",
            Policy::Slocal => "slocal",
            Policy::Smove => "smove",
            Policy::Nest => "nest",
            Policy::HaikuLowLatency => "haiku-low-latency",
            Policy::HaikuPowerSaving => "haiku-power-saving",
            Policy::Warm => "warm",
        }
    }

    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// How Nest keeps the cores of its primary nest warm (Nest, section 3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NestWarm {
    /// Hold them in the polling idle state through their PM QoS resume
    /// latency, restored at exit (the default where the files exist).
    Pmqos,
    /// A spinning SCHED_IDLE thread per CPU that the scheduler runs on an
    /// idle primary core (each wake-up there then preempts it).
    Threads,
    /// Not at all.
    Off,
}

/// When the scheduler sets CPU performance targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FreqSteer {
    /// When some CPU's cpufreq governor is schedutil, the one that follows them.
    Auto,
    /// Always.
    On,
    /// Never: under schedutil every CPU then asks for its highest frequency.
    Off,
}

/// Where the program reads CPU frequencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[repr(u32)]
pub enum FreqSource {
    /// scx_bpf_cpuperf_cur() at each CPU's tick.
    Kernel = 0,
    /// A BPF map written by `warmcore sched freq set CPU KHZ`.
    Map = 1,
}

/// The options that reach the program: `warmcore sched`'s, and `scx:NAME`'s
/// parameters (see the crate's doc for their keys).
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct Settings {
    /// Placement policy.
    #[arg(long, value_enum, default_value = "default")]
    pub policy: Policy,
    /// Where CPU frequencies come from.
    #[arg(long, value_enum, default_value = "kernel")]
    pub freq_source: FreqSource,
    /// Time each operation (calls, total and mean time), shown with the stats.
    #[arg(long)]
    pub profile: bool,
    /// Set each CPU's performance target (scx_bpf_cpuperf_set), which the
    /// schedutil governor follows once a sched_ext scheduler runs: from the
    /// CPU's and its running task's utilisation, as the fair class computes
    /// it, or the maximum for nest's primary CPUs and warm's warm set.
    #[arg(long, value_enum, default_value = "auto")]
    pub freq_steer: FreqSteer,
    /// Longest slice, in microseconds (shrinks as tasks wait).
    #[arg(long, default_value_t = 5000, value_parser = warmcore_args::count::<u64>(100, 1_000_000))]
    pub slice_us: u64,
    /// Shortest slice, in microseconds.
    #[arg(long, default_value_t = 250, value_parser = warmcore_args::count::<u64>(10, 1_000_000))]
    pub slice_min_us: u64,
    /// smove: a CPU is at low frequency when at or below this (kHz); default:
    /// each CPU's minimum frequency; 0 disables the delay.
    #[arg(long, value_name = "KHZ", value_parser = warmcore_args::count::<u32>(0, u32::MAX as u64))]
    pub smove_threshold_khz: Option<u32>,
    /// smove: the timer delay D in microseconds (Fewer Cores, More Hertz, section 3.2).
    #[arg(long, default_value_t = 50, value_parser = warmcore_args::count::<u64>(1, 1_000_000))]
    pub smove_delay_us: u64,
    /// nest: P_remove, ticks before an idle primary core may be compacted.
    #[arg(long, default_value_t = 2, value_parser = warmcore_args::count::<u64>(0, 1_000_000))]
    pub nest_p_remove: u64,
    /// nest: R_max, the largest reserve nest.
    #[arg(long, default_value_t = 5, value_parser = warmcore_args::count::<u32>(0, MAX_CPUS as u64))]
    pub nest_r_max: u32,
    /// nest: R_impatient, misses of the previous core before a task is impatient.
    #[arg(long, default_value_t = 2, value_parser = warmcore_args::count::<u32>(0, 1_000_000))]
    pub nest_r_impatient: u32,
    /// nest: S_max, ticks a warmer keeps an idle primary core busy (0 counts as 1).
    #[arg(long, default_value_t = 2, value_parser = warmcore_args::count::<u64>(0, 1_000_000))]
    pub nest_s_max: u64,
    /// nest: no attached cores (section 3.3).
    #[arg(long)]
    pub nest_no_attach: bool,
    /// nest: no reserve nest (section 3.1).
    #[arg(long)]
    pub nest_no_reserve: bool,
    /// nest: no compaction of the primary nest (section 3.1).
    #[arg(long)]
    pub nest_no_compaction: bool,
    /// nest: no impatience (section 3.1).
    #[arg(long)]
    pub nest_no_impatience: bool,
    /// nest: no demotion of a core whose task exited (section 3.1).
    #[arg(long)]
    pub nest_no_exit_demote: bool,
    /// nest: search the nests in CPU order, not the task's die first (section 3.1).
    #[arg(long)]
    pub nest_no_die_first: bool,
    /// nest: fall back to the task's die only, not every die (section 3.4).
    #[arg(long)]
    pub nest_no_wc_dies: bool,
    /// nest: no placement claim flag (section 3.4).
    #[arg(long)]
    pub nest_no_claim: bool,
    /// nest: how idle primary cores are kept warm (section 3.2); default
    /// pmqos where /sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us
    /// exists, else threads.
    #[arg(long, value_enum)]
    pub nest_warm: Option<NestWarm>,
    /// nest: no fork hint (a forked child tries first the core of its
    /// parent's previous child, or the core its parent was forked from; a
    /// fork/wait chain then stays on two cores).
    #[arg(long)]
    pub nest_no_fork_hint: bool,
    /// warm: how long a CPU stays in the warm set after its last run, in
    /// microseconds.
    #[arg(long, default_value_t = 4000, value_parser = warmcore_args::count::<u64>(100, 1_000_000))]
    pub warm_window_us: u64,
    /// warm: a woken task does not keep its idle warm previous CPU first.
    #[arg(long)]
    pub warm_no_prev: bool,
    /// warm: a forked task is not queued on its parent's CPU (an idle CPU
    /// pulls it if the parent goes on running).
    #[arg(long)]
    pub warm_no_local: bool,
    /// warm: a forked task does not try its parent's previous child's CPU.
    #[arg(long)]
    pub warm_no_fork: bool,
    /// warm: no search of the warm set (the built-in selection after the
    /// previous CPU and the fork's).
    #[arg(long)]
    pub warm_no_compact: bool,
    /// warm: the search does not use every idle CPU of the task's die,
    /// cold ones included, before the other dies' (it then takes idle
    /// warm CPUs of any die before cold ones).
    #[arg(long)]
    pub warm_no_die: bool,
    /// warm: a forked task that finds no idle CPU queues on its parent's
    /// CPU (or its previous child's), not on the CPU with the fewest
    /// waiting tasks, and is queued on its parent's CPU even behind others.
    #[arg(long)]
    pub warm_no_fork_balance: bool,
    /// warm: a CPU that ran a task woken by a hand-off (a pipe's or a
    /// socket's reader woken by its writer, SCX_WAKE_SYNC) within the window
    /// does not ask for the highest performance when the set is larger
    /// than --warm-perf-cpus (it follows its utilisation).
    #[arg(long)]
    pub warm_no_handoff: bool,
    /// warm: a new task starts at the clock of virtual time, not a slice
    /// behind it.
    #[arg(long)]
    pub warm_no_fork_debit: bool,
    /// warm: the largest warm set whose CPUs ask for the highest
    /// performance (0: never; they follow their utilisation).
    #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(0, MAX_CPUS as u64))]
    pub warm_perf_cpus: u32,
    /// warm: the largest warm set whose CPUs are held in the polling idle
    /// state through their PM QoS resume latency, as Nest's primary nest
    /// (0: never; they use every idle state).
    #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(0, MAX_CPUS as u64))]
    pub warm_poll_cpus: u32,
}

/// Options that are no `scx:NAME` parameter: the policy is NAME, and the
/// simulator has no frequency map to write and no time of its own to profile.
const NOT_PARAMS: &[&str] = &["policy", "freq_source", "profile"];

/// What the translation to globals needs to know of the machine, read from
/// sysfs by `warmcore sched` and from the machine file by the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Possible CPU ids (the per-CPU arrays' length).
    pub nr_cpus: u32,
    /// Per CPU: its last-level cache (die).
    pub llc: Vec<u32>,
    /// Per CPU: its core, named by the core's lowest-numbered CPU;
    /// [`MAX_CPUS`] for a CPU offline (haiku's core searches skip it).
    pub core: Vec<u32>,
    /// Per CPU: its lowest frequency (kHz; 0 unknown).
    pub min_khz: Vec<u32>,
    /// Per CPU: the frequency at which scx_bpf_cpuperf_cur() reads
    /// [`CPUPERF_ONE`] for S_move's threshold, the base frequency where
    /// known (kHz; 0 unknown, which makes no CPU slow).
    pub reference_khz: Vec<u32>,
    /// Some CPU's cpufreq governor is schedutil (`--freq-steer auto`).
    pub schedutil: bool,
    /// The PM QoS resume latency files exist (`--nest-warm`'s default).
    pub pmqos: bool,
    /// The CPU the loader runs on, where Nest's reserve nest starts.
    pub loader_cpu: u32,
}

/// One value of a `const volatile` global of the program: element `index`
/// of an array, 0 for a scalar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    pub name: &'static str,
    pub index: u32,
    pub value: u64,
}

/// A parser of [`Settings`] alone, as `scx:NAME`'s parameters and the tests
/// use it.
#[derive(Parser)]
#[command(name = "scx", no_binary_name = true, allow_negative_numbers = true)]
struct Alone {
    #[command(flatten)]
    settings: Settings,
}

impl Default for Settings {
    fn default() -> Settings {
        Alone::try_parse_from(Vec::<String>::new()).expect("the defaults parse").settings
    }
}

/// One `scx:NAME` parameter: its key and the option it stands for.
#[derive(Clone, Debug)]
pub struct Param {
    pub key: String,
    /// The option's long name, without the dashes.
    pub long: String,
    /// A `--nest-no-X` switch, whose key says `X=on|off`.
    pub inverted: bool,
    /// Takes no value on the command line (a switch).
    pub switch: bool,
    pub help: String,
}

impl Settings {
    /// The scx:NAME parameters of `policy`: every option but the policy's
    /// name and the kernel-only ones, less those of other policies.
    pub fn params(policy: Policy) -> Vec<Param> {
        let cmd = Alone::command();
        let mut out = vec![];
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if NOT_PARAMS.contains(&id) || arg.get_long().is_none() {
                continue;
            }
            let (scope, rest) = match id.split_once('_') {
                Some((p @ ("smove" | "nest" | "warm"), rest)) => (Policy::from_name(p), rest),
                _ => (None, id),
            };
            if scope.is_some_and(|s| s != policy) {
                continue;
            }
            let switch = !arg.get_action().takes_values();
            let (inverted, key) = match rest.strip_prefix("no_") {
                Some(k) if switch => (true, k),
                _ => (false, rest),
            };
            out.push(Param {
                key: key.to_string(),
                long: arg.get_long().unwrap().to_string(),
                inverted,
                switch,
                help: arg.get_help().map(|h| h.to_string()).unwrap_or_default(),
            });
        }
        out
    }

    /// `scx:NAME:key=value,...`: the settings of policy NAME with those
    /// parameters, checked as `warmcore sched` checks its options. The error
    /// is one line naming the parameter and what it takes.
    pub fn from_params(name: &str, params: &[(String, String)]) -> Result<Settings, String> {
        let Some(policy) = Policy::from_name(name) else {
            return Err(format!(
                "unknown sched_ext policy 'scx:{name}'; valid: {}",
                Policy::ALL.iter().map(|p| format!("scx:{}", p.name())).collect::<Vec<_>>().join(", ")
            ));
        };
        let valid = Settings::params(policy);
        let cmd = Alone::command();
        let mut argv = vec!["--policy".to_string(), name.to_string()];
        for (k, v) in params {
            let Some(p) = valid.iter().find(|p| p.key == *k) else {
                return Err(format!(
                    "scx:{name} has no parameter '{k}'; valid: {}",
                    valid.iter().map(|p| p.key.as_str()).collect::<Vec<_>>().join(", ")
                ));
            };
            let bad = |what: String| format!("scx:{name}: {k}={v}: expected {what}");
            if p.switch {
                let on = on_off(v).ok_or_else(|| bad("on or off".into()))?;
                if on != p.inverted {
                    argv.push(format!("--{}", p.long));
                }
                continue;
            }
            let arg = cmd.get_arguments().find(|a| a.get_long() == Some(p.long.as_str())).expect("a parameter is an option");
            let choices: Vec<String> = arg.get_possible_values().iter().map(|c| c.get_name().to_string()).collect();
            // The on/off choices take the words a switch takes.
            let v = match on_off(v) {
                Some(on) if choices.iter().any(|c| c == "on") => (if on { "on" } else { "off" }).to_string(),
                _ => v.clone(),
            };
            if !choices.is_empty() && !choices.contains(&v) {
                return Err(bad(one_of(&choices)));
            }
            // The option's own parser, alone, so that its error is this parameter's.
            if let Err(e) = Alone::try_parse_from([format!("--{}", p.long), v.clone()]) {
                let why = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_else(|| e.kind().to_string());
                return Err(format!("scx:{name}: {k}={v}: {why}"));
            }
            argv.push(format!("--{}", p.long));
            argv.push(v);
        }
        let s = Alone::try_parse_from(&argv).map_err(|e| format!("scx:{name}: {}", e.kind()))?.settings;
        s.check().map_err(|e| format!("scx:{name}: {e}"))?;
        Ok(s)
    }

    /// What clap's per-option checks cannot see.
    pub fn check(&self) -> Result<(), String> {
        if self.slice_min_us > self.slice_us {
            return Err(format!(
                "the shortest slice ({} us) is above the longest ({} us): lower --slice-min-us (slice_min_us)",
                self.slice_min_us, self.slice_us
            ));
        }
        Ok(())
    }

    /// How Nest, or warm, keeps its cores warm on this machine (off for
    /// other policies; warm only through PM QoS, where the files exist).
    pub fn warm(&self, topo: &Topology) -> NestWarm {
        match self.nest_warm {
            _ if self.policy == Policy::Warm && self.warm_poll_cpus > 0 && topo.pmqos => NestWarm::Pmqos,
            _ if self.policy != Policy::Nest => NestWarm::Off,
            Some(m) => m,
            None if topo.pmqos => NestWarm::Pmqos,
            None => NestWarm::Threads,
        }
    }

    /// Whether the loader holds `cpu` in polling now, from the program's
    /// `pmqos_hold` mark of it and its `nr_warm`: Nest's primary nest, warm's
    /// warm set while it is small (a larger one is a parallel load, whose
    /// idle CPUs may sleep deep).
    pub fn holds(&self, marked: bool, nr_warm: u64) -> bool {
        marked && (self.policy != Policy::Warm || nr_warm <= self.warm_poll_cpus as u64)
    }

    /// Whether the program sets performance targets on this machine.
    pub fn steers(&self, topo: &Topology) -> bool {
        match self.freq_steer {
            FreqSteer::On => true,
            FreqSteer::Off => false,
            FreqSteer::Auto => topo.schedutil,
        }
    }

    /// Every global the loader sets before the program loads, in order.
    pub fn globals(&self, topo: &Topology) -> Vec<Global> {
        let mut g = vec![];
        let mut set = |name: &'static str, index: u32, value: u64| g.push(Global { name, index, value });
        set("nr_cpus", 0, topo.nr_cpus as u64);
        set("policy", 0, self.policy.id() as u64);
        set("freq_source", 0, self.freq_source as u64);
        set("profile", 0, self.profile as u64);
        set("freq_steer", 0, self.steers(topo) as u64);
        set("slice_max_ns", 0, self.slice_us * 1000);
        set("slice_min_ns", 0, self.slice_min_us * 1000);
        for cpu in 0..topo.nr_cpus {
            let c = cpu as usize;
            set("cpu_llc", cpu, topo.llc[c] as u64);
            set("cpu_core", cpu, topo.core[c] as u64);
            let khz = self.smove_threshold_khz.unwrap_or(topo.min_khz[c]);
            set("smove_threshold_khz", cpu, khz as u64);
            set("smove_threshold_perf", cpu, smove_threshold_perf(khz, topo.reference_khz[c]) as u64);
        }
        set("smove_delay_ns", 0, self.smove_delay_us * 1000);
        set("nest_p_remove_ticks", 0, self.nest_p_remove);
        set("nest_r_max", 0, self.nest_r_max as u64);
        set("nest_r_impatient", 0, self.nest_r_impatient as u64);
        set("nest_s_max_ticks", 0, self.nest_s_max.max(1));
        set("nest_reserve_start", 0, topo.loader_cpu as u64);
        set("nest_attach", 0, !self.nest_no_attach as u64);
        set("nest_reserve", 0, !self.nest_no_reserve as u64);
        set("nest_compaction", 0, !self.nest_no_compaction as u64);
        set("nest_impatience", 0, !self.nest_no_impatience as u64);
        set("nest_exit_demote", 0, !self.nest_no_exit_demote as u64);
        set("nest_die_first", 0, !self.nest_no_die_first as u64);
        set("nest_wc_dies", 0, !self.nest_no_wc_dies as u64);
        set("nest_claim", 0, !self.nest_no_claim as u64);
        set("nest_warm", 0, (self.warm(topo) == NestWarm::Threads) as u64);
        set("nest_fork_hint", 0, !self.nest_no_fork_hint as u64);
        set("warm_window_ns", 0, self.warm_window_us * 1000);
        set("warm_prev", 0, !self.warm_no_prev as u64);
        set("warm_local", 0, !self.warm_no_local as u64);
        set("warm_fork", 0, !self.warm_no_fork as u64);
        set("warm_compact", 0, !self.warm_no_compact as u64);
        set("warm_die", 0, !self.warm_no_die as u64);
        set("warm_fork_balance", 0, !self.warm_no_fork_balance as u64);
        set("warm_handoff", 0, !self.warm_no_handoff as u64);
        set("warm_fork_debit", 0, !self.warm_no_fork_debit as u64);
        set("warm_perf_cpus", 0, self.warm_perf_cpus as u64);
        let held = self.warm(topo) == NestWarm::Pmqos;
        set("warm_poll_cpus", 0, if held { self.warm_poll_cpus as u64 } else { 0 });
        g
    }
}

/// S_move's threshold of `khz` on the scale of scx_bpf_cpuperf_cur
/// ([`CPUPERF_ONE`] at `reference_khz`); 0 when the reference is unknown.
/// The kernel's measure is relative to a turbo frequency at or above the
/// base one: dividing by the base frequency counts a CPU at the threshold as
/// low whatever that turbo frequency is (docs/model.md, S_move in the
/// scheduler).
pub fn smove_threshold_perf(khz: u32, reference_khz: u32) -> u32 {
    if reference_khz == 0 {
        return 0;
    }
    (khz as u64 * CPUPERF_ONE as u64 / reference_khz as u64).min(u32::MAX as u64) as u32
}

fn on_off(v: &str) -> Option<bool> {
    match v {
        "on" | "true" | "1" | "" => Some(true),
        "off" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// "a, b or c".
fn one_of(choices: &[String]) -> String {
    match choices {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn cli(args: &[&str]) -> Settings {
        Alone::try_parse_from(args).unwrap().settings
    }

    #[test]
    fn a_parameter_is_the_option_it_names() {
        assert_eq!(
            Settings::from_params("smove", &params(&[("delay_us", "100"), ("threshold_khz", "1200000")])).unwrap(),
            cli(&["--policy", "smove", "--smove-delay-us", "100", "--smove-threshold-khz", "1200000"])
        );
        assert_eq!(
            Settings::from_params("nest", &params(&[("reserve", "off"), ("attach", "on"), ("warm", "threads"), ("r_max", "3")]))
                .unwrap(),
            cli(&["--policy", "nest", "--nest-no-reserve", "--nest-warm", "threads", "--nest-r-max", "3"])
        );
        assert_eq!(
            Settings::from_params("default", &params(&[("freq_steer", "false")])).unwrap(),
            cli(&["--freq-steer", "off"])
        );
    }

    #[test]
    fn every_option_but_three_is_a_parameter_of_some_policy() {
        let mut keys: Vec<String> =
            Policy::ALL.iter().flat_map(|&p| Settings::params(p)).map(|p| p.long).collect();
        keys.sort();
        keys.dedup();
        let cmd = Alone::command();
        let options = cmd.get_arguments().filter(|a| a.get_long().is_some()).count();
        assert_eq!(keys.len() + NOT_PARAMS.len(), options, "{keys:?}");
        // Policy-specific ones only where they apply.
        let default: Vec<String> = Settings::params(Policy::Default).into_iter().map(|p| p.key).collect();
        assert_eq!(default, ["freq_steer", "slice_us", "slice_min_us"]);
    }

    #[test]
    fn bad_parameters_get_one_line_naming_them() {
        let e = Settings::from_params("nest", &params(&[("spin", "off")])).unwrap_err();
        assert!(e.starts_with("scx:nest has no parameter 'spin'; valid: ") && e.contains("reserve"), "{e}");
        let e = Settings::from_params("default", &params(&[("delay_us", "5")])).unwrap_err();
        assert!(e.contains("no parameter 'delay_us'"), "{e}");
        let e = Settings::from_params("smove", &params(&[("delay_us", "0")])).unwrap_err();
        assert_eq!(e, "scx:smove: delay_us=0: too small: give a whole number from 1 to 1000000");
        let e = Settings::from_params("nest", &params(&[("warm", "hot")])).unwrap_err();
        assert_eq!(e, "scx:nest: warm=hot: expected pmqos, threads or off");
        let e = Settings::from_params("nest", &params(&[("claim", "maybe")])).unwrap_err();
        assert_eq!(e, "scx:nest: claim=maybe: expected on or off");
        let e = Settings::from_params("default", &params(&[("slice_us", "200"), ("slice_min_us", "300")])).unwrap_err();
        assert!(e.contains("slice"), "{e}");
        let e = Settings::from_params("cfs", &[]).unwrap_err();
        assert!(e.contains("scx:haiku-power-saving"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn globals_follow_the_topology() {
        let topo = Topology {
            nr_cpus: 2,
            llc: vec![0, 1],
            core: vec![0, MAX_CPUS],
            min_khz: vec![800_000, 1_000_000],
            reference_khz: vec![2_000_000, 0],
            schedutil: false,
            pmqos: false,
            loader_cpu: 1,
        };
        let s = Settings { policy: Policy::Nest, ..Settings::default() };
        let g = s.globals(&topo);
        let get = |n: &str, i: u32| g.iter().find(|x| x.name == n && x.index == i).unwrap().value;
        assert_eq!(get("smove_threshold_khz", 0), 800_000);
        assert_eq!(get("smove_threshold_perf", 0), 409);
        assert_eq!(get("smove_threshold_perf", 1), 0);
        assert_eq!(get("cpu_core", 1), MAX_CPUS as u64);
        assert_eq!(get("freq_steer", 0), 0);
        // No PM QoS files: warmer threads.
        assert_eq!(get("nest_warm", 0), 1);
        assert_eq!(get("nest_reserve_start", 0), 1);
        assert_eq!(get("policy", 0), 3);
        let on = Settings { freq_steer: FreqSteer::Auto, ..s.clone() }.globals(&Topology { schedutil: true, ..topo.clone() });
        assert!(on.contains(&Global { name: "freq_steer", index: 0, value: 1 }));
        // S_max 0 counts as 1.
        let s0 = Settings { nest_s_max: 0, ..s };
        assert!(s0.globals(&topo).contains(&Global { name: "nest_s_max_ticks", index: 0, value: 1 }));
    }
}
