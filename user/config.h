/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a tracing session traces. A command builds it (from its options, or from its own plan,
 * as calibrate does) and the session only reads it.
 */
#ifndef IOSTRATA_CONFIG_H
#define IOSTRATA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_FAIL_TPS 8
#define CFG_LAYERS 4	/* NLAYERS (layer.h), checked there */

struct trace_config {
	unsigned int layers;	/* bit per layer (enum layer_id); 0 = every available one */
	uint32_t dev;		/* -d: only this whole disk (kernel dev_t); 0 = all */
	pid_t tgid;		/* -p: only I/O this process queued; 0 = all */
	const char *cgroup;	/* -c: only I/O queued from this cgroup v2 (or below) */
	const char *comm;	/* --comm: only threads with this name (syscall layer) */
	bool per_disk;		/* -D */
	bool per_op;		/* -F */
	bool per_process;	/* -P */
	bool per_opcode;	/* -O: io_uring opcode / aio command */
	bool per_cgroup;	/* -C: the submitter's cgroup v2 */
	/* snoop: every request at least snoop_slower_ns long, one record each, through a ring
	 * buffer of snoop_rb_bytes (a power of two, at least a page) */
	bool snoop;
	uint64_t snoop_slower_ns;
	uint32_t snoop_rb_bytes;
	/* --stages: a bit per stage of each layer (enum layer_id); none set = every stage. A
	 * layer skips the events and the work only the others need where it can (block) */
	uint32_t stages[CFG_LAYERS];
	uint32_t inflight_slots;	/* --inflight: slots of the bio/request and request tables */
	const char *fail_tp[MAX_FAIL_TPS];	/* --fail-probe: act as if the kernel lacked these */
	int nfail_tp;
	bool force_raw_tp;	/* --force-raw-tp: testing: the raw_tp twins only */
	bool no_tag_slots;	/* --no-tag-slots: testing: block requests in the hashed table */
	/* --lose-completions=N: testing: the block programs miss every Nth completion of a
	 * request they hold, as the kernel sometimes makes them (complete_unseen); 0 = never */
	uint32_t lose_completions;
	/* --stale-after=SEC: testing: how old a table entry may be and still be taken for a live
	 * one where nothing better tells a leftover (INFLIGHT_STALE_NS) */
	uint64_t stale_ns;
	/* --hist-keys=N[,M]: testing: keys of each per-CPU histogram map, and of its spill map
	 * (hist_map_keys(), hist_spill_keys()); 0 = as sized */
	uint32_t hist_keys, spill_keys;
};

/* The defaults every command starts from. */
#define TRACE_CONFIG_DEFAULT { .inflight_slots = INFLIGHT_SLOTS_DEFAULT, \
			       .snoop_rb_bytes = SNOOP_RB_DEFAULT, \
			       .stale_ns = INFLIGHT_STALE_NS }

#endif
