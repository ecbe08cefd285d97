// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The io_uring layer: what only it has. Its events, stages and maps are in the table below. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "uring.skel.h"
#include "ksyms.h"
#include "layer.h"
#include "req.h"
#include "sysinfo.h"

enum { EV_SUBMIT, EV_PUNT, EV_POLL, EV_COMPLETE, EV_WAIT, EV_OVERFLOW };

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
 * followed by no submit, CQE or wait), or tracing stops. The ring's entry goes with them.
 */
static int pending(struct layer_inst *l, bool final, struct interval *iv)
{
	struct uring_bpf *skel = l->skel;
	int fd = bpf_map__fd(skel->maps.rings), err;
	struct ring_state *rs = malloc(sizeof(*rs));
	size_t nkeys, i;
	uint64_t *keys;
	int slot;

	if (!rs)
		return -ENOMEM;
	err = map_keys(fd, sizeof(*keys), (char **)&keys, &nkeys);
	for (i = 0; i < nkeys && !err; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], rs) || !rs->tgid)
			continue;
		if (!final && (!kill((pid_t)rs->tgid, 0) || errno != ESRCH))
			continue;	/* the process lives: its ring may have more events */
		for (slot = 0; slot < RING_SLOTS && !err; slot++) {
			const struct ring_cqe *q = &rs->cqe[slot];
			struct ioreq_key k = { .flags = q->flags };

			if (!q->posted)
				continue;
			k.opcode = l->cfg->per_opcode ? q->opcode : 0xffff;
			k.tgid = l->cfg->per_process ? rs->tgid : 0;
			k.cgroup = l->cfg->per_cgroup ? q->cgroup : 0;
			err = layer_add_stage(l, &k, REQ_DONE_REAP, 0, 0, iv) ?:
			      layer_add_stage(l, &k, REQ_TOTAL, 0, 0, iv);
		}
		bpf_map_delete_elem(fd, &keys[i]);
	}
	free(keys);
	free(rs);
	/* and the requests whose CQE had not come when tracing stopped */
	return err ?: final ? req_pending_final(l, false, iv) : 0;
}

REQ_LAYER_FUNCS(uring)

const struct layer uring_layer = {
	REQ_LAYER_COMMON(uring, opcode_name, io_complete_rw, kc_uring),
	.drops = BIT(DROP_INFLIGHT_FULL) | BIT(DROP_INFLIGHT_STALE) | BIT(DROP_INFLIGHT_REUSED) |
		 BIT(DROP_HIST_FULL) | BIT(DROP_REAP_UNSEEN),
};
