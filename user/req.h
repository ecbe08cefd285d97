/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The request table the io_uring, aio and block objects share (bpf/req.bpf.h), the kernel
 * functions that link a bio to its request, and the records of a request's stages.
 */
#ifndef IOSTRATA_REQ_H
#define IOSTRATA_REQ_H

#include <stdbool.h>
#include <stdint.h>
#include "layer.h"

struct bpf_map;

/* Addresses from /proc/kallsyms (0 = absent or hidden by kptr_restrict). */
struct req_syms {
	uint64_t endio_iomap, endio_blkdev, endio_blkdev_async, endio_chain;
	uint64_t kc_uring, kc_uring_iopoll, kc_aio;
};
const struct req_syms *req_syms(void);

/* Why linking is off ("" when the kernel's functions were all found). */
const char *req_link_problem(void);

/* Create the shared table (when an io_uring or aio layer is to run); -1 with errno. */
int reqs_open(uint32_t slots);
void reqs_close(void);
/* The shared table's fd, -1 when none: then an object keeps a table of its own. */
int reqs_fd(void);

/* Before load: give the object the shared table, or size its own. */
int reqs_use(struct bpf_map *m);

/* Every object with bpf/req.bpf.h: the link functions and table mask into its .rodata. */
#define REQ_RODATA(ro) do {							\
	const struct req_syms *s_ = req_syms();					\
	(ro)->req_mask = opts.inflight_slots - 1;					\
	(ro)->endio_iomap = s_->endio_iomap;					\
	(ro)->endio_blkdev = s_->endio_blkdev;					\
	(ro)->endio_blkdev_async = s_->endio_blkdev_async;			\
	(ro)->endio_chain = s_->endio_chain;					\
	(ro)->kc_uring = s_->kc_uring;						\
	(ro)->kc_uring_iopoll = s_->kc_uring_iopoll;				\
	(ro)->kc_aio = s_->kc_aio;						\
} while (0)

/*
 * Histogram keys the uring/aio layers may need: two generations x path-flag sets (32), times
 * 8 opcodes with -O and 32 processes with -P (more are counted as *_hist_full).
 */
uint32_t req_keys_wanted(void);

/* "io-wq,poll,chain,failed,sqpoll" for REQ_FL_* bits. */
const char *req_flags_name(unsigned int flags, char *buf, size_t len);

/*
 * What the uring and aio loaders share to report an interval: their histograms (stages[] names
 * each of REQ_NSTAGES, NULL = not this layer's), their drop and application-event counters
 * (names NULL where not this layer's), labels by name() and the comm map.
 */
struct req_report {
	const char *layer;
	const char *const *stages;
	const char *(*name)(unsigned int, char *, size_t);
	const char *const *drop_names;		/* DROP_NREASONS */
	const char *const *event_names;		/* EV_NEVENTS */
	int ncpus;
	struct hist *vals;			/* ncpus x REQ_NSTAGES */
	int comm_fd;
	uint64_t prev_drops[DROP_NREASONS];
	uint64_t prev_events[EV_NEVENTS];
};

/* ncpus and the read buffer; -1 when out of memory. */
int req_report_init(struct req_report *r);
void req_report_free(struct req_report *r);

/* Retire the generation *gen and append its records, drops and events to iv. */
int req_report_collect(struct req_report *r, volatile uint32_t *gen, struct bpf_map *hists,
		       struct bpf_map *comm, struct bpf_map *drops, struct bpf_map *events,
		       struct interval *iv);

#endif
