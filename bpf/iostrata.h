/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The contract between iostrata's BPF programs and its loader: map keys, map values and the
 * counters of everything the programs could not record. Both sides include this file.
 */
#ifndef IOSTRATA_H
#define IOSTRATA_H

#include "hist.h"

/* Block layer stages, in the order a request lives them. */
enum block_stage {
	BLOCK_WAIT,	/* request allocated -> issued to the driver */
	BLOCK_DEVICE,	/* issued -> completed */
	BLOCK_TOTAL,	/* first bio queued -> request completed */
	BLOCK_NSTAGES,
};

/*
 * One histogram set per (generation, disk, op, flags). The loader flips `gen` each interval and
 * drains the generation it just retired, so each interval's min/max are exact.
 */
struct block_key {
	__u32 gen;	/* 0 or 1: every histogram key starts with its generation */
	__u32 dev;	/* kernel dev_t of the whole disk (major << 20 | minor); 0 when not per disk */
	__u32 flags;	/* request flag bits (cmd_flags >> 8) & flags_mask; 0 unless per flags */
	__u16 op;	/* REQ_OP_* as this kernel numbers it; BLOCK_OP_ANY unless per op */
	__u16 pad;
	__u64 cgroup;	/* cgroup v2 id of the submitter (-C); 0 unless per cgroup */
};

#define BLOCK_OP_ANY	0xffff

struct block_hists {
	struct hist stage[BLOCK_NSTAGES];
};

/*
 * In-flight table: an open-addressed array keyed by bio or request pointer. An array slot update
 * costs a few ns where a BPF hash update costs ~75 ns, which is what keeps the block layer's
 * per-I/O cost low. Entries left behind (a bio that never reached a request we saw) are reclaimed
 * when the pointer is reused or once older than INFLIGHT_STALE_NS; each reclaim is counted.
 */
struct inflight {
	__u64 key;	/* bio or request pointer; 0 = free */
	union {
		__u32 spill;	/* in the in-flight table: table.bpf.h's (one line with the key) */
		__u32 rq_link;	/* in a tag slot: its bios' request (REQ_LINK_*, req.bpf.h) */
	};
	__u32 dev;	/* requests: their disk (kernel dev_t) or INFLIGHT_DEV_ANY; bios: 0 */
	__u64 ts;	/* bpf_ktime_get_ns() at queue (bio) or issue (request); 0 while claimed */
	union {
		__u64 queued;	/* requests: when their earliest bio was queued; 0 = not seen */
		__u64 bio_link;	/* bios: the io_uring/aio request owning them (REQ_LINK_*) */
	};
	__u32 tgid;	/* process that queued the (earliest) bio */
	union {
		/* requests: given back by the driver or the block layer to be issued again (a
		 * requeue, block_rq_requeue), so their next issue is the same I/O; cleared then */
		__u32 requeued;
		__u32 bio_nowait;	/* bios: queued with REQ_NOWAIT (bio_ended_unmade) */
	};
	/* who queued the (earliest) bio, noted only for snoop and -C (owner_note) */
	__u64 cgroup;	/* its cgroup v2 id */
	__u32 tid;	/* its thread */
	__u32 pad[3];	/* to ENTRY_BYTES */
};

/*
 * Per-I/O entries written on one CPU and read on another (issue and completion, submission and
 * CQE) are one cache line each: 64 bytes, in arrays made BPF_F_MMAPABLE, whose values start on a
 * page. A plain array's values start right after its struct bpf_array header (312 bytes on
 * 6.18), so that every 64-byte value spanned two lines, and a 56-byte one most often did: two
 * lines crossing CPUs per entry instead of one.
 */
#define ENTRY_MAP_FLAGS		1024u	/* BPF_F_MMAPABLE (a macro: also for user space) */
#define ENTRY_BYTES		64

#define INFLIGHT_PROBES		4
#define INFLIGHT_DEV_ANY	0xffffffffu	/* a request whose disk was not read (no -d, no -D) */
#define INFLIGHT_SLOTS_DEFAULT	(1u << 17)
#define INFLIGHT_STALE_NS	(120ULL * 1000000000ULL)

/*
 * Block requests by tag (inflight.bpf.h): 2^rq_region_bits regions of 2^rq_slot_bits slots,
 * each region owned by one hardware queue (its blk_mq_hw_ctx's address in rq_regions), a
 * request's slot its tag there. Requests of a hardware queue without a region, or with a tag
 * beyond one, use the in-flight table (counted in rq_untagged). The loader sizes both to the
 * machine's hardware queues and tag depths (user/layers/block.c); these are the defaults and
 * the bounds.
 */
#define RQ_REGION_BITS_DEFAULT	7
#define RQ_SLOT_BITS_DEFAULT	10
#define RQ_REGION_BITS_MIN	7
#define RQ_REGION_BITS_MAX	12
#define RQ_SLOT_BITS_MIN	6
#define RQ_SLOT_BITS_MAX	12
#define RQ_REGION_PROBES	4
#define BIO_WALK_MAX		8	/* bios per request walked inline (direct loads in tp_btf) */
#define BIO_LOOP_MAX		1024	/* and the rest of a merged request's, in a bpf_loop */
#define AIO_BATCH_MAX		1024	/* iocbs (events) followed per io_submit (io_getevents) */

/* The syscall layer: one duration histogram per (generation, syscall[, process]). */
#define SYSCALLS(X)							\
	X(read) X(pread64) X(readv) X(preadv) X(preadv2)		\
	X(write) X(pwrite64) X(writev) X(pwritev) X(pwritev2)		\
	X(fsync) X(fdatasync) X(sync_file_range)			\
	X(io_submit) X(io_getevents) X(io_pgetevents) X(io_uring_enter)

#define SC_ENUM(name) SC_##name,
enum syscall_id { SYSCALLS(SC_ENUM) SC_N };
#undef SC_ENUM

struct syscall_key {
	__u32 gen;
	__u32 sc;		/* enum syscall_id */
	__u32 tgid;		/* 0 unless per process */
	char comm[16];		/* the calling thread's comm; "" unless per process */
	__u32 pad;
	__u64 cgroup;		/* 0 unless per cgroup (-C) */
};

struct syscall_start {
	__u64 ts;
	__u32 sc;
	__s32 fd;		/* the fd-taking calls' fd (snoop: the file), else -1 */
	__u64 cgroup;		/* the caller's cgroup v2 at entry, for snoop and -C (owner_note) */
};

/*
 * The io_uring and aio layers: one entry per request in flight, in a table shared with the block
 * layer's programs, which link a request to its bios (bi_end_io -> kiocb) and stamp the entry
 * when its first bio is queued and when the last request holding its bios completes.
 */
struct ioreq {
	__u64 key;	/* io_kiocb (io_uring), or aio_key() of the user's iocb (aio, with tgid); 0 = free */
	__u64 ts;	/* submitted; 0 while claimed */
	__u64 bio_q;	/* its first bio queued; 0 = no bio linked */
	__u64 issue;	/* earliest issue of a block request holding its bios */
	__u64 done;	/* latest completion of a block request holding its bios */
	__u32 tgid;	/* submitter */
	__u16 opcode;	/* IORING_OP_* / IOCB_CMD_* */
	__u16 flags;	/* REQ_FL_* */
	/* the submitter's cgroup v2 id and thread, noted only for snoop and -C (owner_note) */
	__u64 cgroup;
	__u32 tid;
	__u32 spill;	/* table.bpf.h's */
};

_Static_assert(sizeof(struct inflight) == ENTRY_BYTES, "an in-flight entry is one cache line");
_Static_assert(sizeof(struct ioreq) == ENTRY_BYTES, "a request entry is one cache line");

#define REQ_SLOTS_DEFAULT	(1u << 16)
/* The submitting processes' names (req_comm), one map every layer shares */
#define REQ_COMM_SLOTS		4096

/*
 * A bio's link to the io_uring/aio request owning it, found once where the bio is queued and
 * carried through the bio's entry to its block request's tag slot, so that the completion stamps
 * the request without walking the bios again: the request table's slot + 1; REQ_LINK_NONE, no
 * request (buffered I/O, or no layer linking); REQ_LINK_WALK, not carried (bios of several
 * requests, a bio not seen, more than BIO_WALK_MAX bios, a request outside the tag slots): the
 * completion walks the bios.
 */
#define REQ_LINK_NONE	0u
#define REQ_LINK_WALK	0xffffffffu

/* Request paths, told apart in the histogram key (the `flags` label). */
#define REQ_FL_PUNTED	0x01	/* io_uring: handed to an io-wq worker */
#define REQ_FL_POLL	0x02	/* io_uring: waited on poll before it could run */
#define REQ_FL_CHAIN	0x04	/* io_uring: part of an IOSQE_IO_LINK/HARDLINK chain */
#define REQ_FL_FAILED	0x08	/* completed with an error */
#define REQ_FL_SQPOLL	0x10	/* io_uring: submitted by the ring's SQPOLL thread */
#define REQ_FL_KEY	0x1f	/* the bits above: the path labels of a histogram key */
#define REQ_FLAT_PER_GEN	(REQ_FL_KEY + 1)	/* flat histogram slots: one per path-flag set */
#define REQ_FLAT_SLOTS		(2 * REQ_FLAT_PER_GEN)	/* and generation */
#define REQ_FL_AIO	0x4000	/* an aio request (the table is shared); not a key label */
#define REQ_FL_RW	0x8000	/* a read or write (could have bios); not a key label */

/* The stages of one request; aio uses the first six (its event is ready at block completion). */
enum req_stage {
	REQ_SUBMIT_DONE,	/* uring submit_cqe; aio submit_complete */
	REQ_DONE_REAP,		/* uring cqe_reap (an upper bound); aio complete_reap */
	REQ_TOTAL,		/* submitted -> reaped */
	REQ_SUBMIT_BIO,		/* linked: submitted -> first bio queued */
	REQ_WAIT,		/* linked: first bio queued -> first block request issued */
	REQ_DEVICE,		/* linked: issued -> last block request completed */
	REQ_DEVICE_CQE,		/* linked, io_uring: block completion -> CQE posted */
	REQ_NSTAGES,
};

struct ioreq_key {
	__u32 gen;
	__u16 opcode;
	__u16 flags;		/* REQ_FL_* */
	__u32 tgid;		/* 0 unless per process */
	__u32 pad;
	__u64 cgroup;		/* 0 unless per cgroup (-C) */
};

struct ioreq_hists {
	struct hist stage[REQ_NSTAGES];
};

/* io_uring: per ring, the last CQEs posted, to bound when the application reaped them. */
#define RING_SLOTS	256
struct ring_cqe {
	__u64 posted;		/* CQE posted; 0 = accounted for */
	__u64 submitted;
	__u32 idx;		/* the CQE's free-running ring index */
	__u16 opcode;
	__u16 flags;
	__u64 cgroup;		/* -C: the submitter's cgroup v2 id */
};

/*
 * A ring's slot in the ring table, open-addressed by its io_ring_ctx (uring.bpf.c): found in a
 * probe or two where a hash map costs a hashed lookup, at every submission and every CQE.
 * Nothing marks a ring's teardown: user space frees the slots of rings whose process has gone,
 * and a new ring may take the slot of one idle for RING_IDLE_NS.
 */
#define RING_TABLE_BITS		9
#define RING_TABLE_SLOTS	(1u << RING_TABLE_BITS)
#define RING_PROBES		8
#define RING_IDLE_NS		(100ULL * 1000000ULL)
#define RING_TS_STEP_NS		(10ULL * 1000000ULL)
struct ring_state {
	__u64 key;		/* the io_ring_ctx; 0 = a free slot */
	__u64 ts;		/* its last event (to RING_TS_STEP_NS); 0: free, or being taken */
	__u64 rings;		/* the ring's io_rings: a new ring at a recycled ctx has new ones */
	__u32 owner;		/* the ring's process; 0 until initialised */
	__u32 head;		/* CQ head last read */
	__u32 sqpoll;		/* IORING_SETUP_SQPOLL: its requests are submitted by that thread */
	__u32 pad;
	struct ring_cqe cqe[RING_SLOTS];
};

/* Events of the traced applications, counted (not failures of ours). */
enum app_event {
	EV_CQE_OVERFLOW,	/* io_uring: a CQE went to the overflow list (CQ ring full) */
	EV_AIO_REAP_UNOBSERVED,	/* aio: an iocb submitted again without io_getevents returning it */
	EV_NEVENTS,
};

/* Everything a program saw and could not record; shown in every interval as `drops`. */
enum drop_reason {
	DROP_INFLIGHT_FULL,	/* in-flight table probes all busy: a bio/request went untracked */
	DROP_INFLIGHT_STALE,	/* an entry older than INFLIGHT_STALE_NS was reclaimed */
	DROP_INFLIGHT_REUSED,	/* a pointer was queued again while its old entry was still there */
	DROP_HIST_FULL,		/* no room for a new histogram key: a completion was not counted */
	DROP_SC_START_FULL,	/* syscall layer: no room to note a syscall's entry */
	DROP_REAP_UNSEEN,	/* io_uring: more than RING_SLOTS CQEs unreaped; a reap not bounded */
	DROP_AIO_BATCH,		/* aio: iocbs or events beyond AIO_BATCH_MAX in one call */
	/*
	 * block: a request issued with new bios while still in flight: its previous completion was
	 * never seen (the kernel ended it without block_rq_complete; bpftrace misses it too)
	 */
	DROP_COMPLETE_UNSEEN,
	DROP_SNOOP_LOST,	/* snoop: a slow request's record found the ring buffer full */
	DROP_RING_FULL,		/* io_uring: a CQE of a ring the ring table had no slot for */
	/*
	 * aio: an iocb pointer or event in user memory the programs could not read (not resident:
	 * a program cannot fault it in, the kernel's own read can): that iocb is not followed
	 */
	DROP_UNREADABLE,
	DROP_NREASONS,
};

/*
 * snoop: one record per request slower than the threshold, through a BPF ring buffer. Each
 * boundary iostrata saw for the request, in the order a request lives them; 0 = not seen (or
 * not this layer's). Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC).
 */
enum snoop_ts {
	SN_SUBMIT,	/* uring/aio: submitted; syscall: entered */
	SN_BIO_QUEUED,	/* block: the request's earliest bio queued; uring/aio: their first bio */
	SN_ISSUE,	/* issued to the driver (the earliest block request holding its bios) */
	SN_DEVICE,	/* device completion (the last such block request completed) */
	SN_CQE,		/* uring: CQE posted */
	SN_END,		/* aio: io_getevents returned the event; syscall: exited */
	SN_NTS,
};

enum snoop_layer { SN_BLOCK, SN_URING, SN_AIO, SN_SYSCALL };

struct snoop_rec {
	__u64 ts[SN_NTS];
	__u64 cgroup;		/* the submitter's cgroup v2 id */
	__u64 sector;		/* block: the request's start sector (512 B) */
	__u64 ino;		/* uring/aio/syscall: the file's inode, 0 when not known */
	__s64 res;		/* uring: the CQE's res; aio: the event's res; syscall: its return */
	__u32 bytes;		/* block: the request's bytes */
	__u32 tgid, tid;	/* the submitter */
	__u32 disk;		/* block: the whole disk (kernel dev_t) */
	__u32 fdev;		/* uring/aio/syscall: the file's device (kernel dev_t), 0 when not known */
	__u32 opf;		/* block: cmd_flags (op and flags) */
	__u16 code;		/* uring opcode, aio command, or enum syscall_id */
	__u16 flags;		/* uring/aio: REQ_FL_* */
	__u8 layer;		/* enum snoop_layer */
	__u8 pad[3];
	char comm[16];		/* syscall: the thread's name; others: the process's as noted
				 * when the record was made ("" if none was: then looked up) */
};

#define SNOOP_RB_DEFAULT	(4u << 20)	/* bytes of ring buffer: 30,840 records (128 B + 8 B header) */

#endif /* IOSTRATA_H */
