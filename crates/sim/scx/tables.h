/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the host layer knows of a program's translation unit, generated from
 * its source by crates/sim/src/scx/build_program.rs and appended to the
 * unit (so that the compiler fills in every size and offset): its maps, its
 * globals a loader may write, its SEC("syscall") programs with their
 * argument's fields. host.c finds the units in the generated wc_glue.h.
 */
#ifndef __WARMCORE_SCX_TABLES_H
#define __WARMCORE_SCX_TABLES_H

struct wc_map {
	const char *name;
	void *def;		/* the program's map variable: the map's identity */
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	/* Storage, laid out as the kernel does: values rounded up to 8 bytes;
	 * per-CPU arrays hold nr_cpus copies of each entry, CPU-major. */
	unsigned int stride;
	unsigned char *values;
	unsigned char *keys;		/* HASH: an open-addressing table of */
	unsigned char *used;		/* slots slots, 0 free, 1 used, 2 deleted */
	unsigned int slots;		/* HASH: a power of two, >= 2 * max_entries */
	unsigned int count;		/* HASH: entries */
	unsigned int storage_slot;	/* TASK_STORAGE, CGRP_STORAGE */
};

/* A global: element size and count (1 for a scalar). */
struct wc_knob {
	const char *name;
	void *addr;
	unsigned int size;
	unsigned int count;
};

/* A member of a syscall program's argument struct. */
struct wc_field {
	const char *name;
	unsigned long offset;
	unsigned long size;
};

typedef int (*wc_syscall_fn)(void *ctx);

struct wc_syscall {
	const char *name;
	wc_syscall_fn fn;
	unsigned long arg_size;
	const struct wc_field *fields;	/* ends with a NULL name */
};

struct wc_tu {
	struct wc_map *maps;
	unsigned int nr_maps;
	const struct wc_knob *globals;
	unsigned int nr_globals;
	const struct wc_syscall *progs;
	unsigned int nr_progs;
};

#endif /* __WARMCORE_SCX_TABLES_H */
