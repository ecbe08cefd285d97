/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the running kernel offers, read from its BTF, sysfs and procfs, never from its version. */
#ifndef IOSTRATA_SYSINFO_H
#define IOSTRATA_SYSINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* clock_gettime(clk) in nanoseconds. */
uint64_t clock_ns(clockid_t clk);

/* The kernel's memlock figure for a BPF map fd (its /proc/self/fdinfo). */
uint64_t map_memlock(int fd);
/* The kernel's id of a BPF map fd (dup()s of one map share it); 0 when unknown. */
uint32_t map_id(int fd);

/* The kernel's BTF, loaded once; NULL when the kernel has none. */
struct btf;
struct btf *vmlinux_btf(void);
/* Can programs read objects reached by address with direct loads (the bpf_rdonly_cast kfunc)? */
bool kernel_direct_reads(void);
/* Number of arguments of tracepoint `tp` (without the hidden context), -1 when absent. */
int tp_nargs(const char *tp);
/* Is argument i (from 0) of tracepoint tp a pointer to struct `name`, by the kernel's BTF? */
bool tp_arg_is_struct_ptr(const char *tp, int i, const char *name);

/* REQ_OP_* and request-flag names as this kernel numbers them. */
const char *op_name(unsigned int op, char *buf, size_t len);
uint32_t req_flags_mask(void);
/* REQ_PREFLUSH | REQ_FUA in cmd_flags as this kernel numbers them (0 where unknown) */
uint32_t req_flush_flags(void);
/* RQF_FLUSH_SEQ in struct request's rq_flags: a request the flush state machine runs; 0 when
 * this kernel's value cannot be told. */
uint32_t rq_flush_seq_flag(void);
const char *req_flags_str(uint32_t flags, char *buf, size_t len);

/* The lower-case name of value val of a BTF enum, without prefix ("read" for IORING_OP_READ). */
const char *btf_enum_name(const char *enum_type, const char *prefix, unsigned int val,
			  char *buf, size_t len);
/* /proc/PID/comm, or "?" once the process has gone. */
const char *process_comm(uint32_t pid, char *buf, size_t len);
/* /proc/PID/task/TID/comm, else the process's, else "?". */
const char *thread_comm(uint32_t pid, uint32_t tid, char *buf, size_t len);

/* tracefs, where classic tracepoints (the syscall events) are found */
#define TRACEFS "/sys/kernel/tracing"
/* Is syscalls:NAME (e.g. "sys_enter_read") there? Needs tracefs mounted. */
bool syscall_tp_exists(const char *name);
/* Mount tracefs if the host has not; true when syscall events are visible after. *mounted
 * tells the caller to unmount it when done (tracefs_release). */
bool tracefs_ready(bool *mounted);
void tracefs_release(bool mounted);

/* The first line of a sysfs or procfs file, without its newline. 0, or -errno. */
int sysfs_line(const char *path, char *buf, size_t len);

/* Disks: name <-> kernel dev_t (major << 20 | minor). */
int disk_resolve(const char *name, uint32_t *dev);
/* Does the disk build block requests (blk-mq: /sys/block/NAME/mq)? 0, or -1, said, for a
 * bio-based one (dm, md, zram), naming the disks below it. */
int disk_has_requests(const char *name);
/* The disks below disk name (/sys/class/block/NAME/slaves: a dm or md device's), by name,
 * space-separated into buf; the length written, 0 when none is (zram, brd, pmem, any disk). */
size_t disk_below(const char *name, char *buf, size_t len);
/* dev's name: from /sys/block, read again for a dev not known yet; a disk gone keeps its name
 * from the last read that saw it, else "MAJ:MIN". */
const char *disk_name(uint32_t dev, char *buf, size_t len);
/* Read /sys/block now (a session's start), so that disks there keep their names once gone. */
void disks_note(void);
/* Whole disks in /sys/block. */
int disk_count(void);
/* Requests the kernel has in flight on disk dev now (/sys/dev/block/M:m/inflight), -1 unknown.
 * On blk-mq, only those issued to the driver: a scheduler may hold more. */
long disk_inflight(uint32_t dev);
/* Requests disk dev has completed since boot: reads, writes, discards and flushes of
 * /sys/dev/block/M:m/stat (after merging, as the block layer counts them); -1 unknown. */
int64_t disk_completed(uint32_t dev);
/* Has no disk in /sys/block a request in flight now? */
bool disks_idle(void);
/*
 * The blk-mq hardware queues of disk dev (of every disk when dev is 0), and in *depth the
 * highest tag any of them can give a request, plus one: the driver's depth (mq/N/nr_tags), the
 * scheduler's (queue/nr_requests), or the one a scheduler chosen later gets by default (twice
 * the driver's depth, at most 256). Bio-based disks (dm, md, zram) have none.
 */
unsigned int hw_queues(uint32_t dev, unsigned int *depth);

#endif
