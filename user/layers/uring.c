// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The io_uring layer: what only it has. Its events, stages and maps are in the table below. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "uring.skel.h"
#include "ksyms.h"
#include "layer.h"
#include "req.h"
#include "sysinfo.h"

enum { EV_SUBMIT, EV_PUNT, EV_POLL, EV_COMPLETE, EV_WAIT, EV_OVERFLOW, EV_FAILED };

#define P(name) SKEL_PROG(uring, name)

/* The prototype that types the ring and the CQE (v6.x): every read a direct load. */
static bool complete_typed(const char *tp)
{
	return tp_arg_is_struct_ptr(tp, 0, "io_ring_ctx") &&
	       tp_arg_is_struct_ptr(tp, 2, "io_uring_cqe");
}

static const struct layer_event events[] = {
	/* the submission event was io_uring_submit_sqe before v6.4 */
	[EV_SUBMIT] = { "io_uring_submit_req", EV_TP, P(tp_btf_io_uring_submit_req),
		P(raw_tp_io_uring_submit_req), "io_uring_submit_sqe", P(tp_btf_io_uring_submit_sqe),
		P(raw_tp_io_uring_submit_sqe), .required = true,
		.role = "request submitted: starts submit_cqe; reads the CQ head (cqe_reap)" },
	[EV_PUNT] = { "io_uring_queue_async_work", EV_TP, P(tp_btf_io_uring_queue_async_work),
		P(raw_tp_io_uring_queue_async_work),
		.role = "request punted to an io-wq worker: flags io-wq" },
	[EV_POLL] = { "io_uring_poll_arm", EV_TP, P(tp_btf_io_uring_poll_arm),
		P(raw_tp_io_uring_poll_arm), .role = "request waits on poll first: flags poll" },
	/* the request is its second argument since v5.18 */
	[EV_COMPLETE] = { "io_uring_complete", EV_TP, P(tp_btf_io_uring_complete),
		P(raw_tp_io_uring_complete), .typed = P(tp_btf_io_uring_complete_typed),
		.typed_ok = complete_typed, .nargs = 2, .nargs_any = true, .required = true,
		.role = "CQE posted: ends submit_cqe, starts cqe_reap; reads the CQ head" },
	[EV_WAIT] = { "io_uring_cqring_wait", EV_TP, P(tp_btf_io_uring_cqring_wait),
		P(raw_tp_io_uring_cqring_wait),
		.role = "application waits for CQEs: reads the CQ head (cqe_reap)" },
	[EV_OVERFLOW] = { "io_uring_cqe_overflow", EV_TP, P(tp_btf_io_uring_cqe_overflow),
		P(raw_tp_io_uring_cqe_overflow), .role = "CQE overflowed the CQ ring: counted" },
	[EV_FAILED] = { "io_uring_req_failed", EV_TP, P(tp_btf_io_uring_req_failed),
		P(raw_tp_io_uring_req_failed), .nargs = 3, .exact_nargs = true,
		.role = "request failed before submission: a leftover entry at it is reclaimed" },
};

#define REAP "CQ head read at the ring's next event"
#define NO_REAP "reap not observable: no event of the ring after the CQE (its process ended, " \
		"or tracing stopped first)"
#define REAP_HOW "-> the ring's next submit, CQE or wait that finds the CQ head past it: " \
		 "an upper bound"


static const struct layer_stage stages[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = { "submit_cqe", EV_SUBMIT, EV_COMPLETE, .note_ev = EV_PUNT,
		.note = "io-wq punts not told apart" },
	[REQ_DONE_REAP] = { "cqe_reap", EV_COMPLETE, -1, .to_text = REAP,
		.how = "io_uring_complete " REAP_HOW, .unmeasured = NO_REAP },
	[REQ_TOTAL] = { "total", EV_SUBMIT, -1, .to_text = REAP, .how = "submission " REAP_HOW,
		.unmeasured = NO_REAP },
	REQ_LINKED_STAGES(EV_SUBMIT),
	[REQ_DEVICE_CQE] = { "device_cqe", -1, EV_COMPLETE, "block events", .flags = STAGE_LINKED,
		.how = REQ_LINKED_HOW, .unmeasured = REQ_UNLINKED },
};

REQ_HISTS(uring);

static const char *const event_names[EV_NEVENTS] = {
	[EV_CQE_OVERFLOW] = "uring_cqe_overflow",
};

static const char *opcode_name(unsigned int op, char *buf, size_t len)
{
	return btf_enum_name("io_uring_op", "IORING_OP_", op, buf, len);
}

/*
 * CQEs whose reap no event of their ring will bound any more, counted as unmeasured in cqe_reap
 * and total: the ring's process has gone (its rings closed with it: the last CQEs it reaped are
 * followed by no submit, CQE or wait), or tracing stops. The ring's slot is freed with them.
 * The table is read through a mapping of the map: only the slots in use are touched.
 */
static int forget_cqes(struct layer_inst *l, struct ring_state *rs, uint32_t owner,
		       struct interval *iv)
{
	int slot, err = 0;

	for (slot = 0; slot < RING_SLOTS && !err; slot++) {
		struct ring_cqe *q = &rs->cqe[slot];
		struct ioreq_key k = { .flags = q->flags };

		/* taken, as the programs take it: a CQE forgotten on both sides is counted once */
		if (!__atomic_exchange_n(&q->posted, 0, __ATOMIC_ACQ_REL))
			continue;
		k.opcode = l->cfg->per_opcode ? q->opcode : 0xffff;
		k.tgid = l->cfg->per_process ? owner : 0;
		k.cgroup = l->cfg->per_cgroup ? q->cgroup : 0;
		err = layer_add_stage(l, &k, REQ_DONE_REAP, 0, 0, iv) ?:
		      layer_add_stage(l, &k, REQ_TOTAL, 0, 0, iv);
	}
	return err;
}

/*
 * A gone ring's CQEs, and its slot freed: its idle clock zeroed first (a slot with ts 0 is
 * being taken, never taken over), then its key, unless a new ring took it meanwhile (a new
 * owner). Swept again after: a CQE the kernel posted in between (a killed process's cancelled
 * requests, from the ring's exit work) is counted, not left in a free slot.
 */
static int forget_ring(struct layer_inst *l, struct ring_state *rs, struct interval *iv)
{
	uint32_t owner = rs->owner;
	uint64_t key = rs->key;
	int err;

	err = forget_cqes(l, rs, owner, iv);
	if (err || rs->owner != owner)
		return err;
	__atomic_store_n(&rs->ts, 0, __ATOMIC_RELEASE);
	__atomic_compare_exchange_n(&rs->key, &key, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	return forget_cqes(l, rs, owner, iv);
}

static int pending(struct layer_inst *l, bool final, struct interval *iv)
{
	struct uring_bpf *skel = l->skel;
	const struct bpf_map *m = skel->maps.rings;
	size_t len = (size_t)bpf_map__max_entries(m) * sizeof(struct ring_state), i;
	struct ring_state *tab;
	int err = 0;

	tab = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	if (tab == MAP_FAILED)
		return -errno;
	for (i = 0; i < bpf_map__max_entries(m) && !err; i++) {
		struct ring_state *rs = &tab[i];
		uint32_t owner = __atomic_load_n(&rs->owner, __ATOMIC_RELAXED);

		if (!owner)
			continue;
		if (!__atomic_load_n(&rs->key, __ATOMIC_ACQUIRE)) {
			/* a freed slot: only at the stop can a late CQE still sit in it */
			if (final)
				err = forget_cqes(l, rs, owner, iv);
			continue;
		}
		if (!final && (!kill((pid_t)owner, 0) || errno != ESRCH))
			continue;	/* the process lives: its ring may have more events */
		err = forget_ring(l, rs, iv);
	}
	munmap(tab, len);
	/* and the requests whose CQE had not come when tracing stopped */
	return err ?: final ? req_pending_final(l, false, iv) : 0;
}

REQ_LAYER_FUNCS(uring)

const struct layer uring_layer = {
	REQ_LAYER_COMMON(uring, opcode_name, io_complete_rw, kc_uring),
	.drops = BIT(DROP_INFLIGHT_FULL) | BIT(DROP_INFLIGHT_STALE) | BIT(DROP_INFLIGHT_REUSED) |
		 BIT(DROP_HIST_FULL) | BIT(DROP_REAP_UNSEEN) | BIT(DROP_RING_FULL),
};
