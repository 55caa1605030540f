/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The contract between a sched_ext program built for the host (host.c and
 * the program's units) and the simulator (crates/sim/src/scx/): the kernel
 * services the program calls, as a table of functions the simulator fills,
 * and the entry points the simulator calls. Mirrored by `HostOps` in
 * crates/sim/src/scx/program.rs; change both together.
 *
 * Kernel constants never cross this line: host.c turns dispatch queue ids,
 * enqueue, wake-up and pick flags into the small numbers below, from the
 * vmlinux.h the program is built against, so that the simulator does not
 * restate the kernel's ABI.
 */
#ifndef __WARMCORE_SCX_HOST_H
#define __WARMCORE_SCX_HOST_H

/* A dispatch queue as the simulator sees it. */
enum wc_sim_dsq_kind {
	WC_SIM_DSQ_USER = 0,	/* id: the program's own queue */
	WC_SIM_DSQ_GLOBAL = 1,
	WC_SIM_DSQ_LOCAL = 2,	/* the local queue of the CPU in context */
	WC_SIM_DSQ_LOCAL_ON = 3,	/* id: the CPU */
	WC_SIM_DSQ_INVALID = 4,
};

/* Enqueue flags (SCX_ENQ_*) as the simulator sees them. */
enum wc_sim_enq {
	WC_SIM_ENQ_WAKEUP = 1,
	WC_SIM_ENQ_HEAD = 2,
	WC_SIM_ENQ_PREEMPT = 4,
	WC_SIM_ENQ_LAST = 8,
	/* ops.select_cpu() ran for this wake-up (ENQUEUE_RQ_SELECTED). */
	WC_SIM_ENQ_CPU_SELECTED = 16,
	/* Into a local queue only if the CPU can run the task at once. */
	WC_SIM_ENQ_IMMED = 32,
	/* Handed back by the kernel (an IMMED insert that could not run). */
	WC_SIM_ENQ_REENQ = 64,
	/* A property change's enqueue (ENQUEUE_RESTORE | ENQUEUE_NOCLOCK). */
	WC_SIM_ENQ_RESTORE = 128,
};

/* Kick flags (SCX_KICK_*). */
enum wc_sim_kick {
	WC_SIM_KICK_IDLE = 1,
	WC_SIM_KICK_PREEMPT = 2,
	WC_SIM_KICK_WAIT = 4,
};

/* Idle CPU pick flags (SCX_PICK_IDLE_*). */
enum wc_sim_pick {
	WC_SIM_PICK_CORE = 1,
	WC_SIM_PICK_IN_NODE = 2,
};

/* Why select_cpu is called (SCX_WAKE_*); never for exec, as in the kernel. */
enum wc_sim_wake {
	WC_SIM_WAKE_TTWU = 0,
	WC_SIM_WAKE_FORK = 1,
};

/* Which operations the program implements (wc_sim_ops_mask). */
enum wc_sim_op {
	WC_SIM_OP_SELECT_CPU = 1 << 0,
	WC_SIM_OP_ENQUEUE = 1 << 1,
	WC_SIM_OP_DISPATCH = 1 << 2,
	WC_SIM_OP_RUNNING = 1 << 3,
	WC_SIM_OP_STOPPING = 1 << 4,
	WC_SIM_OP_TICK = 1 << 5,
	WC_SIM_OP_UPDATE_IDLE = 1 << 6,
	WC_SIM_OP_ENABLE = 1 << 7,
	WC_SIM_OP_INIT_TASK = 1 << 8,
	WC_SIM_OP_EXIT_TASK = 1 << 9,
	WC_SIM_OP_INIT = 1 << 10,
	WC_SIM_OP_EXIT = 1 << 11,
	WC_SIM_OP_RUNNABLE = 1 << 12,
	WC_SIM_OP_QUIESCENT = 1 << 13,
	WC_SIM_OP_CGROUP_INIT = 1 << 14,
	WC_SIM_OP_SET_CPUMASK = 1 << 15,
	WC_SIM_OP_DEQUEUE = 1 << 16,
	WC_SIM_OP_CPU_ONLINE = 1 << 17,
	WC_SIM_OP_CPU_OFFLINE = 1 << 18,
};

/* Why the scheduler is unloaded (wc_sim_exit). */
enum wc_sim_exit_why {
	WC_SIM_EXIT_UNREG = 0,
	WC_SIM_EXIT_ERROR = 1,
	/* ext.c, handle_hotplug without ops.cpu_online/cpu_offline. */
	WC_SIM_EXIT_HOTPLUG = 2,
};

/*
 * The kernel side, implemented by the simulator. `ctx` is the simulator's
 * own pointer, passed back unchanged; a task is named by the simulator's
 * task id. CPU masks are arrays of 64-bit words, bit n of word n / 64 for
 * CPU n, at least WC_SIM_MASK_WORDS long. A node of -1 is "any node".
 */
#define WC_SIM_MASK_WORDS 128

struct wc_host_ops {
	void *ctx;
	/* The kernel's CONFIG_HZ: the simulator's tick rate. */
	unsigned long long hz;
	unsigned long long (*now)(void *ctx);
	int (*cpu)(void *ctx);
	int (*task_cpu)(void *ctx, unsigned int tid);
	void *(*task_from_pid)(void *ctx, int pid);
	/* The task running on the CPU in context, NULL when it idles. */
	void *(*current_task)(void *ctx);
	/* The task running on @cpu, NULL when it idles. */
	void *(*cpu_curr)(void *ctx, int cpu);
	int (*task_running)(void *ctx, unsigned int tid);
	int (*create_dsq)(void *ctx, unsigned long long id);
	/* vtime_ordered: insert by vtime (else FIFO, at the head with WC_SIM_ENQ_HEAD). */
	void (*dsq_insert)(void *ctx, unsigned int tid, unsigned int kind, unsigned long long id,
			   unsigned int vtime_ordered, unsigned long long vtime, unsigned int enq);
	int (*dsq_move_to_local)(void *ctx, unsigned int kind, unsigned long long id);
	int (*dsq_nr_queued)(void *ctx, unsigned int kind, unsigned long long id);
	/* The first task of a queue, left there; NULL if empty. */
	void *(*dsq_peek)(void *ctx, unsigned int kind, unsigned long long id);
	/* A DSQ iterator (bpf_iter_scx_dsq): `it` holds its state (6 words);
	 * next gives a task, or NULL at the end. */
	int (*dsq_iter_new)(void *ctx, unsigned long long *it, unsigned int kind, unsigned long long id);
	void *(*dsq_iter_next)(void *ctx, unsigned long long *it);
	void (*dsq_iter_destroy)(void *ctx, unsigned long long *it);
	/* Move the task the iterator gave last to another DSQ (scx_bpf_dsq_move). */
	int (*dsq_move)(void *ctx, unsigned long long *it, unsigned int tid, unsigned int kind,
			unsigned long long id, unsigned int enq);
	void (*kick_cpu)(void *ctx, int cpu, unsigned int kick);
	int (*test_and_clear_cpu_idle)(void *ctx, int cpu);
	/* An idle CPU of @allowed, claimed (wc_sim_pick flags), from @node
	 * first; -EBUSY if none. */
	int (*pick_idle_cpu)(void *ctx, const unsigned long long *allowed, unsigned int flags, int node);
	/* cpumask_any_and_distribute, with the kernel's per-CPU cursor. */
	int (*any_and_distribute)(void *ctx, const unsigned long long *a, const unsigned long long *b);
	/* The built-in idle CPU selection (scx_select_cpu_dfl) among @allowed
	 * (NULL: the task's CPUs): the CPU claimed, or -EBUSY. */
	int (*select_cpu_and)(void *ctx, unsigned int tid, int prev_cpu, unsigned int sync,
			      const unsigned long long *allowed, unsigned int flags);
	const unsigned long long *(*idle_mask)(void *ctx, unsigned int smt, int node);
	unsigned int (*cpuperf_cur)(void *ctx, int cpu);
	void (*cpuperf_set)(void *ctx, int cpu, unsigned int perf);
	/* A timer: slot names it; (re)arms it `after_ns` from now. */
	void (*timer_start)(void *ctx, unsigned int slot, unsigned long long after_ns);
	int (*timer_cancel)(void *ctx, unsigned int slot);
	/* scx_bpf_error, scx_bpf_exit: the program stops being the scheduler. */
	void (*error)(void *ctx, const char *msg);
};

/* The machine as the kernel's per-CPU variables and NUMA kfuncs see it. */
struct wc_sim_topology {
	unsigned int nr_cpus;
	unsigned int nr_nodes;
	const int *cpu_node;	/* per CPU: its NUMA node */
	const int *llc_id;	/* per CPU: sd_llc_id, the first CPU of its LLC */
	const int *llc_size;	/* per CPU: sd_llc_size, the CPUs of its LLC */
};

#endif /* __WARMCORE_SCX_HOST_H */
