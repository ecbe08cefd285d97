// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata aio layer (native Linux aio: io_submit / io_getevents). There are no aio tracepoints:
 * requests are followed through the syscalls, by the process, the user's iocb pointer and its
 * aio_data (aio_key: one struct iocb may be submitted again while in flight).
 *
 *   submit_complete  io_submit entry -> the last block request holding its bios completed
 *                    (aio_complete runs right there, in the block completion); linked only
 *   complete_reap    that completion -> io_getevents/io_pgetevents returned the event
 *   total            io_submit entry -> io_getevents returned it
 *   submit_bio, wait, device
 *                    the linked request's block stages (req.bpf.h)
 *
 * An entry is made per iocb at io_submit's entry (its bios are queued inside the call) and
 * removed at its exit for the iocbs a partial submit did not take. An application that reaps
 * the completion ring in user space never returns its iocbs through io_getevents: when one of
 * its iocbs is submitted again, the old entry is still there. That reap is counted as not
 * observable, never given a time.
 *
 * So the entry io_getevents finds for an iocb is its latest submission's, at any age, as long
 * as every submission since was followed: a later one would have claimed it. A submission not
 * followed (its iocb unreadable, past AIO_BATCH_MAX, no call slot, or, with -c, a submitter
 * outside the cgroup: a process moved out and back in) may have been of that iocb, leaving the
 * entry an earlier one's: entries older than the last such submission are taken for leftovers
 * past stale_ns, as the tables do. An iocb in flight for minutes (the hung device) is
 * otherwise measured.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "iostrata.h"
#include "common.bpf.h"
#include "req.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

REQ_HIST_MAPS(aio);

/* A thread's io_submit or io_getevents arguments, from entry to exit. */
struct aio_call {
	__u64 ptr;	/* iocbpp / events */
	__u64 ts;
	__u32 nr;
	__u32 live;	/* entered, exit not yet seen */
	/*
	 * io_submit: the iocbs whose pointer or opcode the entry could not read (not resident:
	 * the kernel's own read faults the page in, a program's cannot), by index. Counted at the
	 * exit, once the return value says which of them the kernel took: one it refused was no
	 * request, and its page may still be absent, so it must not be counted again there either.
	 */
	__u32 unread;
	__u32 unread_refused;	/* of those, in the refused tail: set by unsubmit_one */
	__u64 unread_bits[AIO_BATCH_MAX / 64];
};

/*
 * The last io_submit entry time some iocb of which was not followed (its entry not made), on
 * the host: its process may have left an older entry in place. Raised with compare-and-swap,
 * so that two CPUs raising it at once leave the later time, and at most once a millisecond
 * (with -c, every submit outside the cgroup raises it): it matters only to entries older than
 * stale_ns.
 */
__u64 unfollowed_ts;

#define UNFOLLOWED_SLACK_NS	1000000ULL	/* the last such submit: at most this after it */

static __always_inline void unfollowed(__u64 now)
{
	if (now > *(volatile __u64 *)&unfollowed_ts + UNFOLLOWED_SLACK_NS)
		cas_bound(&unfollowed_ts, now, false);
}

/* In the thread's own storage, as the syscall layer keeps its entry times. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct aio_call);
} aio_calls SEC(".maps");

/* The current thread's call slot, created on entry (NULL, counted, if that fails). */
static __always_inline struct aio_call *call_enter(void)
{
	struct aio_call *c = bpf_task_storage_get(&aio_calls, bpf_get_current_task_btf(), 0,
						  BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!c)
		drop(DROP_SC_START_FULL);
	return c;
}

/* The current thread's call at exit, closed; NULL when its entry was not seen. */
static __always_inline struct aio_call *call_exit(void)
{
	struct aio_call *c = bpf_task_storage_get(&aio_calls, bpf_get_current_task_btf(), 0, 0);

	if (!c || !c->live)
		return NULL;
	c->live = 0;
	return c;
}

struct walk {
	struct aio_call *call;	/* submit_one, unsubmit_one: the call's unread iocbs */
	__u64 ptr;
	__u64 now;
	__u64 id;	/* submit_one: the submitter's pid_tgid */
	__u64 cgroup;	/* submit_one: its cgroup, for snoop and -C */
	__u32 tgid;
	__u32 from;
};

static __always_inline struct ioreq_hists *hists_of(__u16 opcode, __u16 flags, __u32 tgid,
						    __u64 cgroup)
{
	return req_hists_of(&aio_hists, &aio_flat, &aio_zero, HIST_SPILL_ARGS(aio), opcode, flags,
			    tgid, cgroup);
}

/* An entry still there when its iocb is submitted again: reaped without io_getevents. */
static __always_inline void reap_unobserved(struct ioreq *e)
{
	struct ioreq_hists *h = hists_of(e->opcode, e->flags & REQ_FL_KEY, e->tgid, e->cgroup);

	count_event(EV_AIO_REAP_UNOBSERVED);
	if (!h)
		return;
	/*
	 * Over, as a reaped one: in every stage reap_one() counts it in. Its completion and its
	 * bios' stamps were seen if linked: those stages are real (an unlinked one's unmeasured,
	 * as at a reap); the reap is not.
	 */
	stage_add(&h->stage[REQ_SUBMIT_DONE], e->done ? e->ts : 0, e->done);
	hist_unmeasured(&h->stage[REQ_DONE_REAP]);
	hist_unmeasured(&h->stage[REQ_TOTAL]);
	req_linked_stages(h, e, 0, false);
}

/* The head of a struct iocb (UAPI: fixed), read in one call: what a submission needs of it */
struct iocb_head {
	__u64 data;		/* aio_data */
	__u32 key, rw_flags;	/* aio_key, aio_rw_flags */
	__u16 opcode;		/* aio_lio_opcode */
};

/* Is iocb i of the call one its entry could not read? */
static __always_inline bool unread_is(const struct aio_call *c, __u64 i)
{
	return c->unread && i < AIO_BATCH_MAX && (c->unread_bits[i / 64] >> (i % 64)) & 1;
}

static long submit_one(__u64 i, struct walk *w)
{
	struct aio_call *c = w->call;
	struct iocb *user = NULL;
	struct iocb_head hd;
	struct ioreq *e;
	__u16 opcode;
	bool existed;

	if (i >= AIO_BATCH_MAX)		/* bpf_loop's bound; said to the verifier */
		return 1;
	if (bpf_probe_read_user(&user, sizeof(user), (void *)(w->ptr + i * sizeof(user))))
		goto unread;
	if (!user)	/* the kernel refuses it (EFAULT): not a request */
		return 0;
	if (bpf_probe_read_user(&hd, sizeof(hd), user))
		goto unread;
	opcode = hd.opcode;
	e = req_tab_claim(aio_key((__u64)user, hd.data), w->tgid, w->now, &existed);
	if (!e)
		return 0;
	if (existed && e->ts)
		reap_unobserved(e);
	e->opcode = opcode;
	e->flags = REQ_FL_AIO | (opcode == IOCB_CMD_PREAD || opcode == IOCB_CMD_PWRITE ||
		   opcode == IOCB_CMD_PREADV || opcode == IOCB_CMD_PWRITEV ? REQ_FL_RW : 0);
	req_note_owner(e, w->id, w->cgroup);
	e->bio_q = e->issue = e->done = 0;
	e->ts = w->now;
	return 0;
unread:
	c->unread_bits[i / 64] |= 1ULL << (i % 64);
	c->unread++;
	unfollowed(w->now);
	return 0;
}

/* iocbs a partial submit did not take (ret..nr): their entries go. */
static long unsubmit_one(__u64 i, struct walk *w)
{
	struct aio_call *c = w->call;
	struct iocb *user = NULL;
	struct ioreq *e;
	__u64 data, key;

	i += w->from;
	if (unread_is(c, i)) {	/* no entry was made: nothing to free, and no request */
		c->unread_refused++;
		return 0;
	}
	if (bpf_probe_read_user(&user, sizeof(user), (void *)(w->ptr + i * sizeof(user)))) {
		/* read at entry, gone since (rare): its entry stays, reclaimed later, counted */
		drop(DROP_UNREADABLE);
		return 0;
	}
	if (!user)
		return 0;
	if (bpf_probe_read_user(&data, sizeof(data), &user->aio_data)) {
		drop(DROP_UNREADABLE);
		return 0;
	}
	key = aio_key((__u64)user, data);
	e = req_tab_find(key, w->tgid);
	if (e && e->ts == w->now)	/* w->now: this call's entry time */
		req_tab_free(e, key, w->tgid);
	return 0;
}

/* snoop: a slow iocb, at its reap; its file from the iocb's fd, in the reaping process */
static __always_inline void snoop_aio(const struct ioreq *e, const struct io_event *ev, __u64 now)
{
	struct snoop_rec *r = req_snoop(e, SN_AIO, SN_END, now);
	struct iocb *user = (void *)ev->obj;
	__u32 fd = 0;
	struct file *f;

	if (!r)
		return;
	r->res = ev->res;
	if (ev->res < 0)
		r->flags |= REQ_FL_FAILED;
	if (!bpf_probe_read_user(&fd, sizeof(fd), &user->aio_fildes) && (f = fd_file(fd)))
		snoop_file(r, f);
	snoop_comm(r);
	snoop_submit(r);
}

static long reap_one(__u64 i, struct walk *w)
{
	struct ioreq_hists *h;
	struct io_event ev;
	struct ioreq *e;
	__u64 ts, key;

	if (bpf_probe_read_user(&ev, sizeof(ev), (void *)(w->ptr + i * sizeof(ev)))) {
		drop(DROP_UNREADABLE);	/* its entry stays: reclaimed later, counted again */
		return 0;
	}
	key = aio_key(ev.obj, ev.data);
	e = req_tab_find(key, w->tgid);
	if (!e)
		return 0;
	ts = e->ts;
	if (ts && w->now >= ts &&
	    (ts > unfollowed_ts + UNFOLLOWED_SLACK_NS || w->now - ts <= stale_ns)) {
		if (snoop_slow(ts, w->now))
			snoop_aio(e, &ev, w->now);
		h = hists_of(e->opcode, (e->flags & REQ_FL_KEY) | (ev.res < 0 ? REQ_FL_FAILED : 0),
			     w->tgid, e->cgroup);
		if (h) {
			stage_add(&h->stage[REQ_SUBMIT_DONE], e->done ? ts : 0, e->done);
			stage_add(&h->stage[REQ_DONE_REAP], e->done, w->now);
			stage_add(&h->stage[REQ_TOTAL], ts, w->now);
			req_linked_stages(h, e, w->now, false);
		}
	} else if (ts) {
		drop(DROP_INFLIGHT_STALE);
	}
	req_tab_free(e, key, w->tgid);
	return 0;
}

static __always_inline __u32 batch(__u64 n)
{
	if (n > AIO_BATCH_MAX) {
		drops_add(DROP_AIO_BATCH, n - AIO_BATCH_MAX);	/* each iocb or event not followed */
		return AIO_BATCH_MAX;
	}
	return (__u32)n;
}

SEC("tracepoint/syscalls/sys_enter_io_submit")
int aio_submit_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	long nr = (long)ctx->args[1];
	struct walk w = {};
	struct aio_call *call;

	if (nr <= 0)
		return 0;
	if (!owner_passes(id)) {
		/* -c: the same process may submit from outside the cgroup, then reap inside */
		if (filter_cgroup && !is_self(id))
			unfollowed(bpf_ktime_get_ns());
		return 0;
	}
	call = call_enter();
	if (!call) {
		unfollowed(bpf_ktime_get_ns());
		return 0;
	}
	req_note_comm(id >> 32);
	w.ptr = ctx->args[2];
	w.now = bpf_ktime_get_ns();
	if (nr > AIO_BATCH_MAX)
		unfollowed(w.now);
	w.tgid = id >> 32;
	w.id = id;
	w.cgroup = owner_cgroup();
	call->ptr = w.ptr;
	call->ts = w.now;
	call->nr = batch((__u64)nr);
	call->live = 1;
	if (call->unread) {	/* an earlier call's exit was not seen: not followed, whatever it took */
		drops_add(DROP_UNREADABLE, call->unread);
		__builtin_memset(call->unread_bits, 0, sizeof(call->unread_bits));
		call->unread = 0;
	}
	call->unread_refused = 0;
	w.call = call;
	bpf_loop(call->nr, submit_one, &w, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_io_submit")
int aio_submit_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct aio_call *call = call_exit();
	struct walk w = {};
	long ret = ctx->ret;

	if (!call)
		return 0;
	if (ret < 0)
		ret = 0;
	if (ret < call->nr) {
		w.call = call;
		w.ptr = call->ptr;
		w.now = call->ts;
		w.tgid = id >> 32;
		w.from = (__u32)ret;
		bpf_loop(call->nr - (__u32)ret, unsubmit_one, &w, 0);
	}
	if (call->unread) {	/* the requests among them: iocbs the kernel took, not followed */
		drops_add(DROP_UNREADABLE, call->unread - call->unread_refused);
		__builtin_memset(call->unread_bits, 0, sizeof(call->unread_bits));
		call->unread = 0;
	}
	return 0;
}

/* io_getevents and io_pgetevents: (ctx_id, min_nr, nr, events, ...) */
static __always_inline int getevents_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct aio_call *call;

	if (!owner_passes(bpf_get_current_pid_tgid()))
		return 0;
	call = call_enter();
	if (call) {
		call->ptr = ctx->args[3];
		call->live = 1;
	}
	return 0;
}

static __always_inline int getevents_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct aio_call *call = call_exit();
	struct walk w = {};
	long ret = ctx->ret;

	if (ret <= 0)
		return 0;
	if (call) {
		w.ptr = call->ptr;
	} else {
		/*
		 * Entered before tracing began (a reaper waiting at the attach, as one usually is),
		 * or with no room to note the call: the events array is where the call's fourth
		 * argument points, still in its saved registers. Unread, these reaps were taken for
		 * ones made in user memory (aio_reap_unobserved) when their iocbs came back.
		 */
		struct pt_regs *regs;

		if (!owner_passes(id))
			return 0;
		regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		w.ptr = PT_REGS_PARM4_CORE_SYSCALL(regs);
	}
	w.now = bpf_ktime_get_ns();
	w.tgid = id >> 32;
	bpf_loop(batch((__u64)ret), reap_one, &w, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_io_getevents")
int aio_getevents_enter(struct trace_event_raw_sys_enter *ctx) { return getevents_enter(ctx); }
SEC("tracepoint/syscalls/sys_exit_io_getevents")
int aio_getevents_exit(struct trace_event_raw_sys_exit *ctx) { return getevents_exit(ctx); }
SEC("tracepoint/syscalls/sys_enter_io_pgetevents")
int aio_pgetevents_enter(struct trace_event_raw_sys_enter *ctx) { return getevents_enter(ctx); }
SEC("tracepoint/syscalls/sys_exit_io_pgetevents")
int aio_pgetevents_exit(struct trace_event_raw_sys_exit *ctx) { return getevents_exit(ctx); }
