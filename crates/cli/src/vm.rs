// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore vm` and `warmcore vm workload`: the command line of the VM
//! runner and its in-guest workloads, which live in warmcore-vm.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use warmcore_vm::workload::Workload as Run;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct VmArgs {
    #[command(subcommand)]
    sub: Option<VmSub>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum VmSub {
    /// Boot the VM and run COMMAND inside (the default).
    Run(RunArgs),
    /// Fetch (once) and print the cached kernel image.
    Kernel {
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// Build (once) the loaders of the scx schedulers that peers/Cargo.toml
    /// names (cargo install, minutes the first time) into the cache; print
    /// NAME VERSION PATH for each.
    Peers {
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// A workload (meant to run inside the VM); prints one JSON line.
    Workload(Workload),
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Kernel image with sched_ext, or `auto` to fetch and cache a Debian one.
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// Virtual CPUs.
    #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 256))]
    cpus: u32,
    /// Sockets, each a NUMA node with its own last-level cache (they share
    /// --cpus and --mem evenly).
    #[arg(long, default_value_t = 1, value_parser = warmcore_args::count::<u32>(1, 16))]
    sockets: u32,
    /// More kernel command-line parameters, e.g. "maxcpus=3".
    #[arg(long, value_name = "PARAMS")]
    append: Option<String>,
    /// Memory in MiB.
    #[arg(long, default_value_t = 1024, value_parser = warmcore_args::count::<u32>(128, 65536))]
    mem: u32,
    /// Give up (and fail) after this many seconds.
    #[arg(long, value_name = "SECS", default_value = "900", value_parser = warmcore_args::positive_secs)]
    timeout: Duration,
    /// The warmcore binary to put in the VM, static or not (default: this
    /// one); a dynamic one goes in with the libraries it loads.
    #[arg(long)]
    warmcore: Option<PathBuf>,
    /// Another executable to put in the VM's /bin under its own name, with
    /// the libraries it loads (repeatable).
    #[arg(long = "bin", value_name = "PATH")]
    bins: Vec<PathBuf>,
    /// Put the loaders of the scx schedulers in too (`warmcore vm peers`
    /// builds them once).
    #[arg(long)]
    peers: bool,
    /// Print the kernel's console log after the command's output.
    #[arg(long)]
    kmsg: bool,
    /// Cache directory (default: $XDG_CACHE_HOME/warmcore or ~/.cache/warmcore).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// The command to run inside (`warmcore` is this binary).
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(a: VmArgs) -> Result<i32> {
    match a.sub {
        Some(VmSub::Run(r)) => warmcore_vm::boot(&r.into()),
        Some(VmSub::Kernel { cache }) => {
            println!("{}", warmcore_vm::kernel_auto(&warmcore_vm::cache_dir(cache.as_deref())?)?.display());
            Ok(0)
        }
        Some(VmSub::Peers { cache }) => {
            for (p, bin) in warmcore_vm::peers::install(&warmcore_vm::cache_dir(cache.as_deref())?)? {
                println!("{} {} {}", p.name, p.version, bin.display());
            }
            Ok(0)
        }
        Some(VmSub::Workload(w)) => {
            println!("{}", warmcore_vm::workload::run(&w.kind.into())?);
            Ok(0)
        }
        None => warmcore_vm::boot(&a.run.into()),
    }
}

impl From<RunArgs> for warmcore_vm::Options {
    fn from(r: RunArgs) -> Self {
        warmcore_vm::Options {
            kernel: r.kernel,
            cpus: r.cpus,
            sockets: r.sockets,
            append: r.append,
            mem: r.mem,
            timeout: r.timeout,
            warmcore: r.warmcore,
            bins: r.bins,
            peers: r.peers,
            kmsg: r.kmsg,
            cache: r.cache,
            command: r.command,
        }
    }
}


#[derive(Args, Clone)]
struct Workload {
    #[command(subcommand)]
    kind: WorkloadKind,
}

#[derive(Subcommand, Clone)]
enum WorkloadKind {
    /// Fork/wait loop, pipe ping-pong pairs, more CPU hogs than CPUs, short sleepers.
    Mixed {
        #[arg(long, default_value = "30", value_parser = warmcore_args::secs)]
        secs: Duration,
    },
    /// Pipe ping-pong between two processes: round trips per second.
    Pipe {
        #[arg(long, default_value_t = 20000, value_parser = warmcore_args::count::<u64>(1, 1_000_000_000))]
        msgs: u64,
    },
    /// hackbench-like: groups of senders and receivers over pipes: seconds.
    Hackbench {
        #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 1000))]
        groups: u32,
        #[arg(long, default_value_t = 100, value_parser = warmcore_args::count::<u32>(1, 1_000_000))]
        loops: u32,
    },
    /// fork, exec /bin/true, wait: processes per second.
    Forkexec {
        #[arg(long, default_value_t = 300, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
    },
    /// A parent forks a child; the child records the CPU it starts on. With
    /// --busy-us the parent keeps running that long, else it waits at once.
    Forkcpu {
        #[arg(long, default_value_t = 200, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
        #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<u64>(0, 60_000_000))]
        busy_us: u64,
    },
    /// A fork/wait chain: each process works a little, forks the next, waits.
    Chain {
        #[arg(long, default_value_t = 300, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
        #[arg(long, default_value_t = 200, value_parser = warmcore_args::count::<u64>(0, 60_000_000))]
        work_us: u64,
    },
    /// N CPU hogs for SECS: CPU time over wall time.
    Hogs {
        #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 4096))]
        n: u32,
        #[arg(long, default_value = "5", value_parser = warmcore_args::secs)]
        secs: Duration,
    },
    /// One real-time thread per CPU waking every 20 ms for SECS: the longest
    /// time the guest ran none of them (its host ran no vCPU), and when.
    Stillness {
        #[arg(long, default_value = "30", value_parser = warmcore_args::secs)]
        secs: Duration,
    },
}

impl From<WorkloadKind> for Run {
    fn from(k: WorkloadKind) -> Self {
        match k {
            WorkloadKind::Mixed { secs } => Run::Mixed { secs },
            WorkloadKind::Pipe { msgs } => Run::Pipe { msgs },
            WorkloadKind::Hackbench { groups, loops } => Run::Hackbench { groups, loops },
            WorkloadKind::Forkexec { n } => Run::Forkexec { n },
            WorkloadKind::Forkcpu { n, busy_us } => Run::Forkcpu { n, busy_us },
            WorkloadKind::Chain { n, work_us } => Run::Chain { n, work_us },
            WorkloadKind::Hogs { n, secs } => Run::Hogs { n, secs },
            WorkloadKind::Stillness { secs } => Run::Stillness { secs },
        }
    }
}
