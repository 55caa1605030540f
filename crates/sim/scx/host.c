/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host layer: the kernel a sched_ext program built for the host runs
 * on (the BPF helpers, kfuncs, per-CPU variables and kconfig values it
 * calls or reads) and the entry points the simulator calls, over the
 * simulator's `wc_host_ops` (host.h). Linked with the program's units
 * (crates/sim/src/scx/build_program.rs) into one shared object that the
 * simulator loads, one fresh copy per run (crates/sim/src/scx/program.rs),
 * so that every run has its own globals, maps and masks.
 *
 * The program's units are found through the generated wc_glue.h: each
 * brings its own tables (tables.h) of maps, globals and syscall programs.
 * No libc header is included: vmlinux.h's kernel types collide with them;
 * the two libc functions used are declared here.
 *
 * What each helper and kfunc does follows the kernel (kernel/bpf/helpers.c,
 * kernel/bpf/cpumask.c, kernel/sched/ext.c and ext_idle.c);
 * docs/sched-ext-in-the-simulator.md lists them with what is modelled.
 */
#include "prelude.h"
#include "host.h"
#include "tables.h"
#include "wc_glue.h"

void *calloc(unsigned long n, unsigned long size);
void free(void *p);

#define WC_NR_TUS (sizeof(wc_tus) / sizeof(wc_tus[0]))
#define WC_MAX_LOCAL_STORAGE 8
#define WC_MAX_TIMERS 4096

static const struct wc_host_ops *H;
static u32 wc_nr_cpus;
static u32 wc_nr_nodes;
static int *wc_cpu_node;

/* A task as the program sees it, and what the host keeps beside it. */
struct wc_task {
	struct task_struct p;
	u32 tid;
	void *storage[WC_MAX_LOCAL_STORAGE];
};

#define wc_task_of(ptr) ((struct wc_task *)((u8 *)(ptr) - __builtin_offsetof(struct wc_task, p)))

/* Each CPU's idle task (rq->idle): what scx_bpf_cpu_curr() and
 * bpf_get_current_task_btf() give on an idle CPU, with PF_IDLE and pid 0. */
static struct wc_task *wc_idle_tasks;

/* The cgroup every task is in: the root (the simulator models no cgroup
 * hierarchy), with its local storage. */
struct wc_cgroup {
	struct cgroup cg;
	void *storage[WC_MAX_LOCAL_STORAGE];
};
static struct wc_cgroup *wc_root_cgroup;

struct wc_timer {
	struct bpf_timer *timer;
	void *map;
	void *cb;
	void *value;
	u32 key;
};

static struct wc_timer wc_timers[WC_MAX_TIMERS];
static u32 wc_nr_timers;

/* Every bpf_cpumask the program created; freed at detach (the kernel frees
 * them after an RCU grace period, which the program cannot observe). */
struct wc_cpumask_node {
	struct bpf_cpumask mask;
	struct wc_cpumask_node *next;
};
static struct wc_cpumask_node *wc_cpumasks;

/* The online and possible CPUs (every CPU of the machine). */
static struct cpumask wc_possible_mask, wc_online_mask;

static int wc_streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static void wc_copy(void *dst, const void *src, u64 n)
{
	__builtin_memcpy(dst, src, n);
}

/* The maps found so far, by their definition's address: a program looks up
 * several maps in turn (a task's context, a CPU's, its settings), and the
 * search through every map cost more than the look-ups themselves. */
#define WC_MAP_CACHE 64
static struct {
	void *def;
	struct wc_map *map;
} wc_map_cache[WC_MAP_CACHE];

static struct wc_map *wc_map_of(void *def)
{
	u32 h = ((u64)def >> 4) % WC_MAP_CACHE, t, i;

	if (def && wc_map_cache[h].def == def)
		return wc_map_cache[h].map;
	for (t = 0; t < WC_NR_TUS; t++)
		for (i = 0; i < wc_tus[t]->nr_maps; i++)
			if (wc_tus[t]->maps[i].def == def) {
				wc_map_cache[h].def = def;
				return wc_map_cache[h].map = &wc_tus[t]->maps[i];
			}
	return NULL;
}

static struct wc_map *wc_map_named(const char *name)
{
	u32 t, i;

	for (t = 0; t < WC_NR_TUS; t++)
		for (i = 0; i < wc_tus[t]->nr_maps; i++)
			if (wc_streq(wc_tus[t]->maps[i].name, name))
				return &wc_tus[t]->maps[i];
	return NULL;
}

static void wc_error(const char *msg)
{
	H->error(H->ctx, msg);
}

/* ------------------------------------------------------------ kconfig, per-CPU variables */

/*
 * The program's __kconfig externs, which libbpf fills from the running
 * kernel's configuration: the ones the scx headers declare, and CONFIG_HZ
 * (the simulator's tick rate). A program that #defines one of them itself
 * (scx_flash's CONFIG_HZ) never refers to the variable.
 */
unsigned long CONFIG_HZ;
int LINUX_KERNEL_VERSION = WC_LINUX_KERNEL_VERSION;
bool CONFIG_PREEMPT_RCU = true;
const char CONFIG_CC_VERSION_TEXT[64] = "clang (warmcore's host build)";
const char CONFIG_LOCALVERSION[64] = "";

/*
 * Per-CPU kernel variables a program reads with bpf_per_cpu_ptr() (scx's
 * percpu.bpf.h): sd_llc_id (the first CPU of the CPU's last-level cache
 * domain) and sd_llc_size (its CPUs), kernel/sched/topology.c,
 * update_top_cache_domain(), from the simulator's topology. The symbol is
 * the variable's identity; its values live in wc_percpu_values.
 */
int sd_llc_id;
int sd_llc_size;

struct wc_percpu {
	const void *sym;
	int *values;		/* nr_cpus of them */
};
static struct wc_percpu wc_percpus[] = {
	{ &sd_llc_id, NULL },
	{ &sd_llc_size, NULL },
};
#define WC_NR_PERCPUS (sizeof(wc_percpus) / sizeof(wc_percpus[0]))

/* ------------------------------------------------------------ helpers */

/*
 * A hash map: open addressing with linear probing over `slots` slots, a
 * value's address fixed while its entry lives (as the kernel's
 * preallocated htab elements), at most max_entries entries (-E2BIG).
 */
static u64 wc_hash_key(const struct wc_map *m, const void *key)
{
	const u8 *k = key;
	u64 h = 1469598103934665603ULL;
	u32 i;

	for (i = 0; i < m->key_size; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	return h;
}

static bool wc_key_eq(const struct wc_map *m, u32 slot, const void *key)
{
	const u8 *a = m->keys + (u64)slot * m->key_size;

	switch (m->key_size) {
	case 4:
		return *(const u32 *)a == *(const u32 *)key;
	case 8:
		return *(const u64 *)a == *(const u64 *)key;
	default:
		return !__builtin_memcmp(a, key, m->key_size);
	}
}

/* The slot holding @key, or -1. */
static u32 wc_hash_find(const struct wc_map *m, const void *key)
{
	u32 mask = m->slots - 1, i = wc_hash_key(m, key) & mask, n;

	for (n = 0; n < m->slots; n++, i = (i + 1) & mask) {
		if (m->used[i] == 0)
			return (u32)-1;
		if (m->used[i] == 1 && wc_key_eq(m, i, key))
			return i;
	}
	return (u32)-1;
}

/* A free slot for a new @key (the first deleted or empty one it probes). */
static u32 wc_hash_free(const struct wc_map *m, const void *key)
{
	u32 mask = m->slots - 1, i = wc_hash_key(m, key) & mask, n;

	for (n = 0; n < m->slots; n++, i = (i + 1) & mask)
		if (m->used[i] != 1)
			return i;
	return (u32)-1;
}

void *wc_helper_bpf_map_lookup_elem(void *def, const void *key)
{
	struct wc_map *m = wc_map_of(def);
	u32 i, k;

	if (!m || !m->values)
		return NULL;
	switch (m->type) {
	case BPF_MAP_TYPE_ARRAY:
		k = *(const u32 *)key;
		return k < m->max_entries ? m->values + (u64)k * m->stride : NULL;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		k = *(const u32 *)key;
		if (k >= m->max_entries)
			return NULL;
		return m->values + ((u64)H->cpu(H->ctx) * m->max_entries + k) * m->stride;
	case BPF_MAP_TYPE_HASH:
		i = wc_hash_find(m, key);
		return i == (u32)-1 ? NULL : m->values + (u64)i * m->stride;
	}
	return NULL;
}

/* kernel/bpf/helpers.c, bpf_map_lookup_percpu_elem: a per-CPU map's value
 * of @cpu (NULL for a CPU beyond nr_cpu_ids or a map that is not per-CPU). */
void *wc_helper_bpf_map_lookup_percpu_elem(void *def, const void *key, __u32 cpu)
{
	struct wc_map *m = wc_map_of(def);
	u32 k;

	if (!m || !m->values || m->type != BPF_MAP_TYPE_PERCPU_ARRAY || cpu >= wc_nr_cpus)
		return NULL;
	k = *(const u32 *)key;
	if (k >= m->max_entries)
		return NULL;
	return m->values + ((u64)cpu * m->max_entries + k) * m->stride;
}

long wc_helper_bpf_map_update_elem(void *def, const void *key, const void *value, __u64 flags)
{
	struct wc_map *m = wc_map_of(def);
	void *slot;
	u32 i, free_i = (u32)-1;

	if (!m || !m->values)
		return -EINVAL;
	if (m->type == BPF_MAP_TYPE_HASH) {
		slot = wc_helper_bpf_map_lookup_elem(def, key);
		if (slot) {
			if (flags == BPF_NOEXIST)
				return -EEXIST;
			wc_copy(slot, value, m->value_size);
			return 0;
		}
		if (flags == BPF_EXIST)
			return -ENOENT;
		if (m->count >= m->max_entries)
			return -E2BIG;
		free_i = wc_hash_free(m, key);
		if (free_i == (u32)-1)
			return -E2BIG;
		m->used[free_i] = 1;
		m->count++;
		wc_copy(m->keys + (u64)free_i * m->key_size, key, m->key_size);
		wc_copy(m->values + (u64)free_i * m->stride, value, m->value_size);
		return 0;
	}
	slot = wc_helper_bpf_map_lookup_elem(def, key);
	if (!slot)
		return -E2BIG;
	if (flags == BPF_NOEXIST)
		return -EEXIST;
	/* The bpf_timer inside a value is kept as it is (as the kernel's
	 * copy_map_value skips special fields): only warmcore's program has
	 * timers in arrays it never updates whole, so a plain copy is right. */
	wc_copy(slot, value, m->value_size);
	return 0;
}

long wc_helper_bpf_map_delete_elem(void *def, const void *key)
{
	struct wc_map *m = wc_map_of(def);
	u32 i;

	if (!m || m->type != BPF_MAP_TYPE_HASH)
		return -EINVAL;
	i = wc_hash_find(m, key);
	if (i == (u32)-1)
		return -ENOENT;
	m->used[i] = 2;
	m->count--;
	__builtin_memset(m->values + (u64)i * m->stride, 0, m->stride);
	return 0;
}

__u64 wc_helper_bpf_ktime_get_ns(void)
{
	return H->now(H->ctx);
}

__u64 wc_helper_bpf_ktime_get_boot_ns(void)
{
	return H->now(H->ctx);
}

__u32 wc_helper_bpf_get_smp_processor_id(void)
{
	return H->cpu(H->ctx);
}

long wc_helper_bpf_get_numa_node_id(void)
{
	u32 cpu = H->cpu(H->ctx);

	return cpu < wc_nr_cpus ? wc_cpu_node[cpu] : 0;
}

/* Task and cgroup local storage: a slot per storage map in the object. */
static void *wc_storage_get(void **slots, struct wc_map *m, void *value, u64 flags)
{
	void **slot = &slots[m->storage_slot];

	if (!*slot && (flags & BPF_LOCAL_STORAGE_GET_F_CREATE)) {
		*slot = calloc(1, m->stride);
		if (*slot && value)
			wc_copy(*slot, value, m->value_size);
	}
	return *slot;
}

static long wc_storage_delete(void **slots, struct wc_map *m)
{
	if (!slots[m->storage_slot])
		return -ENOENT;
	free(slots[m->storage_slot]);
	slots[m->storage_slot] = NULL;
	return 0;
}

void *wc_helper_bpf_task_storage_get(void *def, struct task_struct *task, void *value, __u64 flags)
{
	struct wc_map *m = wc_map_of(def);

	if (!m || m->type != BPF_MAP_TYPE_TASK_STORAGE || !task)
		return NULL;
	return wc_storage_get(wc_task_of(task)->storage, m, value, flags);
}

long wc_helper_bpf_task_storage_delete(void *def, struct task_struct *task)
{
	struct wc_map *m = wc_map_of(def);

	if (!m || m->type != BPF_MAP_TYPE_TASK_STORAGE || !task)
		return -EINVAL;
	return wc_storage_delete(wc_task_of(task)->storage, m);
}

#define wc_cgroup_of(ptr) ((struct wc_cgroup *)((u8 *)(ptr) - __builtin_offsetof(struct wc_cgroup, cg)))

void *wc_helper_bpf_cgrp_storage_get(void *def, struct cgroup *cgroup, void *value, __u64 flags)
{
	struct wc_map *m = wc_map_of(def);

	if (!m || m->type != BPF_MAP_TYPE_CGRP_STORAGE || !cgroup)
		return NULL;
	return wc_storage_get(wc_cgroup_of(cgroup)->storage, m, value, flags);
}

long wc_helper_bpf_cgrp_storage_delete(void *def, struct cgroup *cgroup)
{
	struct wc_map *m = wc_map_of(def);

	if (!m || m->type != BPF_MAP_TYPE_CGRP_STORAGE || !cgroup)
		return -EINVAL;
	return wc_storage_delete(wc_cgroup_of(cgroup)->storage, m);
}

static struct task_struct *wc_idle_task(u32 cpu)
{
	return cpu < wc_nr_cpus ? &wc_idle_tasks[cpu].p : NULL;
}

struct task_struct *wc_helper_bpf_get_current_task_btf(void)
{
	struct task_struct *p = H->current_task(H->ctx);

	return p ? p : wc_idle_task(H->cpu(H->ctx));
}

__u64 wc_helper_bpf_get_current_task(void)
{
	return (__u64)wc_helper_bpf_get_current_task_btf();
}

__u64 wc_helper_bpf_get_current_pid_tgid(void)
{
	struct task_struct *p = wc_helper_bpf_get_current_task_btf();

	return p ? ((u64)p->tgid << 32) | (u32)p->pid : 0;
}

/* A timer lives in a map value; its slot number is kept in its opaque bytes
 * (slot + 1, so that a zeroed timer reads as never initialised). */
static struct wc_timer *wc_timer_of(struct bpf_timer *timer)
{
	u64 slot = timer->__opaque[0];

	if (!slot || slot > wc_nr_timers)
		return NULL;
	return &wc_timers[slot - 1];
}

long wc_helper_bpf_timer_init(struct bpf_timer *timer, void *def, __u64 flags)
{
	struct wc_map *m = wc_map_of(def);
	struct wc_timer *t;
	u64 off;

	if (wc_timer_of(timer))
		return -EBUSY;
	if (!m || m->type != BPF_MAP_TYPE_ARRAY || wc_nr_timers >= WC_MAX_TIMERS)
		return -EINVAL;
	off = (u8 *)timer - m->values;
	if ((u8 *)timer < m->values || off >= (u64)m->max_entries * m->stride)
		return -EINVAL;
	t = &wc_timers[wc_nr_timers++];
	t->timer = timer;
	t->map = def;
	t->key = off / m->stride;
	t->value = m->values + (u64)t->key * m->stride;
	timer->__opaque[0] = wc_nr_timers;
	return 0;
}

long wc_helper_bpf_timer_set_callback(struct bpf_timer *timer, void *cb)
{
	struct wc_timer *t = wc_timer_of(timer);

	if (!t)
		return -EINVAL;
	t->cb = cb;
	return 0;
}

long wc_helper_bpf_timer_start(struct bpf_timer *timer, __u64 nsecs, __u64 flags)
{
	struct wc_timer *t = wc_timer_of(timer);
	u64 now;

	if (!t || !t->cb)
		return -EINVAL;
	if (flags & BPF_F_TIMER_ABS) {
		now = H->now(H->ctx);
		nsecs = nsecs > now ? nsecs - now : 0;
	}
	H->timer_start(H->ctx, t - wc_timers, nsecs);
	return 0;
}

long wc_helper_bpf_timer_cancel(struct bpf_timer *timer)
{
	struct wc_timer *t = wc_timer_of(timer);

	if (!t)
		return -EINVAL;
	return H->timer_cancel(H->ctx, t - wc_timers);
}

void *wc_helper_bpf_kptr_xchg(void *kptr, void *new_ptr)
{
	void **at = kptr, *old = *at;

	*at = new_ptr;
	return old;
}

long wc_helper_bpf_probe_read_kernel_str(void *dst, __u32 size, const void *src)
{
	const char *s = src;
	char *d = dst;
	u32 i;

	if (!size)
		return 0;
	for (i = 0; s && i + 1 < size && s[i]; i++)
		d[i] = s[i];
	d[i] = 0;
	return i + 1;
}

long wc_helper_bpf_probe_read_kernel(void *dst, __u32 size, const void *src)
{
	wc_copy(dst, src, size);
	return 0;
}

/* kernel/bpf/helpers.c, bpf_per_cpu_ptr: @cpu's copy of a per-CPU kernel
 * variable (NULL beyond nr_cpu_ids, or for a variable the host does not
 * model, which the program then sees as absent). */
void *wc_helper_bpf_per_cpu_ptr(const void *sym, __u32 cpu)
{
	u32 i;

	if (cpu >= wc_nr_cpus)
		return NULL;
	for (i = 0; i < WC_NR_PERCPUS; i++)
		if (wc_percpus[i].sym == sym && wc_percpus[i].values)
			return &wc_percpus[i].values[cpu];
	return NULL;
}

void *wc_helper_bpf_this_cpu_ptr(const void *sym)
{
	return wc_helper_bpf_per_cpu_ptr(sym, H->cpu(H->ctx));
}

/* kernel/trace/bpf_trace.c, bpf_perf_event_read_value: a BPF_MAP_TYPE_PERF_EVENT_ARRAY
 * slot holds a perf event the loader opened; the simulator models no PMU,
 * so every slot is empty (-ENOENT, as for a slot the loader left empty). */
long wc_helper_bpf_perf_event_read_value(void *def, __u64 flags, struct bpf_perf_event_value *buf, __u32 buf_size)
{
	if (buf && buf_size)
		__builtin_memset(buf, 0, buf_size);
	return -ENOENT;
}

/* bpf_printk() writes to the trace pipe, which the simulator has not. */
long wc_helper_bpf_trace_printk(const char *fmt, __u32 fmt_size, ...)
{
	return 0;
}

long wc_helper_bpf_trace_vprintk(const char *fmt, __u32 fmt_size, const void *data, __u32 data_len)
{
	return 0;
}

/* ------------------------------------------------------------ kfuncs */

void bpf_rcu_read_lock(void)
{
}

void bpf_rcu_read_unlock(void)
{
}

struct task_struct *bpf_task_from_pid(s32 pid)
{
	return H->task_from_pid(H->ctx, pid);
}

struct task_struct *bpf_task_acquire(struct task_struct *p)
{
	return p;
}

void bpf_task_release(struct task_struct *p)
{
}

struct wc_iter {
	s32 cur;
	s32 end;
};

int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)
{
	struct wc_iter *s = (struct wc_iter *)it;

	/* As the kernel: a reversed range iterates nothing and is an error. */
	s->cur = start - 1;
	s->end = start > end ? start - 1 : end;
	return start > end ? -EINVAL : 0;
}

int *bpf_iter_num_next(struct bpf_iter_num *it)
{
	struct wc_iter *s = (struct wc_iter *)it;

	if (s->cur + 1 >= s->end)
		return NULL;
	s->cur++;
	return &s->cur;
}

void bpf_iter_num_destroy(struct bpf_iter_num *it)
{
}

/* kernel/bpf/cpumask.c. Only the first nr_cpu_ids bits of a mask are ever
 * set (the kernel's operations work on nr_cpu_ids bits, nr_cpumask_bits in
 * include/linux/cpumask.h), so the operations on whole masks look at the
 * words that hold those bits alone: a mask is 128 words long, and a busy
 * machine's empty idle mask was read to its end at every test. */
#define WC_MASK_BITS (sizeof(struct cpumask) * 8)
#define WC_MASK_WORDS ((wc_nr_cpus + 63) / 64)

struct bpf_cpumask *bpf_cpumask_create(void)
{
	struct wc_cpumask_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->mask.usage.refs.counter = 1;
	n->next = wc_cpumasks;
	wc_cpumasks = n;
	return &n->mask;
}

struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *mask)
{
	return mask;
}

void bpf_cpumask_release(struct bpf_cpumask *mask)
{
}

static int wc_bit(u32 cpu, const struct cpumask *m)
{
	return cpu < WC_MASK_BITS && ((m->bits[cpu / 64] >> (cpu % 64)) & 1);
}

bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *m)
{
	return wc_bit(cpu, m);
}

void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *m)
{
	if (cpu < wc_nr_cpus)
		m->cpumask.bits[cpu / 64] |= 1UL << (cpu % 64);
}

void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{
	if (cpu < wc_nr_cpus)
		m->cpumask.bits[cpu / 64] &= ~(1UL << (cpu % 64));
}

bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *m)
{
	bool was = wc_bit(cpu, &m->cpumask);

	bpf_cpumask_set_cpu(cpu, m);
	return was;
}

bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{
	bool was = wc_bit(cpu, &m->cpumask);

	bpf_cpumask_clear_cpu(cpu, m);
	return was;
}

void bpf_cpumask_setall(struct bpf_cpumask *m)
{
	u32 c;

	for (c = 0; c < wc_nr_cpus; c++)
		bpf_cpumask_set_cpu(c, m);
}

void bpf_cpumask_clear(struct bpf_cpumask *m)
{
	__builtin_memset(&m->cpumask, 0, sizeof(m->cpumask));
}

bool bpf_cpumask_empty(const struct cpumask *m)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		if (m->bits[i])
			return false;
	return true;
}

bool bpf_cpumask_full(const struct cpumask *m)
{
	u32 c;

	for (c = 0; c < wc_nr_cpus; c++)
		if (!wc_bit(c, m))
			return false;
	return true;
}

u32 bpf_cpumask_weight(const struct cpumask *m)
{
	u32 i, n = 0;

	for (i = 0; i < WC_MASK_WORDS; i++)
		n += __builtin_popcountll(m->bits[i]);
	return n;
}

/* The first set bit at or after @from, or WC_MASK_BITS (the CPUs beyond
 * the machine's are never set). */
static u32 wc_next(const struct cpumask *m, u32 from)
{
	u32 cpu;

	for (cpu = from; cpu < wc_nr_cpus; cpu++)
		if (wc_bit(cpu, m))
			return cpu;
	return WC_MASK_BITS;
}

u32 bpf_cpumask_first(const struct cpumask *m)
{
	return wc_next(m, 0);
}

u32 bpf_cpumask_first_zero(const struct cpumask *m)
{
	u32 cpu;

	for (cpu = 0; cpu < wc_nr_cpus; cpu++)
		if (!wc_bit(cpu, m))
			return cpu;
	return WC_MASK_BITS;
}

u32 bpf_cpumask_first_and(const struct cpumask *a, const struct cpumask *b)
{
	u32 cpu;

	for (cpu = 0; cpu < wc_nr_cpus; cpu++)
		if (wc_bit(cpu, a) && wc_bit(cpu, b))
			return cpu;
	return WC_MASK_BITS;
}

void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src)
{
	wc_copy(&dst->cpumask, src, WC_MASK_WORDS * sizeof(src->bits[0]));
}

bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
	u64 any = 0;
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		any |= dst->cpumask.bits[i] = a->bits[i] & b->bits[i];
	return any != 0;
}

void bpf_cpumask_or(struct bpf_cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		dst->cpumask.bits[i] = a->bits[i] | b->bits[i];
}

void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		dst->cpumask.bits[i] = a->bits[i] ^ b->bits[i];
}

bool bpf_cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		if (a->bits[i] != b->bits[i])
			return false;
	return true;
}

bool bpf_cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		if (a->bits[i] & b->bits[i])
			return true;
	return false;
}

bool bpf_cpumask_subset(const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

u32 bpf_cpumask_any_and_distribute(const struct cpumask *a, const struct cpumask *b)
{
	return H->any_and_distribute(H->ctx, (const unsigned long long *)a->bits,
				     (const unsigned long long *)b->bits);
}

u32 bpf_cpumask_any_distribute(const struct cpumask *m)
{
	return bpf_cpumask_any_and_distribute(m, m);
}

int bpf_cpumask_populate(struct bpf_cpumask *dst, void *src, size_t src__sz)
{
	if (src__sz > sizeof(dst->cpumask))
		return -EACCES;
	__builtin_memset(&dst->cpumask, 0, sizeof(dst->cpumask));
	wc_copy(&dst->cpumask, src, src__sz);
	return 0;
}

static void wc_dsq_of(u64 dsq_id, u32 *kind, u64 *id)
{
	*id = 0;
	if (dsq_id == SCX_DSQ_LOCAL) {
		*kind = WC_SIM_DSQ_LOCAL;
	} else if ((dsq_id & SCX_DSQ_LOCAL_ON) == SCX_DSQ_LOCAL_ON) {
		*kind = WC_SIM_DSQ_LOCAL_ON;
		*id = dsq_id & SCX_DSQ_LOCAL_CPU_MASK;
	} else if (dsq_id == SCX_DSQ_GLOBAL) {
		*kind = WC_SIM_DSQ_GLOBAL;
	} else if (dsq_id & SCX_DSQ_FLAG_BUILTIN) {
		*kind = WC_SIM_DSQ_INVALID;
	} else {
		*kind = WC_SIM_DSQ_USER;
		*id = dsq_id;
	}
}

static u32 wc_enq_of(u64 enq_flags)
{
	return (enq_flags & SCX_ENQ_WAKEUP ? WC_SIM_ENQ_WAKEUP : 0) |
	       (enq_flags & SCX_ENQ_HEAD ? WC_SIM_ENQ_HEAD : 0) |
	       (enq_flags & SCX_ENQ_PREEMPT ? WC_SIM_ENQ_PREEMPT : 0) |
	       (enq_flags & SCX_ENQ_LAST ? WC_SIM_ENQ_LAST : 0) |
	       (enq_flags & SCX_ENQ_IMMED ? WC_SIM_ENQ_IMMED : 0) |
	       (enq_flags & SCX_ENQ_REENQ ? WC_SIM_ENQ_REENQ : 0) |
	       (enq_flags & SCX_ENQ_CPU_SELECTED ? WC_SIM_ENQ_CPU_SELECTED : 0);
}

/* kernel/sched/sched.h: the enqueue flags of a property change
 * (set_user_nice, __do_set_cpus_allowed), which ext.c passes on as they
 * are (no SCX_ENQ_* names them). */
#define WC_ENQUEUE_RESTORE 0x02
#define WC_ENQUEUE_NOCLOCK 0x08

static u64 wc_kernel_enq(u32 enq)
{
	return (enq & WC_SIM_ENQ_RESTORE ? WC_ENQUEUE_RESTORE | WC_ENQUEUE_NOCLOCK : 0) |
	       (enq & WC_SIM_ENQ_WAKEUP ? SCX_ENQ_WAKEUP : 0) |
	       (enq & WC_SIM_ENQ_HEAD ? SCX_ENQ_HEAD : 0) |
	       (enq & WC_SIM_ENQ_PREEMPT ? SCX_ENQ_PREEMPT : 0) |
	       (enq & WC_SIM_ENQ_LAST ? SCX_ENQ_LAST : 0) |
	       (enq & WC_SIM_ENQ_IMMED ? SCX_ENQ_IMMED : 0) |
	       (enq & WC_SIM_ENQ_REENQ ? SCX_ENQ_REENQ : 0) |
	       (enq & WC_SIM_ENQ_CPU_SELECTED ? SCX_ENQ_CPU_SELECTED : 0);
}

s32 scx_bpf_create_dsq(u64 dsq_id, s32 node)
{
	if (dsq_id & SCX_DSQ_FLAG_BUILTIN)
		return -EINVAL;
	return H->create_dsq(H->ctx, dsq_id);
}

/* ext.c, scx_dsq_insert_commit: the insert sets the task's slice (and its
 * vtime for a vtime insert) before it is queued. */
static bool wc_insert(struct task_struct *p, u64 dsq_id, u64 slice, bool by_vtime, u64 vtime, u64 enq_flags)
{
	u32 kind;
	u64 id;

	wc_dsq_of(dsq_id, &kind, &id);
	if (slice)
		p->scx.slice = slice;
	else
		p->scx.slice = p->scx.slice ? p->scx.slice : 1;
	if (by_vtime)
		p->scx.dsq_vtime = vtime;
	H->dsq_insert(H->ctx, wc_task_of(p)->tid, kind, id, by_vtime, p->scx.dsq_vtime, wc_enq_of(enq_flags));
	return true;
}

bool scx_bpf_dsq_insert___v2___compat(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{
	return wc_insert(p, dsq_id, slice, false, 0, enq_flags);
}

bool __scx_bpf_dsq_insert_vtime(struct task_struct *p, struct scx_bpf_dsq_insert_vtime_args *args)
{
	return wc_insert(p, args->dsq_id, args->slice, true, args->vtime, args->enq_flags);
}

bool scx_bpf_dsq_move_to_local___v2___compat(u64 dsq_id, u64 enq_flags)
{
	u32 kind;
	u64 id;

	wc_dsq_of(dsq_id, &kind, &id);
	return H->dsq_move_to_local(H->ctx, kind, id);
}

int bpf_iter_scx_dsq_new(struct bpf_iter_scx_dsq *it, u64 dsq_id, u64 flags)
{
	u32 kind;
	u64 id;

	if (flags) {
		H->error(H->ctx, "bpf_iter_scx_dsq_new: flags are not modelled");
		return -EINVAL;
	}
	wc_dsq_of(dsq_id, &kind, &id);
	return H->dsq_iter_new(H->ctx, it->__opaque, kind, id);
}

struct task_struct *bpf_iter_scx_dsq_next(struct bpf_iter_scx_dsq *it)
{
	return H->dsq_iter_next(H->ctx, it->__opaque);
}

void bpf_iter_scx_dsq_destroy(struct bpf_iter_scx_dsq *it)
{
	H->dsq_iter_destroy(H->ctx, it->__opaque);
}

bool scx_bpf_dsq_move___new(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags)
{
	u32 kind;
	u64 id;

	wc_dsq_of(dsq_id, &kind, &id);
	return H->dsq_move(H->ctx, it->__opaque, wc_task_of(p)->tid, kind, id, wc_enq_of(enq_flags));
}

s32 scx_bpf_dsq_nr_queued(u64 dsq_id)
{
	u32 kind;
	u64 id;

	wc_dsq_of(dsq_id, &kind, &id);
	return H->dsq_nr_queued(H->ctx, kind, id);
}

/* ext.c, scx_bpf_dsq_peek: the first task of a queue, left in it. */
struct task_struct *scx_bpf_dsq_peek(u64 dsq_id)
{
	u32 kind;
	u64 id;

	wc_dsq_of(dsq_id, &kind, &id);
	return H->dsq_peek(H->ctx, kind, id);
}

void scx_bpf_kick_cpu(s32 cpu, u64 flags)
{
	H->kick_cpu(H->ctx, cpu,
		    (flags & SCX_KICK_IDLE ? WC_SIM_KICK_IDLE : 0) |
		    (flags & SCX_KICK_PREEMPT ? WC_SIM_KICK_PREEMPT : 0) |
		    (flags & SCX_KICK_WAIT ? WC_SIM_KICK_WAIT : 0));
}

s32 scx_bpf_task_cpu(const struct task_struct *p)
{
	return H->task_cpu(H->ctx, wc_task_of(p)->tid);
}

/* ext.c, scx_bpf_task_running: the task is its CPU's current one. */
bool scx_bpf_task_running(const struct task_struct *p)
{
	return H->task_running(H->ctx, wc_task_of(p)->tid);
}

/* ext.c, scx_bpf_cpu_curr: the CPU's rq->curr, its idle task when idle. */
struct task_struct *scx_bpf_cpu_curr(s32 cpu)
{
	struct task_struct *p;

	if (cpu < 0 || (u32)cpu >= wc_nr_cpus) {
		wc_error("invalid CPU in scx_bpf_cpu_curr");
		return NULL;
	}
	p = H->cpu_curr(H->ctx, cpu);
	return p ? p : wc_idle_task(cpu);
}

u32 scx_bpf_nr_cpu_ids(void)
{
	return wc_nr_cpus;
}

u32 scx_bpf_nr_node_ids(void)
{
	return wc_nr_nodes;
}

int scx_bpf_cpu_node(s32 cpu)
{
	if (cpu < 0 || (u32)cpu >= wc_nr_cpus) {
		wc_error("invalid CPU in scx_bpf_cpu_node");
		return NUMA_NO_NODE;
	}
	return wc_cpu_node[cpu];
}

/* ext.c: cpu_possible_mask, every CPU of the machine. */
const struct cpumask *scx_bpf_get_possible_cpumask(void)
{
	return &wc_possible_mask;
}

/* ext.c: cpu_online_mask, as the simulator's hotplug keeps it
 * (wc_sim_set_online). */
const struct cpumask *scx_bpf_get_online_cpumask(void)
{
	return &wc_online_mask;
}

/* ext.c: the masks above are the kernel's own; nothing to release. */
void scx_bpf_put_cpumask(const struct cpumask *cpumask)
{
}

u64 (scx_bpf_now)(void)	/* (the name, not compat.bpf.h's macro) */
{
	return H->now(H->ctx);
}

bool scx_bpf_test_and_clear_cpu_idle(s32 cpu)
{
	return H->test_and_clear_cpu_idle(H->ctx, cpu);
}

static u32 wc_pick_of(u64 flags)
{
	return (flags & SCX_PICK_IDLE_CORE ? WC_SIM_PICK_CORE : 0) |
	       (flags & SCX_PICK_IDLE_IN_NODE ? WC_SIM_PICK_IN_NODE : 0);
}

s32 scx_bpf_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	return H->pick_idle_cpu(H->ctx, (const unsigned long long *)cpus_allowed->bits, wc_pick_of(flags), -1);
}

s32 scx_bpf_pick_idle_cpu_node(const cpumask_t *cpus_allowed, int node, u64 flags)
{
	if (node < 0 || (u32)node >= wc_nr_nodes) {
		wc_error("invalid node in scx_bpf_pick_idle_cpu_node");
		return -EINVAL;
	}
	return H->pick_idle_cpu(H->ctx, (const unsigned long long *)cpus_allowed->bits, wc_pick_of(flags), node);
}

/* ext_idle.c, scx_bpf_pick_any_cpu: an idle CPU if any, else any allowed. */
s32 scx_bpf_pick_any_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	s32 cpu = scx_bpf_pick_idle_cpu(cpus_allowed, flags);

	if (cpu >= 0)
		return cpu;
	cpu = bpf_cpumask_any_distribute(cpus_allowed);
	return (u32)cpu < wc_nr_cpus ? cpu : -EBUSY;
}

s32 scx_bpf_pick_any_cpu_node(const cpumask_t *cpus_allowed, int node, u64 flags)
{
	s32 cpu = scx_bpf_pick_idle_cpu_node(cpus_allowed, node, flags);

	if (cpu >= 0)
		return cpu;
	cpu = bpf_cpumask_any_distribute(cpus_allowed);
	return (u32)cpu < wc_nr_cpus ? cpu : -EBUSY;
}

/* ext_idle.c, scx_bpf_select_cpu_dfl: the built-in selection, @prev_cpu if
 * nothing idle is found. */
s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle)
{
	s32 cpu;

	cpu = H->select_cpu_and(H->ctx, wc_task_of(p)->tid, prev_cpu, !!(wake_flags & SCX_WAKE_SYNC), NULL, 0);
	if (is_idle)
		*is_idle = cpu >= 0;
	return cpu >= 0 ? cpu : prev_cpu;
}

/* ext_idle.c, __scx_bpf_select_cpu_and: the built-in selection among
 * @cpus_allowed (and the task's CPUs); -EBUSY if nothing idle is found. */
s32 __scx_bpf_select_cpu_and(struct task_struct *p, const struct cpumask *cpus_allowed,
			     struct scx_bpf_select_cpu_and_args *args)
{
	return H->select_cpu_and(H->ctx, wc_task_of(p)->tid, args->prev_cpu, !!(args->wake_flags & SCX_WAKE_SYNC),
				 (const unsigned long long *)cpus_allowed->bits, wc_pick_of(args->flags));
}

const struct cpumask *scx_bpf_get_idle_cpumask(void)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 0, -1);
}

const struct cpumask *scx_bpf_get_idle_smtmask(void)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 1, -1);
}

const struct cpumask *scx_bpf_get_idle_cpumask_node(int node)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 0, node);
}

const struct cpumask *scx_bpf_get_idle_smtmask_node(int node)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 1, node);
}

void scx_bpf_put_idle_cpumask(const struct cpumask *idle_mask)
{
}

u32 scx_bpf_cpuperf_cur(s32 cpu)
{
	return H->cpuperf_cur(H->ctx, cpu);
}

u32 scx_bpf_cpuperf_cap(s32 cpu)
{
	return SCX_CPUPERF_ONE;
}

void scx_bpf_cpuperf_set(s32 cpu, u32 perf)
{
	H->cpuperf_set(H->ctx, cpu, perf);
}

bool scx_bpf_task_set_slice___new(struct task_struct *p, u64 slice)
{
	p->scx.slice = slice;
	return true;
}

bool scx_bpf_task_set_dsq_vtime___new(struct task_struct *p, u64 vtime)
{
	p->scx.dsq_vtime = vtime;
	return true;
}

/* The subset of the kernel's bstr formats the program can use. */
static char *wc_put_u64(char *o, char *end, u64 v, u32 base)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n && o < end)
		*o++ = tmp[--n];
	return o;
}

static void wc_format(char *out, u32 size, const char *fmt, const unsigned long long *data, u32 data_sz)
{
	char *o = out, *end = out + size - 1;
	u32 arg = 0, nargs = data_sz / 8;
	int longs;
	u64 v;

	while (*fmt && o < end) {
		if (*fmt != '%') {
			*o++ = *fmt++;
			continue;
		}
		fmt++;
		if (*fmt == '%') {
			*o++ = *fmt++;
			continue;
		}
		longs = 0;
		while (*fmt == 'l') {
			longs++;
			fmt++;
		}
		v = arg < nargs ? data[arg] : 0;
		arg++;
		switch (*fmt) {
		case 'd':
		case 'i':
			if (longs < 2)
				v = (u64)(s64)(s32)v;
			if ((s64)v < 0 && o < end) {
				*o++ = '-';
				v = -(s64)v;
			}
			o = wc_put_u64(o, end, v, 10);
			break;
		case 'u':
			o = wc_put_u64(o, end, longs < 2 ? (u32)v : v, 10);
			break;
		case 'x':
		case 'p':
			o = wc_put_u64(o, end, longs < 2 && *fmt == 'x' ? (u32)v : v, 16);
			break;
		case 's':
			/* Strings are kernel pointers; on the host they are ours. */
			for (const char *s = (const char *)v; s && *s && o < end; s++)
				*o++ = *s;
			break;
		case 'c':
			*o++ = (char)v;
			break;
		default:
			break;
		}
		if (*fmt)
			fmt++;
	}
	*o = 0;
}

void scx_bpf_error_bstr(char *fmt, unsigned long long *data, u32 data_len)
{
	char msg[256];

	wc_format(msg, sizeof(msg), fmt, data, data_len);
	wc_error(msg);
}

void scx_bpf_exit_bstr(s64 exit_code, char *fmt, unsigned long long *data, u32 data_len)
{
	char msg[256];

	wc_format(msg, sizeof(msg), fmt, data, data_len);
	wc_error(msg);
}

/* scx_bpf_dump_bstr writes to the exit dump, which the simulator has not. */
void scx_bpf_dump_bstr(char *fmt, unsigned long long *data, u32 data_len)
{
}

/* ------------------------------------------------------------ entry points */

static void wc_task_init(struct wc_task *t, u32 tid, s32 pid)
{
	u32 c;

	t->tid = tid;
	t->p.pid = pid;
	t->p.tgid = pid;
	t->p.scx.weight = 100;	/* nice 0 */
	t->p.static_prio = 120;	/* MAX_RT_PRIO + 20 + nice, nice 0 */
	t->p.prio = 120;
	t->p.normal_prio = 120;
	t->p.cpus_ptr = &t->p.cpus_mask;
	for (c = 0; c < wc_nr_cpus && c < WC_MASK_BITS; c++)
		t->p.cpus_mask.bits[c / 64] |= 1UL << (c % 64);
	t->p.nr_cpus_allowed = wc_nr_cpus;
}

/*
 * Called once, before anything else: storage for the maps, the per-CPU
 * variables, the idle tasks and the root cgroup. Returns 0, or a negative
 * errno with *@what naming the map it could not set up.
 */
int wc_sim_attach(const struct wc_host_ops *ops, const struct wc_sim_topology *topo, const char **what)
{
	u32 t, i, c, copies, next_storage[2] = { 0, 0 };
	struct wc_map *m;

	H = ops;
	CONFIG_HZ = ops->hz;
	wc_nr_cpus = topo->nr_cpus;
	wc_nr_nodes = topo->nr_nodes;
	*what = "";
	wc_cpu_node = calloc(wc_nr_cpus, sizeof(int));
	wc_percpus[0].values = calloc(wc_nr_cpus, sizeof(int));
	wc_percpus[1].values = calloc(wc_nr_cpus, sizeof(int));
	wc_idle_tasks = calloc(wc_nr_cpus, sizeof(struct wc_task));
	wc_root_cgroup = calloc(1, sizeof(struct wc_cgroup));
	if (!wc_cpu_node || !wc_percpus[0].values || !wc_percpus[1].values || !wc_idle_tasks || !wc_root_cgroup)
		return -ENOMEM;
	for (c = 0; c < wc_nr_cpus; c++) {
		wc_cpu_node[c] = topo->cpu_node[c];
		wc_percpus[0].values[c] = topo->llc_id[c];
		wc_percpus[1].values[c] = topo->llc_size[c];
		wc_idle_tasks[c].tid = (u32)-1;
		wc_idle_tasks[c].p.flags = PF_IDLE | PF_KTHREAD;
		wc_idle_tasks[c].p.cpus_ptr = &wc_idle_tasks[c].p.cpus_mask;
		wc_idle_tasks[c].p.cpus_mask.bits[c / 64] = 1UL << (c % 64);
		wc_idle_tasks[c].p.nr_cpus_allowed = 1;
		wc_possible_mask.bits[c / 64] |= 1UL << (c % 64);
		wc_online_mask.bits[c / 64] |= 1UL << (c % 64);
	}
	for (t = 0; t < WC_NR_TUS; t++) {
		for (i = 0; i < wc_tus[t]->nr_maps; i++) {
			m = &wc_tus[t]->maps[i];
			*what = m->name;
			m->stride = (m->value_size + 7) & ~7u;
			switch (m->type) {
			case BPF_MAP_TYPE_ARRAY:
			case BPF_MAP_TYPE_HASH:
			case BPF_MAP_TYPE_PERCPU_ARRAY:
				copies = m->type == BPF_MAP_TYPE_PERCPU_ARRAY ? wc_nr_cpus : 1;
				if (m->type == BPF_MAP_TYPE_HASH) {
					for (m->slots = 1; m->slots < 2 * m->max_entries; m->slots *= 2)
						;
					m->count = 0;
					m->keys = calloc(m->slots, m->key_size);
					m->used = calloc(m->slots, 1);
					m->values = calloc(m->slots, m->stride);
					if (!m->keys || !m->used || !m->values)
						return -ENOMEM;
					break;
				}
				m->values = calloc((u64)m->max_entries * copies, m->stride);
				if (!m->values)
					return -ENOMEM;
				break;
			case BPF_MAP_TYPE_TASK_STORAGE:
			case BPF_MAP_TYPE_CGRP_STORAGE:
				c = m->type == BPF_MAP_TYPE_CGRP_STORAGE;
				if (next_storage[c] >= WC_MAX_LOCAL_STORAGE)
					return -E2BIG;
				m->storage_slot = next_storage[c]++;
				break;
			case BPF_MAP_TYPE_PERF_EVENT_ARRAY:
				/* No PMU: every slot stays empty. */
				break;
			default:
				return -EOPNOTSUPP;
			}
		}
	}
	*what = "";
	return 0;
}

/* Frees what attach and the program allocated (tasks are freed by the
 * simulator, wc_sim_task_free). */
void wc_sim_detach(void)
{
	struct wc_cpumask_node *n;
	u32 t, i;

	for (t = 0; t < WC_NR_TUS; t++) {
		for (i = 0; i < wc_tus[t]->nr_maps; i++) {
			free(wc_tus[t]->maps[i].values);
			free(wc_tus[t]->maps[i].keys);
			free(wc_tus[t]->maps[i].used);
			wc_tus[t]->maps[i].values = wc_tus[t]->maps[i].keys = wc_tus[t]->maps[i].used = NULL;
		}
	}
	while ((n = wc_cpumasks)) {
		wc_cpumasks = n->next;
		free(n);
	}
	if (wc_root_cgroup)
		for (i = 0; i < WC_MAX_LOCAL_STORAGE; i++)
			free(wc_root_cgroup->storage[i]);
	free(wc_root_cgroup);
	free(wc_idle_tasks);
	free(wc_cpu_node);
	free(wc_percpus[0].values);
	free(wc_percpus[1].values);
}

/* Element @index of the global @name (a variable a loader writes), and its
 * size in @size; NULL with @err -ENOENT (no such global) or -E2BIG (index
 * out of range). */
static u8 *wc_global_at(const char *name, u32 index, u32 *size, int *err)
{
	const struct wc_knob *k;
	u32 t, i;

	for (t = 0; t < WC_NR_TUS; t++) {
		for (i = 0; i < wc_tus[t]->nr_globals; i++) {
			k = &wc_tus[t]->globals[i];
			if (!wc_streq(k->name, name))
				continue;
			if (index >= k->count) {
				*err = -E2BIG;
				return NULL;
			}
			*size = k->size;
			return (u8 *)k->addr + (u64)index * k->size;
		}
	}
	*err = -ENOENT;
	return NULL;
}

/* Set element @index of a global (as a loader writes .rodata, .data or
 * .bss). 0 or an error of wc_global_at, -EINVAL for a size that is no
 * scalar's. */
int wc_sim_global_set(const char *name, u32 index, u64 value)
{
	int err = 0;
	u32 size = 0;
	u8 *at = wc_global_at(name, index, &size, &err);

	if (!at)
		return err;
	switch (size) {
	case 1: *(u8 *)at = value; break;
	case 2: *(u16 *)at = value; break;
	case 4: *(u32 *)at = value; break;
	case 8: *(u64 *)at = value; break;
	default: return -EINVAL;
	}
	return 0;
}

/* Read a global back. */
int wc_sim_global_get(const char *name, u32 index, u64 *value)
{
	int err = 0;
	u32 size = 0;
	const u8 *at = wc_global_at(name, index, &size, &err);

	if (!at)
		return err;
	switch (size) {
	case 1: *value = *(const u8 *)at; break;
	case 2: *value = *(const u16 *)at; break;
	case 4: *value = *(const u32 *)at; break;
	case 8: *value = *(const u64 *)at; break;
	default: return -EINVAL;
	}
	return 0;
}

/* A global's element size and count; -ENOENT if there is none. */
int wc_sim_global_info(const char *name, u32 *size, u32 *count)
{
	const struct wc_knob *k;
	u32 t, i;

	for (t = 0; t < WC_NR_TUS; t++) {
		for (i = 0; i < wc_tus[t]->nr_globals; i++) {
			k = &wc_tus[t]->globals[i];
			if (wc_streq(k->name, name)) {
				*size = k->size;
				*count = k->count;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* A SEC("syscall") program, with its argument's layout; NULL if none. */
const struct wc_syscall *wc_sim_syscall(const char *name)
{
	u32 t, i;

	for (t = 0; t < WC_NR_TUS; t++)
		for (i = 0; i < wc_tus[t]->nr_progs; i++)
			if (wc_streq(wc_tus[t]->progs[i].name, name))
				return &wc_tus[t]->progs[i];
	return NULL;
}

/* A map's storage, to read statistics or fill a map before the program runs. */
void *wc_sim_map(const char *name, u32 *type, u32 *stride, u32 *max_entries, u32 *copies)
{
	struct wc_map *m = wc_map_named(name);

	if (!m)
		return NULL;
	*type = m->type;
	*stride = m->stride;
	/* (A hash map's storage is its table of slots.) */
	*max_entries = m->type == BPF_MAP_TYPE_HASH ? m->slots : m->max_entries;
	*copies = m->type == BPF_MAP_TYPE_PERCPU_ARRAY ? wc_nr_cpus : 1;
	return m->values;
}

/* A map's key and value sizes; -ENOENT if there is none. */
int wc_sim_map_info(const char *name, u32 *key_size, u32 *value_size)
{
	struct wc_map *m = wc_map_named(name);

	if (!m)
		return -ENOENT;
	*key_size = m->key_size;
	*value_size = m->value_size;
	return 0;
}

long wc_sim_map_update(const char *name, const void *key, const void *value)
{
	struct wc_map *m = wc_map_named(name);

	if (!m)
		return -ENOENT;
	return wc_helper_bpf_map_update_elem(m->def, key, value, BPF_ANY);
}

/* A task: runnable on every CPU, or only on @only_cpu (>= 0). */
struct task_struct *wc_sim_task_new(u32 tid, s32 pid, s32 only_cpu)
{
	struct wc_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	wc_task_init(t, tid, pid);
	if (only_cpu >= 0) {
		__builtin_memset(&t->p.cpus_mask, 0, sizeof(t->p.cpus_mask));
		if ((u32)only_cpu < WC_MASK_BITS)
			t->p.cpus_mask.bits[only_cpu / 64] |= 1UL << (only_cpu % 64);
		t->p.nr_cpus_allowed = 1;
	}
	return &t->p;
}

/* sched_setaffinity: the task's allowed CPUs (set_cpus_allowed_common in
 * kernel/sched/core.c), @nwords words of CPU bits. */
void wc_sim_task_set_cpus(struct task_struct *p, const u64 *words, u32 nwords)
{
	u32 i, n = 0;

	__builtin_memset(&p->cpus_mask, 0, sizeof(p->cpus_mask));
	for (i = 0; i < nwords && i < WC_MASK_BITS / 64; i++) {
		p->cpus_mask.bits[i] = words[i];
		n += __builtin_popcountll(words[i]);
	}
	p->nr_cpus_allowed = n;
}

/* migrate_disable_switch and migrate_enable (kernel/sched/core.c, through
 * set_cpus_allowed_common with SCA_MIGRATE_DISABLE / SCA_MIGRATE_ENABLE):
 * p->cpus_ptr is cpumask_of(@cpu) (the idle task's mask holds that CPU
 * alone) or, for @cpu < 0, the task's own cpus_mask again; cpus_mask and
 * nr_cpus_allowed do not change. */
void wc_sim_task_set_cpus_ptr(struct task_struct *p, s32 cpu)
{
	p->cpus_ptr = cpu >= 0 ? &wc_idle_tasks[cpu].p.cpus_mask : &p->cpus_mask;
}

void wc_sim_task_free(struct task_struct *p)
{
	struct wc_task *t = wc_task_of(p);
	u32 i;

	for (i = 0; i < WC_MAX_LOCAL_STORAGE; i++)
		free(t->storage[i]);
	free(t);
}

/* setpriority and sched_setscheduler as the program sees them: the nice
 * value, the policy (SCHED_NORMAL or SCHED_IDLE) and the weight the
 * simulator derived from them (crates/sim/src/prio.rs: the load weight on
 * the cgroup scale, scx_enable_task and reweight_task_scx). */
void wc_sim_task_set_prio(struct task_struct *p, s32 nice, s32 policy, u32 weight)
{
	p->scx.weight = weight;
	p->policy = policy;
	p->static_prio = 120 + nice;
	p->prio = p->static_prio;
	p->normal_prio = p->static_prio;
}

/* migrate_disable and migrate_enable: @depth is the task's own count. The
 * program reads the count plus one while it is above zero: the value of a
 * migration-disabled task that is current under a BPF prolog that disables
 * migration (CONFIG_PREEMPT_RCU, as this host declares), so that the scx
 * headers' is_migration_disabled(), which discounts that one for the
 * current task, answers as in the kernel whichever task is current. */
void wc_sim_task_set_migration_disabled(struct task_struct *p, u32 depth)
{
	p->migration_disabled = depth ? depth + 1 : 0;
}

/* What the kernel keeps in the task and the program reads or writes. */
u64 wc_sim_task_slice(struct task_struct *p)
{
	return p->scx.slice;
}

void wc_sim_task_set_slice(struct task_struct *p, u64 slice)
{
	p->scx.slice = slice;
}

/* sum_exec_runtime, and utime: the model's tasks run in user space. */
void wc_sim_task_set_runtime(struct task_struct *p, u64 sum_exec_runtime)
{
	p->se.sum_exec_runtime = sum_exec_runtime;
	p->utime = sum_exec_runtime;
}

void wc_sim_task_set_state(struct task_struct *p, u32 queued, u32 exiting)
{
	if (queued)
		p->scx.flags |= SCX_TASK_QUEUED;
	else
		p->scx.flags &= ~SCX_TASK_QUEUED;
	if (exiting)
		p->flags |= PF_EXITING;
	else
		p->flags &= ~PF_EXITING;
}

u32 wc_sim_slice_inf_is(u64 slice)
{
	return slice == SCX_SLICE_INF;
}

u32 wc_sim_cpuperf_one(void)
{
	return SCX_CPUPERF_ONE;
}

u32 wc_sim_ops_mask(void)
{
	return (WC_OPS.select_cpu ? WC_SIM_OP_SELECT_CPU : 0) |
	       (WC_OPS.enqueue ? WC_SIM_OP_ENQUEUE : 0) |
	       (WC_OPS.dispatch ? WC_SIM_OP_DISPATCH : 0) |
	       (WC_OPS.running ? WC_SIM_OP_RUNNING : 0) |
	       (WC_OPS.stopping ? WC_SIM_OP_STOPPING : 0) |
	       (WC_OPS.tick ? WC_SIM_OP_TICK : 0) |
	       (WC_OPS.update_idle ? WC_SIM_OP_UPDATE_IDLE : 0) |
	       (WC_OPS.enable ? WC_SIM_OP_ENABLE : 0) |
	       (WC_OPS.init_task ? WC_SIM_OP_INIT_TASK : 0) |
	       (WC_OPS.exit_task ? WC_SIM_OP_EXIT_TASK : 0) |
	       (WC_OPS.init ? WC_SIM_OP_INIT : 0) |
	       (WC_OPS.exit ? WC_SIM_OP_EXIT : 0) |
	       (WC_OPS.runnable ? WC_SIM_OP_RUNNABLE : 0) |
	       (WC_OPS.quiescent ? WC_SIM_OP_QUIESCENT : 0) |
	       (WC_OPS.cgroup_init ? WC_SIM_OP_CGROUP_INIT : 0) |
	       (WC_OPS.set_cpumask ? WC_SIM_OP_SET_CPUMASK : 0) |
	       (WC_OPS.dequeue ? WC_SIM_OP_DEQUEUE : 0) |
	       (WC_OPS.cpu_online ? WC_SIM_OP_CPU_ONLINE : 0) |
	       (WC_OPS.cpu_offline ? WC_SIM_OP_CPU_OFFLINE : 0);
}

u32 wc_sim_timeout_ms(void)
{
	return WC_OPS.timeout_ms;
}

/*
 * The operations, called as a BPF struct_ops trampoline calls them: the
 * arguments in an array of u64 (BPF_PROG's context). An operation the
 * program does not define is not called (the simulator checks the mask).
 */
typedef u64 (*wc_prog_t)(u64 *ctx);
#define WC_CALL(op, ...) ({ u64 __ctx[] = { __VA_ARGS__ }; ((wc_prog_t)(WC_OPS.op))(__ctx); })
#define WC_CALL0(op) ({ u64 __ctx[1] = { 0 }; ((wc_prog_t)(WC_OPS.op))(__ctx); })

s32 wc_sim_select_cpu(struct task_struct *p, s32 prev_cpu, u32 wake, u32 sync)
{
	u64 flags = wake == WC_SIM_WAKE_FORK ? SCX_WAKE_FORK : SCX_WAKE_TTWU;

	if (sync)
		flags |= SCX_WAKE_SYNC;
	return (s32)WC_CALL(select_cpu, (u64)p, (u64)(s64)prev_cpu, flags);
}

void wc_sim_enqueue(struct task_struct *p, u32 enq)
{
	/* A task handed back after an IMMED insert it could not use says why
	 * in its flags (ext.c, SCX_TASK_REENQ_IMMED). */
	if (enq & WC_SIM_ENQ_REENQ)
		p->scx.flags = (p->scx.flags & ~SCX_TASK_REENQ_REASON_MASK) | SCX_TASK_REENQ_IMMED;
	WC_CALL(enqueue, (u64)p, wc_kernel_enq(enq));
}

void wc_sim_runnable(struct task_struct *p, u32 enq)
{
	WC_CALL(runnable, (u64)p, wc_kernel_enq(enq));
}

/* ops.quiescent with the kernel's dequeue flags (core.c's DEQUEUE_*:
 * SCX_DEQ_SLEEP is DEQUEUE_SLEEP). */
void wc_sim_quiescent(struct task_struct *p, u64 deq)
{
	WC_CALL(quiescent, (u64)p, deq);
}

/* ops.dequeue with the kernel's dequeue flags (core.c's DEQUEUE_*). */
void wc_sim_dequeue(struct task_struct *p, u64 deq)
{
	WC_CALL(dequeue, (u64)p, deq);
}

void wc_sim_dispatch(s32 cpu, struct task_struct *prev)
{
	WC_CALL(dispatch, (u64)(s64)cpu, (u64)prev);
}

void wc_sim_running(struct task_struct *p)
{
	WC_CALL(running, (u64)p);
}

void wc_sim_stopping(struct task_struct *p, u32 runnable)
{
	WC_CALL(stopping, (u64)p, (u64)!!runnable);
}

/* ext.c, set_cpus_allowed_scx: ops.set_cpumask after the mask changed. */
void wc_sim_set_cpumask(struct task_struct *p)
{
	WC_CALL(set_cpumask, (u64)p, (u64)p->cpus_ptr);
}

/* kernel/cpu.c, set_cpu_online: @cpu enters or leaves cpu_online_mask
 * (every CPU is online at attach). */
void wc_sim_set_online(s32 cpu, bool online)
{
	if (cpu < 0 || (u32)cpu >= wc_nr_cpus)
		return;
	if (online)
		wc_online_mask.bits[cpu / 64] |= 1UL << (cpu % 64);
	else
		wc_online_mask.bits[cpu / 64] &= ~(1UL << (cpu % 64));
}

/* ext.c, handle_hotplug: the CPU came back, or is going down. */
void wc_sim_cpu_online(s32 cpu)
{
	WC_CALL(cpu_online, (u64)(s64)cpu);
}

void wc_sim_cpu_offline(s32 cpu)
{
	WC_CALL(cpu_offline, (u64)(s64)cpu);
}

void wc_sim_tick(struct task_struct *p)
{
	WC_CALL(tick, (u64)p);
}

void wc_sim_update_idle(s32 cpu, u32 idle)
{
	WC_CALL(update_idle, (u64)(s64)cpu, (u64)!!idle);
}

void wc_sim_enable(struct task_struct *p)
{
	WC_CALL(enable, (u64)p);
}

/* ops.init_task; the task is in the root cgroup (ext.c, scx_init_task). */
s32 wc_sim_init_task(struct task_struct *p, u32 fork)
{
	struct scx_init_task_args args = { .fork = fork, .cgroup = &wc_root_cgroup->cg };

	return (s32)WC_CALL(init_task, (u64)p, (u64)&args);
}

void wc_sim_exit_task(struct task_struct *p)
{
	struct scx_exit_task_args args = { .cancelled = false };

	WC_CALL(exit_task, (u64)p, (u64)&args);
}

s32 wc_sim_init(void)
{
	return (s32)WC_CALL0(init);
}

/* ext.c, scx_cgroup_init: ops.cgroup_init of every cgroup, here the root,
 * at its default weight. */
s32 wc_sim_cgroup_init(void)
{
	/* The root cgroup's cpu.weight: CGROUP_WEIGHT_DFL. */
	struct scx_cgroup_init_args args = { .weight = 100 };

	return (s32)WC_CALL(cgroup_init, (u64)&wc_root_cgroup->cg, (u64)&args);
}

/* The scheduler is unloaded (@why: enum wc_sim_exit_why), with @msg. */
void wc_sim_exit(u32 why, const char *msg)
{
	struct scx_exit_info ei = {};

	switch (why) {
	case WC_SIM_EXIT_ERROR:
		ei.kind = SCX_EXIT_ERROR_BPF;
		ei.reason = "scx_bpf_error";
		break;
	case WC_SIM_EXIT_HOTPLUG:
		/* ext.c, handle_hotplug and scx_exit_reason: the kernel asks
		 * its loader to load the scheduler again. */
		ei.kind = SCX_EXIT_UNREG_KERN;
		ei.exit_code = SCX_ECODE_ACT_RESTART | SCX_ECODE_RSN_HOTPLUG;
		ei.reason = "unregistered from the main kernel";
		break;
	default:
		ei.kind = SCX_EXIT_UNREG;
		ei.reason = "unregistered from user space";
	}
	ei.msg = msg ? msg : "";
	ei.dump = "";
	WC_CALL(exit, (u64)&ei);
}

/* A timer expired: run its callback as the kernel would, (map, key, value). */
void wc_sim_timer_fire(u32 slot)
{
	struct wc_timer *t;
	int key;

	if (slot >= wc_nr_timers)
		return;
	t = &wc_timers[slot];
	key = t->key;
	((int (*)(void *, int *, void *))t->cb)(t->map, &key, t->value);
}
