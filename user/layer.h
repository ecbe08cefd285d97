/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a layer hands to the output: histograms with a layer, a stage and labels, and the
 * attach report `features` prints. Later layers (io_uring, aio, syscalls) produce the same.
 */
#ifndef IOSTRATA_LAYER_H
#define IOSTRATA_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include "histfmt.h"
#include "iostrata.h"

struct rec {
	const char *layer;
	const char *stage;
	int stage_order;
	char disk[32];		/* labels; "" = not a label of this record */
	char op[24];
	char flags[96];
	char syscall[24];
	char opcode[24];
	uint32_t pid;		/* 0 = not a label */
	char comm[16];
	struct hist h;
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

struct rec *recs_add(struct recs *r);
void recs_sort(struct recs *r);
void recs_clear(struct recs *r);

/* One named counter of events that could not be recorded. */
struct drop_count {
	const char *name;
	uint64_t n;
};
#define MAX_DROPS 32	/* every layer's counters together (17 today) */

struct interval {
	uint64_t ts_ns;		/* end of the interval, Unix time */
	uint64_t interval_ns;	/* measured length */
	uint64_t end_mono_ns;	/* CLOCK_MONOTONIC when the interval's generation was retired */
	struct recs recs;
	struct drop_count drops[MAX_DROPS];
	int ndrops;
	struct drop_count events[MAX_DROPS];	/* the traced applications' events (CQE overflow) */
	int nevents;
};

/* How one tracepoint attaches here, or why it cannot. */
struct event_status {
	const char *event;	/* tracepoint name */
	const char *role;
	const char *method;	/* "tp_btf", "raw_tp", or NULL when unavailable */
	char why[160];		/* reason when unavailable */
	int nargs;
	int arg;		/* index of the pointer argument */
	int required;
};

struct stage_status {
	const char *layer, *stage;
	const char *from, *to;	/* bounding events, as the docs name them */
	int available;
	char how[400];		/* attach methods, or the reason it is unavailable */
};

struct map_mem {
	char name[32];
	uint64_t bytes;		/* kernel's memlock figure (fdinfo), or our estimate */
	char note[96];
};

#define MAX_EVENTS 8
#define MAX_STAGES 8
#define MAX_MAPS 8

struct layer_report {
	struct event_status events[MAX_EVENTS];
	int nevents;
	struct stage_status stages[MAX_STAGES];
	int nstages;
	struct map_mem maps[MAX_MAPS];
	int nmaps;
};

/*
 * A layer: its programs' whole lifecycle. start() opens, configures, loads and attaches (or
 * says in one line why it cannot, and leaves nothing attached); collect() retires the current
 * interval and appends its records; stop() detaches and frees. report_static() fills the
 * report from BTF alone, without loading anything.
 */
struct layer_ops {
	const char *name;
	bool requests;		/* uses the shared request table (bpf/req.bpf.h) */
	int (*start)(void **state, struct layer_report *rep);
	int (*collect)(void *state, struct interval *iv);
	void (*stop)(void *state);
	void (*report_static)(struct layer_report *rep);
};

extern const struct layer_ops block_layer_ops;	/* user/block.c */
extern const struct layer_ops syscall_layer_ops;	/* user/syscall.c */
extern const struct layer_ops uring_layer_ops;	/* user/uring.c */
extern const struct layer_ops aio_layer_ops;	/* user/aio.c */

/* Every layer this build has, in the order their records are printed (user/main.c). */
#define NLAYERS 4
extern const struct layer_ops *const layers[NLAYERS];
extern const int nlayers;

/* iostrata calibrate (user/calibrate.c): argv from "calibrate" on; returns the exit code. */
int cmd_calibrate(int argc, char **argv);

#endif
