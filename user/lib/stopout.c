// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "stopout.h"

static int stop_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stops;
static int first_err;		/* the first write that failed, its errno */
static char buf[1 << 16];

void stopout_stop(void)
{
	int e = errno;

	stops++;
	if (stop_pipe[1] >= 0)
		(void)!write(stop_pipe[1], "", 1);	/* full already: it is readable */
	errno = e;
}

/*
 * n bytes of p to stdout, what poll() found room for at a time, PIPE_BUF at most (a pipe with a
 * slot free takes that without blocking). Short, errno ECANCELED, when stdout had no room for
 * the grace after a stop, or at a second one.
 */
static ssize_t stdout_write(void *cookie, const char *p, size_t n)
{
	size_t done = 0;
	char drain[64];

	(void)cookie;
	while (done < n) {
		struct pollfd f[2] = { { .fd = STDOUT_FILENO, .events = POLLOUT },
				       { .fd = stop_pipe[0], .events = POLLIN } };
		int r, wait;
		ssize_t w;

		/* the stops so far read; one after wakes the poll */
		while (read(stop_pipe[0], drain, sizeof(drain)) > 0)
			;
		wait = !stops ? -1 : stops == 1 ? STOPOUT_GRACE_MS : 0;
		r = poll(f, 2, wait);
		if (r < 0 && errno != EINTR)
			break;
		if (!r) {
			errno = ECANCELED;
			break;
		}
		/* POLLERR (a reader gone), POLLNVAL (closed): the write says which */
		if (r < 0 || !f[0].revents)
			continue;
		w = write(STDOUT_FILENO, p + done, n - done < PIPE_BUF ? n - done : PIPE_BUF);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		done += (size_t)w;
	}
	if (done < n && !first_err)
		first_err = errno ? errno : EIO;
	return done ? (ssize_t)done : -1;	/* stdio marks a short write an error */
}

int stopout_error(void)
{
	return first_err;
}

int stopout_init(void)
{
	cookie_io_functions_t io = { .write = stdout_write };
	FILE *f;

	if (stop_pipe[0] >= 0)
		return 0;
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK))
		return -1;
	f = fopencookie(NULL, "w", io);
	if (!f || setvbuf(f, buf, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, sizeof(buf))) {
		if (f)
			fclose(f);
		close(stop_pipe[0]);
		close(stop_pipe[1]);
		stop_pipe[0] = stop_pipe[1] = -1;
		return -1;
	}
	fflush(stdout);
	stdout = f;
	return 0;
}
