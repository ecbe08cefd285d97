// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include "log.h"
#include "outfile.h"
#include "stopsig.h"

/*
 * Can a file be made beside path (its directory there, writable)? Asked before anything is
 * read, so that compare's page, written after its answer is out, is not found impossible
 * only then. false with one line said.
 */
const char *outfile_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else
		snprintf(dir, len, "%.*s", (int)(slash == path ? 1 : slash - path), path);
	return slash ? slash + 1 : path;
}

static bool dir_writable(const char *path)
{
	char dir[PATH_MAX];

	outfile_dir(path, dir, sizeof(dir));
	if (access(dir, W_OK | X_OK)) {
		errorf("cannot create %s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

int outfile_allowed(const char *path, bool force, char *const *inputs, int n)
{
	struct stat o, in;
	int i;

	if (lstat(path, &o)) {
		if (errno == ENOENT)
			return dir_writable(path) ? 1 : -1;
		errorf("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(o.st_mode)) {
		errorf("%s exists and is not a regular file: choose another name", path);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!stat(inputs[i], &in) && in.st_dev == o.st_dev && in.st_ino == o.st_ino) {
			errorf("%s is also an input: choose another name", path);
			return -1;
		}
	if (!force) {
		errorf("%s exists: choose another name, or --force to overwrite it", path);
		return -1;
	}
	return 0;
}

int fd_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

size_t fd_write_polled(int fd, const void *buf, size_t n, int stop_fd, int (*wait_ms)(void *),
		       void *arg)
{
	const char *p = buf;
	size_t done = 0;

	while (done < n) {
		struct pollfd f[2] = { { .fd = fd, .events = POLLOUT },
				       { .fd = stop_fd, .events = POLLIN } };
		int wait = wait_ms(arg), r = poll(f, 2, wait);
		ssize_t w;

		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!f[0].revents) {	/* stop_fd woke it: the next wait_ms() says how long now */
			if (!r || !wait) {
				errno = ECANCELED;
				break;
			}
			continue;
		}
		/* POLLOUT: a pipe takes PIPE_BUF without blocking; POLLERR, POLLNVAL: the error */
		w = write(fd, p + done, n - done < PIPE_BUF ? n - done : PIPE_BUF);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		done += (size_t)w;
	}
	return done;
}

/* a stop held pending (the signalfd readable): no more waiting; else for ever */
static int held_wait(void *arg)
{
	struct pollfd q = { .fd = *(int *)arg, .events = POLLIN };

	return poll(&q, 1, 0) > 0 ? 0 : -1;
}

int fd_write_held(int fd, const void *buf, size_t n)
{
	sigset_t stop;
	int sfd, e;
	size_t done;

	stop_signals_set(&stop);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);	/* a held one: readable */
	if (sfd < 0)
		return -1;
	done = fd_write_polled(fd, buf, n, sfd, held_wait, &sfd);
	e = errno;
	close(sfd);
	errno = e;
	return done < n ? -1 : 0;
}

/* tmp in path's place: over a regular file only with force, never over a file made meanwhile */
static int put_in_place(const char *tmp, const char *path, bool force)
{
	struct stat st;

	if (force) {
		if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
			errno = EEXIST;
			return -1;
		}
		return rename(tmp, path);
	}
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a filesystem without RENAME_NOREPLACE: a hard link fails just as well on EEXIST */
	if (link(tmp, path))
		return -1;
	unlink(tmp);
	return 0;
}

sigset_t outfile_hold(void)
{
	sigset_t stop, was;

	stop_signals_set(&stop);	/* any of them, default or caught, ends the command */
	sigprocmask(SIG_BLOCK, &stop, &was);
	return was;
}

void outfile_release(const sigset_t *was)
{
	sigprocmask(SIG_SETMASK, was, NULL);
}

static int write_file(const char *path, bool force, const void *buf, size_t len);

int outfile_write(const char *path, bool force, const void *buf, size_t len)
{
	sigset_t was = outfile_hold();	/* no temporary file left behind by a Ctrl-C */
	int err = write_file(path, force, buf, len);

	outfile_release(&was);
	return err;
}

/*
 * buf, whole, in a fresh file beside path (its name in tmp, PATH_MAX + 8 bytes), not yet in
 * place. 0, or -1 with one line said and nothing left behind.
 */
int outfile_stage(const char *path, const void *buf, size_t len, char *tmp)
{
	mode_t mask;
	int fd, err;

	const char *base = strrchr(path, '/');
	size_t dirlen = base ? (size_t)(base + 1 - path) : 0;

	base = path + dirlen;
	/* NAME.XXXXXX, or where that would pass NAME_MAX a shorter name in the same directory */
	if ((strlen(base) + 7 > NAME_MAX ?
	     (size_t)snprintf(tmp, PATH_MAX + 8, "%.*s.iostrata-XXXXXX", (int)dirlen, path) :
	     (size_t)snprintf(tmp, PATH_MAX + 8, "%s.XXXXXX", path)) >= PATH_MAX + 8) {
		errorf("cannot create %s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	fd = mkstemp(tmp);	/* O_CREAT | O_EXCL: never a file that was there, nor a link's target */
	if (fd < 0) {
		errorf("cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	mask = umask(0);
	umask(mask);
	err = fchmod(fd, 0666 & ~mask) || fd_write_all(fd, buf, len);
	if (close(fd))
		err = 1;
	if (err) {
		errorf("writing %s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* A staged file put at path (over an existing one only with force), or removed on failure. */
int outfile_commit(const char *tmp, const char *path, bool force)
{
	if (put_in_place(tmp, path, force)) {
		if (errno == EEXIST)
			errorf("%s exists%s: choose another name", path,
			       force ? " and is not a regular file" : ", made while writing it");
		else
			errorf("writing %s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int write_file(const char *path, bool force, const void *buf, size_t len)
{
	char tmp[PATH_MAX + 8];

	return outfile_stage(path, buf, len, tmp) || outfile_commit(tmp, path, force) ? -1 : 0;
}
