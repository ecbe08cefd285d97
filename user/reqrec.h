/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One slow request as snoop prints it: a struct snoop_rec from the ring buffer (iostrata.h),
 * decoded in user space: names for its layer's codes, its disk and cgroup, its boundaries in
 * the order the request lived them and the stage between each two. Every renderer takes this,
 * never the raw record; the session decodes (it owns the cgroup names).
 */
#ifndef IOSTRATA_REQREC_H
#define IOSTRATA_REQREC_H

#include <stdbool.h>
#include <stdint.h>
#include "cgroups.h"
#include "iostrata.h"

struct cgroup_names;

struct req_point {
	const char *name;
	uint64_t ns;		/* boundaries: CLOCK_MONOTONIC; stages: their length */
};

struct req_rec {
	const char *layer;	/* block, uring, aio, syscall */
	uint64_t ts_ns;		/* Unix time of its last boundary */
	uint32_t pid, tid;	/* 0: no submitter known (a request the kernel made: a flush) */
	char comm[16];
	uint64_t cgroup_id;
	char cgroup[CGROUP_LABEL_LEN];
	char disk[32];		/* block; uring/aio/syscall on a block device file */
	char op[24];		/* block: operation */
	char flags[96];		/* block: request flags; uring/aio: path flags */
	char code[24];		/* uring opcode, aio command, syscall name */
	bool has_sector;	/* block */
	uint64_t sector;
	uint32_t bytes;
	bool has_file;		/* uring/aio/syscall, when the file was resolved */
	char fdev[24];		/* its filesystem's device, "major:minor" */
	uint64_t ino;
	bool has_res;		/* uring, aio, syscall */
	int64_t res;
	int nbounds, nstages;
	struct req_point bounds[SN_NTS];
	struct req_point stages[SN_NTS];
	uint64_t total_ns;	/* last boundary - first */
};

/* Decode raw into out; mono_now/real_now: the clocks read together, to date it. */
void req_rec_decode(const struct snoop_rec *raw, struct cgroup_names *cg, uint64_t mono_now,
		    uint64_t real_now, struct req_rec *out);

#endif
