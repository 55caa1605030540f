/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Included before crates/sched/src/bpf/main.bpf.c when the simulator builds
 * it for the host (see host.c): the scx and libbpf headers as the BPF build
 * sees them, with the few constructs that only mean something to the BPF
 * compiler, loader or verifier given their host meaning.
 */
#ifndef __WARMCORE_SCX_PRELUDE_H
#define __WARMCORE_SCX_PRELUDE_H

/* CO-RE relocations have no host meaning: this build is laid out exactly as
 * the vmlinux.h it includes, so every field, type and enum value exists. */
#define __builtin_preserve_access_index(x) (x)
#define __builtin_preserve_field_info(x, kind) 1
#define __builtin_preserve_type_info(x, kind) 1
#define __builtin_preserve_enum_value(x, kind) 1
/* `can_loop` is a verifier escape hatch (a may_goto instruction). */
#define SCX_BPF_UNITTEST 1
/* As scx/common.bpf.h does: its own kfunc declarations, not vmlinux.h's. */
#define BPF_NO_KFUNC_PROTOTYPES

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* Sections tell the BPF loader what a symbol is; here they would only
 * scatter the program over orphan sections. */
#undef SEC
#define SEC(name) __attribute__((used))
#undef __ksym
#define __ksym
#undef __kconfig
#define __kconfig
#undef bpf_ksym_exists
/* A weak kfunc exists on the host if host.c defines it. */
#define bpf_ksym_exists(sym) (!!(sym))

/* BPF helpers are calls through constant pointers to helper ids
 * (bpf_helper_defs.h): redirect the ones the program uses to the host. */
#define bpf_map_lookup_elem(map, key) wc_host_map_lookup_elem((void *)(map), (const void *)(key))
#define bpf_map_update_elem(map, key, value, flags) \
	wc_host_map_update_elem((void *)(map), (const void *)(key), (const void *)(value), (flags))
#define bpf_map_delete_elem(map, key) wc_host_map_delete_elem((void *)(map), (const void *)(key))
#define bpf_ktime_get_ns() wc_host_ktime_get_ns()
#define bpf_get_smp_processor_id() wc_host_smp_processor_id()
#define bpf_task_storage_get(map, task, value, flags) \
	wc_host_task_storage_get((void *)(map), (task), (void *)(value), (flags))
#define bpf_task_storage_delete(map, task) wc_host_task_storage_delete((void *)(map), (task))
#define bpf_get_current_task_btf() wc_host_current_task()
#define bpf_timer_init(timer, map, flags) wc_host_timer_init((timer), (void *)(map), (flags))
#define bpf_timer_set_callback(timer, cb) wc_host_timer_set_callback((timer), (void *)(cb))
#define bpf_timer_start(timer, nsecs, flags) wc_host_timer_start((timer), (nsecs), (flags))
#define bpf_timer_cancel(timer) wc_host_timer_cancel((timer))
#define bpf_kptr_xchg(kptr, new) wc_host_kptr_xchg((void **)(kptr), (void *)(new))
#define bpf_probe_read_kernel_str(dst, size, src) \
	wc_host_probe_read_kernel_str((void *)(dst), (size), (const void *)(src))
#define bpf_probe_read_kernel(dst, size, src) \
	wc_host_probe_read_kernel((void *)(dst), (size), (const void *)(src))

struct bpf_timer;
void *wc_host_map_lookup_elem(void *map, const void *key);
long wc_host_map_update_elem(void *map, const void *key, const void *value, u64 flags);
long wc_host_map_delete_elem(void *map, const void *key);
u64 wc_host_ktime_get_ns(void);
u32 wc_host_smp_processor_id(void);
void *wc_host_task_storage_get(void *map, struct task_struct *task, void *value, u64 flags);
long wc_host_task_storage_delete(void *map, struct task_struct *task);
struct task_struct *wc_host_current_task(void);
long wc_host_timer_init(struct bpf_timer *timer, void *map, u64 flags);
long wc_host_timer_set_callback(struct bpf_timer *timer, void *cb);
long wc_host_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags);
long wc_host_timer_cancel(struct bpf_timer *timer);
void *wc_host_kptr_xchg(void **kptr, void *new_ptr);
long wc_host_probe_read_kernel_str(void *dst, u32 size, const void *src);
long wc_host_probe_read_kernel(void *dst, u32 size, const void *src);

#include <scx/common.bpf.h>

/*
 * The SCX_* names of enums.autogen.bpf.h are variables that the loader fills
 * from the running kernel's BTF; here the kernel is this build's vmlinux.h,
 * so they name its enum constants directly.
 */
#include "wc_scx_enum_undefs.h"

/* BPF arena address-space casts have no host meaning. */
#undef cast_kern
#define cast_kern(ptr)
#undef cast_user
#define cast_user(ptr)

#endif /* __WARMCORE_SCX_PRELUDE_H */
