// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "req.h"
#include "sysinfo.h"

/* Keys the per-CPU budget holds for the layer's histograms (hist_map_keys). */
static uint32_t budget_keys(const struct layer_inst *l)
{
	return hist_map_keys(l, REQ_FLAT_SLOTS);
}

uint32_t req_flat(const struct layer_inst *l)
{
	uint32_t fit;

	if (l->cfg->per_opcode || l->cfg->per_process || l->cfg->per_cgroup)
		return 0;
	fit = budget_keys(l);
	if (fit == REQ_FLAT_SLOTS)
		return REQ_FLAT_PER_GEN;
	/* the most the array can hold and leave the hash 4 keys per CPU (then spill slots) */
	return fit >= 6 ? (fit - 4) / 2 : 0;
}

uint32_t req_hist_keys(const struct layer_inst *l)
{
	uint32_t flat = req_flat(l);

	if (flat == REQ_FLAT_PER_GEN)
		return 1;	/* unused */
	if (flat)	/* the path flags the array has no slot for */
		return 2 * (REQ_FLAT_PER_GEN - flat);
	return 2 * 32 * (l->cfg->per_opcode ? 8 : 1) * (l->cfg->per_process ? 32 : 1) *
	       (l->cfg->per_cgroup ? 32 : 1);
}

uint32_t req_hash_percpu(const struct layer_inst *l)
{
	uint32_t flat = req_flat(l);

	/* beside part of the array: what the budget has left, the rest in spill slots */
	return flat && flat < REQ_FLAT_PER_GEN ? budget_keys(l) - 2 * flat : UINT32_MAX;
}

uint32_t req_flat_slots(const struct layer_inst *l)
{
	return req_flat(l) ? 2 * req_flat(l) : 1;
}

void req_flat_key(uint32_t gen, uint32_t i, void *key)
{
	*(struct ioreq_key *)key = (struct ioreq_key){ .gen = gen, .opcode = 0xffff,
						       .flags = (__u16)i };
}

const char *req_flags_name(unsigned int flags, char *buf, size_t len)
{
	static const char *const names[] = { "io-wq", "poll", "chain", "failed", "sqpoll" };
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & (1u << i) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", names[i]);
	return buf;
}

void req_label(const struct layer_inst *l, const void *key, struct rec *r)
{
	const struct ioreq_key *k = key;

	if (k->opcode != 0xffff)
		l->desc->code_name(k->opcode, r->opcode, sizeof(r->opcode));
	req_flags_name(k->flags, r->flags, sizeof(r->flags));
	if (k->tgid) {
		char comm[16];	/* the map's value: TASK_COMM_LEN */

		r->pid = k->tgid;
		/* noted by the programs at submission: known after the process has gone */
		if (bpf_map__lookup_elem(layer_map(l, l->desc->comm_map), &r->pid, sizeof(r->pid), comm,
					 sizeof(comm), 0))
			process_comm(r->pid, comm, sizeof(comm));
		snprintf(r->comm, sizeof(r->comm), "%.15s", comm);
	}
	layer_label_cgroup(l, k->cgroup, r);
}

struct pending_ctx {
	struct layer_inst *l;
	bool aio;
	struct interval *iv;
};

/* One request the final sweep found still in the table: no event will end it any more. */
static int pending_one(uint32_t idx, const void *v, void *arg)
{
	const struct pending_ctx *c = arg;
	const struct ioreq *e = v;
	struct layer_inst *l = c->l;
	struct interval *iv = c->iv;
	struct ioreq_key k = { .flags = e->flags & REQ_FL_KEY };
	bool aio = c->aio;
	int err;

	(void)idx;
	if (!e->key || !e->ts || !(e->flags & REQ_FL_AIO) != !aio)
		return 0;
	k.opcode = l->cfg->per_opcode ? e->opcode : 0xffff;
	k.tgid = l->cfg->per_process ? e->tgid : 0;
	k.cgroup = l->cfg->per_cgroup ? e->cgroup : 0;
	/*
	 * The request's end (CQE, reap) was not seen: unmeasured in each stage it started, and
	 * only those. aio's completion may have been seen, starting complete_reap; an io_uring
	 * request's reap starts at its CQE, which did not come (still in flight, or skipped:
	 * IOSQE_CQE_SKIP_SUCCESS), so cqe_reap is not one of them.
	 */
	err = layer_add_stage(l, &k, REQ_SUBMIT_DONE, aio ? e->ts : 0, e->done, iv) ?:
	      (aio && e->done ? layer_add_stage(l, &k, REQ_DONE_REAP, 0, 0, iv) : 0) ?:
	      layer_add_stage(l, &k, REQ_TOTAL, 0, 0, iv);
	if (err || (!e->bio_q && !(e->flags & REQ_FL_RW)))
		return err;	/* no bios to link: not counted in the linked stages */
	/* as req_linked_stages() would have (each read or write in each linked stage, an
	 * unlinked one unmeasured); device_cqe ends at the unseen CQE */
	return layer_add_stage(l, &k, REQ_SUBMIT_BIO, e->bio_q ? e->ts : 0, e->bio_q, iv) ?:
	       layer_add_stage(l, &k, REQ_WAIT, e->done ? e->bio_q : 0, e->issue, iv) ?:
	       layer_add_stage(l, &k, REQ_DEVICE, e->bio_q ? e->issue : 0, e->done, iv) ?:
	       layer_add_stage(l, &k, REQ_DEVICE_CQE, 0, 0, iv);
}

int req_pending_final(struct layer_inst *l, bool aio, struct interval *iv)
{
	struct pending_ctx c = { l, aio, iv };

	return array_sweep(l->shared->reqs_fd, sizeof(struct ioreq), pending_one, &c);
}
