/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sched_ext program of crates/sched (main.bpf.c and the parts it
 * includes, the very files the kernel loads) built as a host shared object
 * that the simulator loads, one fresh copy per run
 * (crates/sim/src/scx/program.rs), so that every run has its own globals,
 * maps and masks.
 *
 * This file is one translation unit: the prelude (the scx headers with their
 * BPF-only constructs given a host meaning), the program, the tables that
 * build.rs generates from it (its maps and its load-time knobs), then the
 * helpers and kfuncs the program calls, over the simulator's `wc_host_ops`
 * (host.h). No libc header is included: vmlinux.h's kernel types collide
 * with them; the three libc functions used are declared here.
 *
 * What each kfunc does follows kernel/sched/ext.c and ext_idle.c; the
 * simulator side says which parts of them it models.
 */
#include "prelude.h"

/* The program's `const volatile` knobs are set before it runs, as the
 * loader sets them before load: plain globals here. Only the program's own
 * text (main.bpf.c, its parts, intf.h) is affected; the scx headers it
 * includes were included by the prelude. */
#define const
#include "main.bpf.c"
#undef const

#include "host.h"

void *calloc(unsigned long n, unsigned long size);
void free(void *p);

#define WC_MAP_NAME_MAX 32

struct wc_map {
	const char *name;
	void *def;		/* the program's map variable: the map's identity */
	u32 type;
	u32 key_size;
	u32 value_size;
	u32 max_entries;
	/* Storage, laid out as the kernel does: values rounded up to 8 bytes;
	 * per-CPU arrays hold nr_cpus copies of each entry, CPU-major. */
	u32 stride;
	u8 *values;
	u8 *keys;		/* HASH */
	u8 *used;		/* HASH */
	u32 storage_slot;	/* TASK_STORAGE */
};

struct wc_knob {
	const char *name;
	void *addr;
	u32 size;		/* of one element */
	u32 count;		/* elements (1 for a scalar) */
};

/* build.rs: wc_maps[], wc_knobs[], WC_OPS. */
#include "wc_scx_tables.h"

#define WC_NR_MAPS (sizeof(wc_maps) / sizeof(wc_maps[0]))
#define WC_NR_KNOBS (sizeof(wc_knobs) / sizeof(wc_knobs[0]))
#define WC_MAX_TASK_STORAGE 4
#define WC_MAX_TIMERS 4096

static const struct wc_host_ops *H;
static u32 wc_nr_cpus;

/* A task as the program sees it, and what the host keeps beside it. */
struct wc_task {
	struct task_struct p;
	u32 tid;
	void *storage[WC_MAX_TASK_STORAGE];
};

#define wc_task_of(ptr) ((struct wc_task *)((u8 *)(ptr) - __builtin_offsetof(struct wc_task, p)))

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

static struct wc_map *wc_map_of(void *def)
{
	u32 i;

	for (i = 0; i < WC_NR_MAPS; i++)
		if (wc_maps[i].def == def)
			return &wc_maps[i];
	return NULL;
}

static void wc_error(const char *msg)
{
	H->error(H->ctx, msg);
}

/* ------------------------------------------------------------ helpers */

void *wc_host_map_lookup_elem(void *def, const void *key)
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
		for (i = 0; i < m->max_entries; i++)
			if (m->used[i] && !__builtin_memcmp(m->keys + (u64)i * m->key_size, key, m->key_size))
				return m->values + (u64)i * m->stride;
		return NULL;
	}
	return NULL;
}

long wc_host_map_update_elem(void *def, const void *key, const void *value, u64 flags)
{
	struct wc_map *m = wc_map_of(def);
	void *slot;
	u32 i, free_i = (u32)-1;

	if (!m || !m->values)
		return -EINVAL;
	if (m->type == BPF_MAP_TYPE_HASH) {
		slot = wc_host_map_lookup_elem(def, key);
		if (slot) {
			if (flags == BPF_NOEXIST)
				return -EEXIST;
			wc_copy(slot, value, m->value_size);
			return 0;
		}
		if (flags == BPF_EXIST)
			return -ENOENT;
		for (i = 0; i < m->max_entries; i++) {
			if (!m->used[i]) {
				free_i = i;
				break;
			}
		}
		if (free_i == (u32)-1)
			return -E2BIG;
		m->used[free_i] = 1;
		wc_copy(m->keys + (u64)free_i * m->key_size, key, m->key_size);
		wc_copy(m->values + (u64)free_i * m->stride, value, m->value_size);
		return 0;
	}
	slot = wc_host_map_lookup_elem(def, key);
	if (!slot)
		return -E2BIG;
	if (flags == BPF_NOEXIST)
		return -EEXIST;
	/* The bpf_timer inside a value is kept as it is (as the kernel's
	 * copy_map_value skips special fields): only this program has timers in
	 * arrays it never updates whole, so a plain copy is right. */
	wc_copy(slot, value, m->value_size);
	return 0;
}

long wc_host_map_delete_elem(void *def, const void *key)
{
	struct wc_map *m = wc_map_of(def);
	u32 i;

	if (!m || m->type != BPF_MAP_TYPE_HASH)
		return -EINVAL;
	for (i = 0; i < m->max_entries; i++) {
		if (m->used[i] && !__builtin_memcmp(m->keys + (u64)i * m->key_size, key, m->key_size)) {
			m->used[i] = 0;
			__builtin_memset(m->values + (u64)i * m->stride, 0, m->stride);
			return 0;
		}
	}
	return -ENOENT;
}

u64 wc_host_ktime_get_ns(void)
{
	return H->now(H->ctx);
}

u32 wc_host_smp_processor_id(void)
{
	return H->cpu(H->ctx);
}

void *wc_host_task_storage_get(void *def, struct task_struct *task, void *value, u64 flags)
{
	struct wc_map *m = wc_map_of(def);
	struct wc_task *t;
	void **slot;

	if (!m || m->type != BPF_MAP_TYPE_TASK_STORAGE || !task)
		return NULL;
	t = wc_task_of(task);
	slot = &t->storage[m->storage_slot];
	if (!*slot && (flags & BPF_LOCAL_STORAGE_GET_F_CREATE)) {
		*slot = calloc(1, m->stride);
		if (*slot && value)
			wc_copy(*slot, value, m->value_size);
	}
	return *slot;
}

long wc_host_task_storage_delete(void *def, struct task_struct *task)
{
	struct wc_map *m = wc_map_of(def);
	struct wc_task *t;

	if (!m || m->type != BPF_MAP_TYPE_TASK_STORAGE || !task)
		return -EINVAL;
	t = wc_task_of(task);
	if (!t->storage[m->storage_slot])
		return -ENOENT;
	free(t->storage[m->storage_slot]);
	t->storage[m->storage_slot] = NULL;
	return 0;
}

struct task_struct *wc_host_current_task(void)
{
	return H->current_task(H->ctx);
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

long wc_host_timer_init(struct bpf_timer *timer, void *def, u64 flags)
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

long wc_host_timer_set_callback(struct bpf_timer *timer, void *cb)
{
	struct wc_timer *t = wc_timer_of(timer);

	if (!t)
		return -EINVAL;
	t->cb = cb;
	return 0;
}

long wc_host_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags)
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

long wc_host_timer_cancel(struct bpf_timer *timer)
{
	struct wc_timer *t = wc_timer_of(timer);

	if (!t)
		return -EINVAL;
	return H->timer_cancel(H->ctx, t - wc_timers);
}

void *wc_host_kptr_xchg(void **kptr, void *new_ptr)
{
	void *old = *kptr;

	*kptr = new_ptr;
	return old;
}

long wc_host_probe_read_kernel_str(void *dst, u32 size, const void *src)
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

long wc_host_probe_read_kernel(void *dst, u32 size, const void *src)
{
	wc_copy(dst, src, size);
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

#define WC_MASK_BITS (sizeof(struct cpumask) * 8)

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
	if (cpu < WC_MASK_BITS)
		m->cpumask.bits[cpu / 64] |= 1UL << (cpu % 64);
}

void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{
	if (cpu < WC_MASK_BITS)
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

bool bpf_cpumask_empty(const struct cpumask *m)
{
	u32 i;

	for (i = 0; i < sizeof(m->bits) / sizeof(m->bits[0]); i++)
		if (m->bits[i])
			return false;
	return true;
}

#define WC_MASK_WORDS (sizeof(((struct cpumask *)0)->bits) / sizeof(((struct cpumask *)0)->bits[0]))

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

void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src)
{
	wc_copy(&dst->cpumask, src, sizeof(dst->cpumask));
}

bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
	u64 any = 0;
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		any |= dst->cpumask.bits[i] = a->bits[i] & b->bits[i];
	return any != 0;
}

void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *a, const struct cpumask *b)
{
	u32 i;

	for (i = 0; i < WC_MASK_WORDS; i++)
		dst->cpumask.bits[i] = a->bits[i] ^ b->bits[i];
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
	       (enq_flags & SCX_ENQ_LAST ? WC_SIM_ENQ_LAST : 0);
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

bool scx_bpf_test_and_clear_cpu_idle(s32 cpu)
{
	return H->test_and_clear_cpu_idle(H->ctx, cpu);
}

s32 scx_bpf_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	return H->pick_idle_cpu(H->ctx, (const unsigned long long *)cpus_allowed->bits,
				!!(flags & SCX_PICK_IDLE_CORE));
}

s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle)
{
	unsigned int found = 0;
	s32 cpu;

	cpu = H->select_cpu_dfl(H->ctx, wc_task_of(p)->tid, prev_cpu, !!(wake_flags & SCX_WAKE_SYNC), &found);
	if (is_idle)
		*is_idle = found;
	return cpu;
}

const struct cpumask *scx_bpf_get_idle_cpumask(void)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 0);
}

const struct cpumask *scx_bpf_get_idle_smtmask(void)
{
	return (const struct cpumask *)H->idle_mask(H->ctx, 1);
}

void scx_bpf_put_idle_cpumask(const struct cpumask *idle_mask)
{
}

u32 scx_bpf_cpuperf_cur(s32 cpu)
{
	return H->cpuperf_cur(H->ctx, cpu);
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

/* ------------------------------------------------------------ entry points */

/*
 * Called once, before anything else: storage for the maps. Returns 0, or a
 * negative errno (out of memory).
 */
/* The program's __kconfig externs, which libbpf fills from the kernel's
 * configuration. */
unsigned long CONFIG_HZ;

int wc_sim_attach(const struct wc_host_ops *ops, u32 nr_cpus)
{
	u32 i, copies, next_storage = 0;
	struct wc_map *m;

	H = ops;
	CONFIG_HZ = ops->hz;
	wc_nr_cpus = nr_cpus;
	for (i = 0; i < WC_NR_MAPS; i++) {
		m = &wc_maps[i];
		m->stride = (m->value_size + 7) & ~7u;
		switch (m->type) {
		case BPF_MAP_TYPE_ARRAY:
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			copies = m->type == BPF_MAP_TYPE_PERCPU_ARRAY ? nr_cpus : 1;
			m->values = calloc((u64)m->max_entries * copies, m->stride);
			if (!m->values)
				return -ENOMEM;
			if (m->type == BPF_MAP_TYPE_HASH) {
				m->keys = calloc(m->max_entries, m->key_size);
				m->used = calloc(m->max_entries, 1);
				if (!m->keys || !m->used)
					return -ENOMEM;
			}
			break;
		case BPF_MAP_TYPE_TASK_STORAGE:
			if (next_storage >= WC_MAX_TASK_STORAGE)
				return -E2BIG;
			m->storage_slot = next_storage++;
			break;
		default:
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

/* Frees what attach and the program allocated (tasks are freed by the
 * simulator, wc_sim_task_free). */
void wc_sim_detach(void)
{
	struct wc_cpumask_node *n;
	u32 i;

	for (i = 0; i < WC_NR_MAPS; i++) {
		free(wc_maps[i].values);
		free(wc_maps[i].keys);
		free(wc_maps[i].used);
		wc_maps[i].values = wc_maps[i].keys = wc_maps[i].used = NULL;
	}
	while ((n = wc_cpumasks)) {
		wc_cpumasks = n->next;
		free(n);
	}
}

/* Element @index of the load-time knob (a `const volatile` global) @name,
 * and its size in @size; NULL with @err -ENOENT (no such knob) or -E2BIG
 * (index out of range). */
static u8 *wc_knob_at(const char *name, u32 index, u32 *size, int *err)
{
	const struct wc_knob *k;
	u32 i;

	for (i = 0; i < WC_NR_KNOBS; i++) {
		k = &wc_knobs[i];
		if (!wc_streq(k->name, name))
			continue;
		if (index >= k->count) {
			*err = -E2BIG;
			return NULL;
		}
		*size = k->size;
		return (u8 *)k->addr + (u64)index * k->size;
	}
	*err = -ENOENT;
	return NULL;
}

/* Set a load-time knob, element @index of an array knob. 0 or an error of
 * wc_knob_at, -EINVAL for a size that is no scalar's. */
int wc_sim_knob_set(const char *name, u32 index, u64 value)
{
	int err = 0;
	u32 size = 0;
	u8 *at = wc_knob_at(name, index, &size, &err);

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

/* Read a load-time knob back (for the tests that compare the simulator's
 * globals with the kernel loader's). */
int wc_sim_knob_get(const char *name, u32 index, u64 *value)
{
	int err = 0;
	u32 size = 0;
	const u8 *at = wc_knob_at(name, index, &size, &err);

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

/* A map's storage, to read statistics or fill a map before the program runs. */
void *wc_sim_map(const char *name, u32 *type, u32 *stride, u32 *max_entries, u32 *copies)
{
	u32 i;

	for (i = 0; i < WC_NR_MAPS; i++) {
		if (!wc_streq(wc_maps[i].name, name))
			continue;
		*type = wc_maps[i].type;
		*stride = wc_maps[i].stride;
		*max_entries = wc_maps[i].max_entries;
		*copies = wc_maps[i].type == BPF_MAP_TYPE_PERCPU_ARRAY ? wc_nr_cpus : 1;
		return wc_maps[i].values;
	}
	return NULL;
}

long wc_sim_map_update(const char *name, const void *key, const void *value)
{
	u32 i;

	for (i = 0; i < WC_NR_MAPS; i++)
		if (wc_streq(wc_maps[i].name, name))
			return wc_host_map_update_elem(wc_maps[i].def, key, value, BPF_ANY);
	return -ENOENT;
}

/* A task: runnable on every CPU, or only on @only_cpu (>= 0). */
struct task_struct *wc_sim_task_new(u32 tid, s32 pid, s32 only_cpu)
{
	struct wc_task *t = calloc(1, sizeof(*t));
	u32 c;

	if (!t)
		return NULL;
	t->tid = tid;
	t->p.pid = pid;
	t->p.tgid = pid;
	t->p.scx.weight = 100;	/* nice 0 */
	t->p.static_prio = 120;	/* MAX_RT_PRIO + 20 + nice, nice 0 */
	t->p.prio = 120;
	t->p.normal_prio = 120;
	t->p.cpus_ptr = &t->p.cpus_mask;
	for (c = 0; c < wc_nr_cpus && c < WC_MASK_BITS; c++)
		if (only_cpu < 0 || c == (u32)only_cpu)
			t->p.cpus_mask.bits[c / 64] |= 1UL << (c % 64);
	t->p.nr_cpus_allowed = only_cpu < 0 ? wc_nr_cpus : 1;
	return &t->p;
}

void wc_sim_task_free(struct task_struct *p)
{
	struct wc_task *t = wc_task_of(p);
	u32 i;

	for (i = 0; i < WC_MAX_TASK_STORAGE; i++)
		free(t->storage[i]);
	free(t);
}

/* A nice value as the kernel turns it into the task's sched_ext weight:
 * its load weight (sched_prio_to_weight in kernel/sched/core.c) on the
 * cgroup scale, 100 for nice 0, rounded, within 1 .. 10000
 * (set_task_scx_weight and sched_weight_to_cgroup). */
void wc_sim_task_set_nice(struct task_struct *p, s32 nice)
{
	static const u32 prio_to_weight[40] = {
		88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
		9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277,
		1024, 820, 655, 526, 423, 335, 272, 215, 172, 137,
		110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
	};
	u64 w;

	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	w = ((u64)prio_to_weight[nice + 20] * 100 + 512) / 1024;
	p->scx.weight = w < 1 ? 1 : w > 10000 ? 10000 : w;
	p->static_prio = 120 + nice;
	p->prio = p->static_prio;
	p->normal_prio = p->static_prio;
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

void wc_sim_task_set_runtime(struct task_struct *p, u64 sum_exec_runtime)
{
	p->se.sum_exec_runtime = sum_exec_runtime;
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
	       (WC_OPS.exit ? WC_SIM_OP_EXIT : 0);
}

u32 wc_sim_timeout_ms(void)
{
	return WC_OPS.timeout_ms;
}

/*
 * The operations, called as a BPF struct_ops trampoline calls them: the
 * arguments in an array of u64 (BPF_PROG's context).
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
	u64 flags = (enq & WC_SIM_ENQ_WAKEUP ? SCX_ENQ_WAKEUP : 0) |
		    (enq & WC_SIM_ENQ_HEAD ? SCX_ENQ_HEAD : 0) |
		    (enq & WC_SIM_ENQ_PREEMPT ? SCX_ENQ_PREEMPT : 0) |
		    (enq & WC_SIM_ENQ_LAST ? SCX_ENQ_LAST : 0);

	WC_CALL(enqueue, (u64)p, flags);
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

s32 wc_sim_init_task(struct task_struct *p, u32 fork)
{
	struct scx_init_task_args args = { .fork = fork };

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

/* The scheduler is unloaded (@error: it failed, with @msg). */
void wc_sim_exit(u32 error, const char *msg)
{
	struct scx_exit_info ei = {};

	ei.kind = error ? SCX_EXIT_ERROR_BPF : SCX_EXIT_UNREG;
	ei.reason = error ? "scx_bpf_error" : "unregistered from user space";
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
