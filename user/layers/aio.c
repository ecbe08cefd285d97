// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The aio layer: what only it has. Native aio requests are followed through io_submit and
 * io_getevents (classic syscall tracepoints: the session mounts tracefs if the host has not).
 */
#include <stdio.h>
#include <linux/aio_abi.h>
#include <bpf/libbpf.h>
#include "aio.skel.h"
#include "ksyms.h"
#include "layer.h"
#include "req.h"

enum { EV_SUBMIT_IN, EV_SUBMIT_OUT, EV_GET_IN, EV_GET_OUT, EV_PGET_IN, EV_PGET_OUT };

#define P(name) SKEL_PROG(aio, name)

static const struct layer_event events[] = {
	[EV_SUBMIT_IN] = { "sys_enter_io_submit", EV_SYSCALL, P(aio_submit_enter), .pair = 1,
		.required = true, .role = "iocbs submitted: start every stage" },
	[EV_SUBMIT_OUT] = { "sys_exit_io_submit", EV_SYSCALL, P(aio_submit_exit), .pair = -1,
		.required = true, .role = "iocbs a partial submit did not take: forgotten" },
	[EV_GET_IN] = { "sys_enter_io_getevents", EV_SYSCALL, P(aio_getevents_enter), .pair = 1,
		.required = true, .role = "the events array noted" },
	[EV_GET_OUT] = { "sys_exit_io_getevents", EV_SYSCALL, P(aio_getevents_exit), .pair = -1,
		.required = true, .role = "events returned: end complete_reap and total" },
	[EV_PGET_IN] = { "sys_enter_io_pgetevents", EV_SYSCALL, P(aio_pgetevents_enter),
		.pair = 1, .role = "the events array noted" },
	[EV_PGET_OUT] = { "sys_exit_io_pgetevents", EV_SYSCALL, P(aio_pgetevents_exit),
		.pair = -1, .role = "events returned: end complete_reap and total" },
};

#define LINKED_HOW "O_DIRECT iocbs linked through bi_end_io; needs the block layer"
#define UNLINKED "not linked to bios (buffered or no block I/O, another disk, or see drops)"
#define UNREAPED "reap not observable (the iocb was reaped without io_getevents)"

static const struct layer_stage stages[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = { "submit_complete", EV_SUBMIT_IN, -1, .to_text = "block events",
		.flags = STAGE_LINKED, .how = LINKED_HOW,
		.unmeasured = "completion not observable (not linked to bios)" },
	[REQ_DONE_REAP] = { "complete_reap", -1, EV_GET_OUT, "block events",
		.flags = STAGE_LINKED, .how = LINKED_HOW, .unmeasured = UNREAPED },
	[REQ_TOTAL] = { "total", EV_SUBMIT_IN, EV_GET_OUT, .how = "io_submit entry -> "
		"io_getevents exit; iocbs reaped in user space counted as not observable",
		.unmeasured = UNREAPED },
	[REQ_SUBMIT_BIO] = { "submit_bio", EV_SUBMIT_IN, -1, .to_text = "block events",
		.flags = STAGE_LINKED, .how = LINKED_HOW, .unmeasured = UNLINKED },
	[REQ_WAIT] = { "wait", -1, -1, "block events", "block events", STAGE_LINKED, LINKED_HOW,
		.unmeasured = UNLINKED },
	[REQ_DEVICE] = { "device", -1, -1, "block events", "block events", STAGE_LINKED,
		LINKED_HOW, .unmeasured = UNLINKED },
	/* REQ_DEVICE_CQE: aio's event is ready at the block completion itself */
};

static const struct layer_hists hists[] = {
	{ .map = SKEL_MAP(aio, aio_hists), .key_size = sizeof(struct ioreq_key) },
};

static const char *const drop_names[DROP_NREASONS] = {
	[DROP_INFLIGHT_FULL] = "aio_inflight_full",
	[DROP_INFLIGHT_STALE] = "aio_inflight_stale",
	[DROP_HIST_FULL] = "aio_hist_full",
	[DROP_SC_START_FULL] = "aio_call_full",
	[DROP_AIO_BATCH] = "aio_batch_cut",
};

static const char *const event_names[EV_NEVENTS] = {
	[EV_AIO_REAP_UNOBSERVED] = "aio_reap_unobserved",
};

static const struct layer_map_note maps[] = {
	{ .map = SKEL_MAP(aio, aio_hists) }, { .map = SKEL_MAP(aio, aio_calls) }, { .map = SKEL_MAP(aio, aio_zero) },
	{ .map = SKEL_MAP(aio, drops) }, { 0 },
};

/* IOCB_CMD_* (UAPI): the kernel's enum of them is anonymous, so not to be found in BTF */
static const char *cmd_name(unsigned int cmd, char *buf, size_t len)
{
	static const char *const names[] = {
		[IOCB_CMD_PREAD] = "pread", [IOCB_CMD_PWRITE] = "pwrite",
		[IOCB_CMD_FSYNC] = "fsync", [IOCB_CMD_FDSYNC] = "fdsync",
		[IOCB_CMD_POLL] = "poll", [IOCB_CMD_NOOP] = "noop",
		[IOCB_CMD_PREADV] = "preadv", [IOCB_CMD_PWRITEV] = "pwritev",
	};

	if (cmd < sizeof(names) / sizeof(names[0]) && names[cmd])
		snprintf(buf, len, "%s", names[cmd]);
	else
		snprintf(buf, len, "%u", cmd);
	return buf;
}

static void label(const struct layer_inst *l, const void *key, struct rec *r)
{
	req_label(l, key, r, cmd_name, SKEL_MAP(aio, req_comm));
}

static int configure(struct layer_inst *l)
{
	struct aio_bpf *skel = l->skel;

	OWNER_RODATA(skel->rodata, l);
	REQ_RODATA(skel->rodata, l);
	return bpf_map__set_max_entries(skel->maps.aio_hists,
					hist_map_keys(l, req_keys_wanted(l->cfg)));
}

static uint64_t link_addr(void)
{
	return link_syms()->kc_aio;
}

static void *open_skel(void) { return aio_bpf__open(); }
static void destroy_skel(void *s) { aio_bpf__destroy(s); }

const struct layer aio_layer = {
	.name = "aio",
	.help = "submit_complete, complete_reap, total; linked: submit_bio, wait, device",
	.events = events, .nevents = sizeof(events) / sizeof(events[0]),
	.stages = stages, .nstages = REQ_NSTAGES,
	.hists = hists, .nhists = 1,
	.label = label,
	.drop_names = drop_names, .event_names = event_names,
	.drops_map = SKEL_MAP(aio, drops), .events_map = SKEL_MAP(aio, app_events),
	.gens_map = SKEL_MAP(aio, gens), .cgroup_map = SKEL_MAP(aio, cgroup_filter),
	.reqs_map = SKEL_MAP(aio, reqs),
	.maps = maps,
	.requests = true, .link_fn = "aio_complete_rw", .link_addr = link_addr,
	.open = open_skel, .destroy = destroy_skel,
	.configure = configure,
};
