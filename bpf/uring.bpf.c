// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata io_uring layer: per request, the kernel time from submission to its CQE.
 *
 *   submit_cqe   io_uring_submit_req (io_uring_submit_sqe before v6.4) -> io_uring_complete
 *
 * Keyed by the request pointer in the shared in-flight table; a request handed to an io-wq
 * worker (io_uring_queue_async_work) is counted apart. Requests are recycled: the pointer is
 * unique only while in flight, so a request whose CQE never comes (IOSQE_CQE_SKIP_SUCCESS,
 * cancellation) leaves an entry that is reclaimed, and counted, when the pointer is reused.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iostrata.h"
#include "common.bpf.h"
#include "inflight.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool per_process;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);		/* resized by the loader */
	__type(key, struct uring_key);
	__type(value, struct hist);
} uring_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} uring_zero SEC(".maps");

/* -P: each submitting process's name, noted once, so it is known after the process exits. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, char[16]);
} uring_comm SEC(".maps");

/* A tracepoint argument as an integer, whether the program type typed it or not. */
static __always_inline __u64 arg_u64(__u64 *ctx, int i)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
	return v;
}

static __always_inline int on_submit(__u64 req)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u8 opcode;

	if (!req)
		return 0;
	if (!owner_passes(id))
		return 0;
	opcode = BPF_CORE_READ((struct io_kiocb *)req, opcode);
	if (per_process) {
		__u32 tgid = id >> 32;

		if (!bpf_map_lookup_elem(&uring_comm, &tgid)) {
			char comm[16];

			bpf_get_current_comm(comm, sizeof(comm));
			bpf_map_update_elem(&uring_comm, &tgid, comm, BPF_NOEXIST);
		}
	}
	/* the entry's queued field carries the opcode (and URING_PUNTED once punted) */
	inflight_put(req, bpf_ktime_get_ns(), (__u64)opcode | (1ULL << 32), id >> 32, true);
	return 0;
}

static __always_inline int on_punt(__u64 req)
{
	struct inflight *e = inflight_find(req);

	if (e)
		e->queued |= URING_PUNTED;
	return 0;
}

static __always_inline int on_complete(__u64 req)
{
	struct uring_key key = {};
	__u64 now, ts, info = 0;
	__u32 tgid = 0;
	struct hist *h;

	if (!req)		/* an extra CQE tied to no request */
		return 0;
	now = bpf_ktime_get_ns();
	ts = inflight_take(req, now, &info, &tgid);
	if (!ts || now < ts)
		return 0;
	key.gen = gen & 1;
	key.opcode = info & 0xff;
	key.flags = info & URING_PUNTED;
	if (per_process)
		key.tgid = tgid;
	h = hists_lookup_or_init(&uring_hists, &key, &uring_zero);
	if (h)
		hist_record(h, now - ts);
	return 0;
}

/* tp_btf programs and raw_tp twins; the loader keeps one event name for submission. */
#define TWIN(event, call)						\
SEC("tp_btf/" #event) int tp_btf_##event(__u64 *ctx) { return call; }	\
SEC("raw_tp/" #event) int raw_tp_##event(__u64 *ctx) { return call; }

TWIN(io_uring_submit_req, on_submit(arg_u64(ctx, 0)))
TWIN(io_uring_submit_sqe, on_submit(arg_u64(ctx, 0)))
TWIN(io_uring_queue_async_work, on_punt(arg_u64(ctx, 0)))
TWIN(io_uring_complete, on_complete(arg_u64(ctx, 1)))
