/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the BPF side and the Rust loader of `warmcore record` share. Rust
 * bindings are generated from this file at build time (build.rs), so the two
 * sides cannot disagree on a layout or a constant.
 */
#ifndef WARMCORE_RECORD_INTF_H
#define WARMCORE_RECORD_INTF_H

enum wc_limits {
	/* CPUs the per-CPU tables in .bss/.rodata cover. */
	WC_MAX_CPUS = 1024,
	/* tgids the --pid filter can follow (the process and its descendants). */
	WC_MAX_TRACKED = 65536,
};

/*
 * Event ids as written to the file. They are warmcore_trace::ids' built-in
 * numbering (the Rust side checks this at compile time), so the file's event
 * table is the built-in one.
 */
enum wc_event_id {
	WC_EXEC = 1,
	WC_EXIT = 2,
	WC_WAKEUP = 3,
	WC_WAKEUP_NEW = 4,
	WC_BLOCK = 5,
	WC_BLOCK_IO = 6,
	WC_FORK = 7,
	WC_WAIT_PID = 8,
	WC_TICK = 9,
	WC_CTX_SWITCH = 10,
	WC_MIGRATE = 11,
};

/* CTX_SWITCH's prev_state values (warmcore_trace::event::prev_state). */
enum wc_prev_state {
	WC_PS_RUNNABLE = 0,
	WC_PS_BLOCKED = 1,
	WC_PS_BLOCKED_IO = 2,
	WC_PS_DEAD = 3,
};

/* Where TICK's frequency comes from. */
enum wc_freq_src {
	/* No source: TICK carries a = 0 (frequency absent). */
	WC_FREQ_NONE = 0,
	/* cycles / ref-cycles perf counters read by BPF at each tick. */
	WC_FREQ_PERF = 1,
	/* A per-CPU value that user space refreshes from cpufreq. */
	WC_FREQ_MAP = 2,
};

enum wc_filter {
	WC_FILTER_NONE = 0,
	/* Only tasks whose tgid is in the `tracked` map (--pid and descendants). */
	WC_FILTER_PID = 1,
	/* Only tasks in one cgroup v2 (--cgroup) or below it, matched by the
	 * id of the task's cgroup's ancestor at that cgroup's level. */
	WC_FILTER_CGROUP = 2,
};

/*
 * One event: SchedLog's 24-byte entry (Fork/wait, section 3.1), the
 * same bytes as warmcore_trace::Event. `arg` holds a (low 32 bits) and b.
 */
struct wc_event {
	unsigned long long ts;
	unsigned int pid;
	unsigned int id;
	unsigned long long arg;
};

/*
 * One CPU's buffer: entries [head - slots, head) of its slice of `ring`,
 * indexed by sequence number modulo the slice's size.
 *
 * The BPF side owns the first cache line and user space the second, so the
 * drain does not pull the line the programs write on every event.
 * - head: entries reserved on this CPU since the start (the programs take
 *   their slots with one atomic add, as a nested program may interrupt);
 * - published: entries before it are complete; set by the outermost of the
 *   programs storing on this CPU when it finishes;
 * - nest: programs storing on this CPU now;
 * - dropped: entries that found no room (streaming) or came while paused;
 * - tail (user space): entries read by the drain; streaming never
 *   overwrites an entry at or after it.
 */
struct wc_cpu_buf {
	unsigned long long head;
	unsigned long long published;
	unsigned long long nest;
	unsigned long long dropped;
	unsigned long long bpf_pad[4];
	unsigned long long tail;
	unsigned long long user_pad[7];
};

/* Last counter values per CPU, for the frequency between two ticks. */
struct wc_freq_state {
	unsigned long long cycles;
	unsigned long long ref;
};

#endif /* WARMCORE_RECORD_INTF_H */
