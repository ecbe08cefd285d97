/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Files written whole (a report, its SVGs, compare's HTML): never one the tool did not create
 * unless told --force, never anything but a regular file, never one of its inputs; each written
 * to a fresh temporary file beside it and put in place only when whole.
 */
#ifndef IOSTRATA_OUTFILE_H
#define IOSTRATA_OUTFILE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* May path be written? Absent, or (force) a regular file that is none of the n inputs.
 * 1 absent, 0 present and allowed, -1 refused with one line said. */
int outfile_allowed(const char *path, bool force, char *const *inputs, int n);
/* The directory path's file is in ("." for a bare name, "/" at the root) into dir; its name. */
const char *outfile_dir(const char *path, char *dir, size_t len);
/* Write len bytes of buf to path whole: a fresh file beside it (O_EXCL), then put in its place,
 * over an existing file only with force. 0, or -1 with one line said and nothing left behind. */
int outfile_write(const char *path, bool force, const void *buf, size_t len);

/* outfile_write in two steps, for a set of files put in place only once all are written:
 * buf in a fresh file beside path, its name in tmp (PATH_MAX + 8 bytes); then that file put at
 * path. Each 0, or -1 with one line said and the fresh file removed. */
int outfile_stage(const char *path, const void *buf, size_t len, char *tmp);
int outfile_commit(const char *tmp, const char *path, bool force);

/*
 * The stop signals (stopsig.h: SIGINT, SIGTERM, SIGHUP, SIGUSR1, ...) held off (pending, not
 * lost) until outfile_release(): around a set of files that must all be written or all undone,
 * so that a Ctrl-C lands before or after it, never between a temporary file and its rename. outfile_write() holds them itself.
 */
sigset_t outfile_hold(void);
void outfile_release(const sigset_t *was);
/*
 * All n bytes to fd while the stop signals are held (outfile_hold), waiting for room beside
 * them: 0; or -1 with errno, ECANCELED when one is pending and fd has no room (a full pipe
 * nobody reads must not keep a Ctrl-C off for ever), the signal left pending.
 */
int fd_write_held(int fd, const void *buf, size_t n);
/*
 * n bytes of buf to fd as poll() finds room, PIPE_BUF at a time (a pipe with room takes that
 * without blocking), beside stop_fd. Each wait lasts wait_ms(arg) ms (-1: for ever; called
 * again whenever stop_fd wakes it); one that ends with no room, or a wake by stop_fd when it
 * said 0, is errno ECANCELED. Returns the bytes written: fewer than n with errno.
 */
size_t fd_write_polled(int fd, const void *buf, size_t n, int stop_fd, int (*wait_ms)(void *),
		       void *arg);
/* All n bytes to fd, through EINTR and short writes: 0, or -1 with errno. */
int fd_write_all(int fd, const void *p, size_t n);

#endif
