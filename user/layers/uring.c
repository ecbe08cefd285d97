// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The io_uring layer: what only it has. Its events, stages and maps are in the table below. */
#include <string.h>
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
#define REAP_HOW "-> the ring's next submit, CQE or wait that finds the CQ head past it: " \
		 "an upper bound"
#define LINKED_HOW "O_DIRECT requests linked through bi_end_io; needs the block layer"
#define UNLINKED "not linked to bios (buffered or no block I/O, another disk, or see drops)"

static const struct layer_stage stages[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = { "submit_cqe", EV_SUBMIT, EV_COMPLETE, .note_ev = EV_PUNT,
		.note = "io-wq punts not told apart" },
	[REQ_DONE_REAP] = { "cqe_reap", EV_COMPLETE, -1, .to_text = REAP,
		.how = "io_uring_complete " REAP_HOW },
	[REQ_TOTAL] = { "total", EV_SUBMIT, -1, .to_text = REAP, .how = "submission " REAP_HOW },
	[REQ_SUBMIT_BIO] = { "submit_bio", EV_SUBMIT, -1, .to_text = "block events",
		.flags = STAGE_LINKED, .how = LINKED_HOW, .unmeasured = UNLINKED },
	[REQ_WAIT] = { "wait", -1, -1, "block events", "block events", STAGE_LINKED, LINKED_HOW,
		.unmeasured = UNLINKED },
	[REQ_DEVICE] = { "device", -1, -1, "block events", "block events", STAGE_LINKED,
		LINKED_HOW, .unmeasured = UNLINKED },
	[REQ_DEVICE_CQE] = { "device_cqe", -1, EV_COMPLETE, "block events", .flags = STAGE_LINKED,
		.how = LINKED_HOW, .unmeasured = UNLINKED },
};

static const struct layer_hists hists[] = {
	{ .map = SKEL_MAP(uring, uring_hists), .key_size = sizeof(struct ioreq_key) },
};

static const char *const drop_names[DROP_NREASONS] = {
	[DROP_INFLIGHT_FULL] = "uring_inflight_full",
	[DROP_INFLIGHT_STALE] = "uring_inflight_stale",
	[DROP_INFLIGHT_REUSED] = "uring_inflight_reused",
	[DROP_HIST_FULL] = "uring_hist_full",
	[DROP_REAP_UNSEEN] = "uring_reap_unseen",
};

static const char *const event_names[EV_NEVENTS] = {
	[EV_CQE_OVERFLOW] = "uring_cqe_overflow",
};

static const struct layer_map_note maps[] = {
	{ .map = SKEL_MAP(uring, uring_hists) }, { .map = SKEL_MAP(uring, rings) },
	{ .map = SKEL_MAP(uring, uring_zero) }, { .map = SKEL_MAP(uring, ring_zero) },
	{ .map = SKEL_MAP(uring, drops) }, { 0 },
};

static const char *opcode_name(unsigned int op, char *buf, size_t len)
{
	return btf_enum_name("io_uring_op", "IORING_OP_", op, buf, len);
}

static void label(const struct layer_inst *l, const void *key, struct rec *r)
{
	req_label(l, key, r, opcode_name, SKEL_MAP(uring, req_comm));
}

static int configure(struct layer_inst *l)
{
	struct uring_bpf *skel = l->skel;

	OWNER_RODATA(skel->rodata, l);
	REQ_RODATA(skel->rodata, l);
	return bpf_map__set_max_entries(skel->maps.uring_hists,
					hist_map_keys(l, req_keys_wanted(l->cfg)));
}

static uint64_t link_addr(void)
{
	return link_syms()->kc_uring;
}

static void *open_skel(void) { return uring_bpf__open(); }
static void destroy_skel(void *s) { uring_bpf__destroy(s); }

const struct layer uring_layer = {
	.name = "uring",
	.help = "submit_cqe, cqe_reap, total; linked: submit_bio, wait, device, device_cqe",
	.events = events, .nevents = sizeof(events) / sizeof(events[0]),
	.stages = stages, .nstages = REQ_NSTAGES,
	.hists = hists, .nhists = 1,
	.label = label,
	.drop_names = drop_names, .event_names = event_names,
	.drops_map = SKEL_MAP(uring, drops), .events_map = SKEL_MAP(uring, app_events),
	.gens_map = SKEL_MAP(uring, gens), .cgroup_map = SKEL_MAP(uring, cgroup_filter),
	.reqs_map = SKEL_MAP(uring, reqs),
	.maps = maps,
	.requests = true, .link_fn = "io_complete_rw", .link_addr = link_addr,
	.open = open_skel, .destroy = destroy_skel,
	.configure = configure,
};
