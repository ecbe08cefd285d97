/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tracing session: the layers a configuration asks for, attached together, sharing one
 * generation map (so every layer's interval ends at the same instant, with one flip and one
 * grace period), one request table, and tracefs while attaching. Every command that traces
 * runs one:
 *
 *	session_open -> session_interval ... -> session_finish -> session_close
 *
 * or session_run, which paces intervals and hands each to a sink until a signal, COUNT or
 * the duration ends it.
 */
#ifndef IOSTRATA_SESSION_H
#define IOSTRATA_SESSION_H

#include <stdbool.h>
#include <sys/types.h>
#include <stdint.h>
#include "config.h"
#include "interval.h"
#include "layer.h"
#include "reqrec.h"

struct session;

/*
 * Start the layers cfg asks for: those it names must start; without names every available one
 * does (only block when a disk is named), and at least one must. 0, or -1 with one line said
 * and nothing left attached. reps (NLAYERS, optional): each layer's report, NULL-named layers
 * not tried. probe: try every layer, none need start (features).
 */
int session_open(const struct trace_config *cfg, bool probe, struct session **out,
		 struct layer_report *reps, bool *tried);
/* Is layer id running in this session? */
bool session_has(const struct session *s, int id);
/* Retire the generation the programs write and drain it: the interval since the last one. */
int session_interval(struct session *s, struct interval *iv);
/*
 * The last interval: detach every program, then drain both generations, so nothing a program
 * wrote late is left behind. Appends to iv when it already holds an interval (its length grows
 * to cover both). The session only reads and closes after this.
 */
int session_finish(struct session *s, struct interval *iv);
void session_close(struct session *s);
/* The memory of the maps every layer shares (features). */
void session_shared_maps(const struct session *s, struct layer_report *rep);
/*
 * Can this process read the session's maps (a bpf() call on a held fd)? 0, or -errno: EPERM
 * where the kernel refuses bpf() to a process without CAP_BPF (before Linux 5.19, with
 * kernel.unprivileged_bpf_disabled set).
 */
int session_readable(const struct session *s);
/* BPF run time of the session's programs so far, per layer (kernel.bpf_stats_enabled on). */
void session_run_time(const struct session *s, uint64_t ns[NLAYERS]);

/* Every signal whose default ends the process (stopsig.h: SIGINT, SIGTERM, SIGHUP, SIGUSR1,
 * SIGALRM, ...) ends a session_run (and tells a command to stop); SIGPIPE is ignored. */
void session_signals(void);
/* Stop as sig would have: for a handler of its own (sched-ab's SIGALRM), async-signal-safe. */
void session_stop(int sig);
bool session_stopping(void);
/* The signal that asked the stop (SIGINT, SIGTERM, ...), 0 if none did. */
int session_stop_signal(void);

struct run_limits {
	double interval_s;	/* length of an interval */
	long count;		/* intervals, 0 = unlimited */
	double duration_s;	/* 0 = unlimited */
	int stop_fd;		/* > 0: also end once it is readable (a pidfd: the process ended),
				 * after the disk cfg->dev names has gone quiet */
	pid_t stop_pid;		/* > 0: stop_fd is -p's process: its end is said, one line */
	/* called once stop_fd is readable, before the disk settles (sched-ab ends what the
	 * load left running there, whose I/O would keep the disk from going quiet) */
	void (*fd_ended)(void *arg);
	void *fd_ended_arg;
};

/*
 * The first interval starts now: what the layers recorded while attaching, one after another,
 * is put aside, so that no layer counts a longer window than another. session_run does it
 * first when it has not been done; a command whose "ready" line, or whose load, must come
 * after it (or its I/O would be dropped with the rest) calls it before. 0, or 1 with one line
 * said and every layer detached.
 */
int session_begin(struct session *s);

/* Receives each interval; 0 to go on, -1 to stop (a closed pipe: quietly), 1 on error. */
typedef int (*session_sink)(const struct interval *iv, void *arg);

/*
 * snoop: receives each slow request, and NULL after each read of the ring buffer (at least every
 * 100 ms: flush what was written, and see whether the reader is still there); 0 to go on, -1 to
 * stop (a closed pipe: quietly), 1 on error.
 */
typedef int (*session_req_sink)(const struct req_rec *r, void *arg);

/*
 * With cfg->snoop: hand every record of the ring buffer, decoded, to fn, while session_run
 * waits between intervals and, at the end, before the last interval (whose drops count the
 * records the ring buffer had no room for). 0, or -1 with one line said.
 */
int session_snoop(struct session *s, session_req_sink fn, void *arg);

/*
 * Interval after interval until a signal, lim->count, lim->duration_s or lim->stop_fd, the last
 * one from session_finish: one final interval, partial if cut short. 0, or 1 on an error said.
 */
int session_run(struct session *s, const struct run_limits *lim, session_sink sink, void *arg);
/* Did lim->stop_fd end the last session_run (no signal, count or duration first)? */
bool session_ended_by_fd(const struct session *s);
/* Ended so, did the disk go quiet within SESSION_SETTLE_S of it? (false: it kept on
 * completing requests: writeback, or someone else's) */
#define SESSION_SETTLE_S	5
bool session_disk_settled(const struct session *s);

#endif
