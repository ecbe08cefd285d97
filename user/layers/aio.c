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


#define UNREAPED "reap not observable (the iocb was reaped without io_getevents)"
/* a linked stage ending or starting at the block completion misses it when no program saw it */
#define UNSEEN_END "its block completion reached no program (see drops)"

static const struct layer_stage stages[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = { "submit_complete", EV_SUBMIT_IN, -1, .to_text = "block events",
		.flags = STAGE_LINKED, .how = REQ_LINKED_HOW,
		.unmeasured = "completion not observable: not linked to bios (buffered or no "
			      "block I/O, another disk), or " UNSEEN_END },
	[REQ_DONE_REAP] = { "complete_reap", -1, EV_GET_OUT, "block events",
		.flags = STAGE_LINKED, .how = REQ_LINKED_HOW,
		.unmeasured = "reap not observable: " UNSEEN_END ", or the iocb was reaped "
			      "without io_getevents" },
	[REQ_TOTAL] = { "total", EV_SUBMIT_IN, EV_GET_OUT, .how = "io_submit entry -> "
		"io_getevents exit; iocbs reaped in user space counted as not observable",
		.unmeasured = UNREAPED },
	REQ_LINKED_STAGES(EV_SUBMIT_IN),
	/* REQ_DEVICE_CQE: aio's event is ready at the block completion itself */
};

REQ_HISTS(aio);

static const char *const event_names[EV_NEVENTS] = {
	[EV_AIO_REAP_UNOBSERVED] = "aio_reap_unobserved",
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

/* iocbs submitted and not reaped through io_getevents when tracing stops */
static int pending(struct layer_inst *l, bool final, struct interval *iv)
{
	return final ? req_pending_final(l, true, iv) : 0;
}

REQ_LAYER_FUNCS(aio)

const struct layer aio_layer = {
	REQ_LAYER_COMMON(aio, cmd_name, aio_complete_rw, kc_aio),
	.drops = BIT(DROP_INFLIGHT_FULL) | BIT(DROP_INFLIGHT_STALE) | BIT(DROP_HIST_FULL) |
		 BIT(DROP_SC_START_FULL) | BIT(DROP_AIO_BATCH) | BIT(DROP_UNREADABLE),
};
