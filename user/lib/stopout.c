// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "outfile.h"
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

/* The stops so far read (one after wakes the poll). None: wait for ever; one: the grace;
 * more: not at all. */
static int stop_wait(void *arg)
{
	char drain[64];

	(void)arg;
	while (read(stop_pipe[0], drain, sizeof(drain)) > 0)
		;
	return !stops ? -1 : stops == 1 ? STOPOUT_GRACE_MS : 0;
}

/* Short, errno ECANCELED, when stdout had no room for the grace after a stop, or at a second. */
static ssize_t stdout_write(void *cookie, const char *p, size_t n)
{
	size_t done = fd_write_polled(STDOUT_FILENO, p, n, stop_pipe[0], stop_wait, NULL);

	(void)cookie;
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
