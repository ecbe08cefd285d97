// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "cgroups.h"
#include "layer.h"
#include "req.h"
#include "reqrec.h"
#include "sysinfo.h"

_Static_assert((int)SN_BLOCK == LAYER_BLOCK && (int)SN_URING == LAYER_URING &&
	       (int)SN_AIO == LAYER_AIO && (int)SN_SYSCALL == LAYER_SYSCALL,
	       "snoop records name their layer by enum layer_id");

/* Each layer's boundaries, as its records name them; NULL: not one of its. */
static const char *const bound_names[NLAYERS][SN_NTS] = {
	[LAYER_BLOCK] = { [SN_BIO_QUEUED] = "queued", [SN_ISSUE] = "issued",
			  [SN_DEVICE] = "completed" },
	[LAYER_URING] = { "submitted", "bio_queued", "issued", "completed", "cqe" },
	[LAYER_AIO] = { "submitted", "bio_queued", "issued", "completed", [SN_END] = "reaped" },
	[LAYER_SYSCALL] = { [SN_SUBMIT] = "entered", [SN_END] = "exited" },
};

/* The stage between two boundaries seen one after the other, by the layers' stage names. */
static const char *stage_name(int layer, int from, int to)
{
	static const char *const names[SN_NTS][SN_NTS] = {
		[SN_SUBMIT] = { [SN_BIO_QUEUED] = "submit_bio", [SN_CQE] = "submit_cqe",
				[SN_END] = "total" },
		[SN_BIO_QUEUED] = { [SN_ISSUE] = "wait", [SN_DEVICE] = "wait_device",
				    [SN_CQE] = "queued_cqe", [SN_END] = "queued_reap" },
		[SN_ISSUE] = { [SN_DEVICE] = "device" },
		[SN_DEVICE] = { [SN_CQE] = "device_cqe", [SN_END] = "complete_reap" },
	};

	if (layer == LAYER_SYSCALL)
		return "duration";
	return names[from][to] ? names[from][to] : "other";
}

/* A kernel dev_t (major << 20 | minor) as "major:minor". */
static void dev_str(uint32_t dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", dev >> 20, dev & 0xfffff);
}

void req_rec_decode(const struct snoop_rec *raw, struct cgroup_names *cg, uint64_t mono_now,
		    uint64_t real_now, struct req_rec *out)
{
	int layer = raw->layer < NLAYERS ? raw->layer : LAYER_BLOCK, i, prev = -1;
	const struct layer *d = layers[layer];

	memset(out, 0, sizeof(*out));
	out->layer = d->name;
	out->pid = raw->tgid;
	out->tid = raw->tid;
	if (raw->comm[0])
		snprintf(out->comm, sizeof(out->comm), "%.15s", raw->comm);
	else
		thread_comm(raw->tgid, raw->tid, out->comm, sizeof(out->comm));
	out->cgroup_id = raw->cgroup;
	if (raw->tgid || raw->cgroup)
		cgroup_name(cg, raw->cgroup, out->cgroup, sizeof(out->cgroup));
	else	/* no bio of a process: a request the kernel made (a flush), nobody's */
		snprintf(out->cgroup, sizeof(out->cgroup), "-");
	if (raw->disk)
		disk_name(raw->disk, out->disk, sizeof(out->disk));
	if (layer == LAYER_BLOCK) {
		op_name(raw->opf & 0xff, out->op, sizeof(out->op));
		req_flags_str((raw->opf >> 8) & req_flags_mask(), out->flags, sizeof(out->flags));
		/* a flush has no data and its sector is -1: neither is a place on the disk */
		out->has_sector = raw->bytes && raw->sector != UINT64_MAX;
		out->sector = raw->sector;
		out->bytes = raw->bytes;
	} else {
		d->code_name(raw->code, out->code, sizeof(out->code));
		out->has_res = true;
		out->res = raw->res;
		if (layer != LAYER_SYSCALL)
			req_flags_name(raw->flags & REQ_FL_KEY, out->flags, sizeof(out->flags));
	}
	if (raw->ino || raw->fdev) {
		out->has_file = true;
		dev_str(raw->fdev, out->fdev, sizeof(out->fdev));
		out->ino = raw->ino;
	}
	for (i = 0; i < SN_NTS; i++) {
		if (!raw->ts[i] || !bound_names[layer][i])
			continue;
		out->bounds[out->nbounds++] = (struct req_point){ bound_names[layer][i], raw->ts[i] };
		if (prev >= 0)
			out->stages[out->nstages++] = (struct req_point){
				stage_name(layer, prev, i), raw->ts[i] - raw->ts[prev] };
		prev = i;
	}
	if (out->nbounds) {
		uint64_t last = out->bounds[out->nbounds - 1].ns;

		out->total_ns = last - out->bounds[0].ns;
		out->ts_ns = real_now - (mono_now > last ? mono_now - last : 0);
	}
}
