// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A command run beside the tracer (spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "spawn.h"
#include "sysinfo.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* In the child, before exec: what the parent changed back to the defaults; its files. */
static void child_setup(int out_fd)
{
	int nul = open("/dev/null", O_RDONLY);
	sigset_t none;

	if (nul >= 0 && nul != STDIN_FILENO) {
		dup2(nul, STDIN_FILENO);
		close(nul);
	}
	if (out_fd >= 0) {
		dup2(out_fd, STDOUT_FILENO);
		dup2(out_fd, STDERR_FILENO);
		if (out_fd > STDERR_FILENO)
			close(out_fd);
	}

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);	/* an ignored signal stays ignored across exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

int child_start(char *const argv[], int out_fd, struct child *c, char *why, size_t len)
{
	int pfd[2], err = 0;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	c->pidfd = -1;
	/* exec closes the pipe's write end: a read of 0 bytes says it ran, an int says why not */
	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!c->pid) {
		close(pfd[0]);
		child_setup(out_fd);
		execvp(argv[0], argv);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	setpgid(c->pid, c->pid);	/* both sides: whichever runs first */
	while ((n = read(pfd[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n > 0) {
		waitpid(c->pid, &c->status, 0);
		c->reaped = true;
		snprintf(why, len, "cannot run '%s': %s", argv[0], strerror(err));
		return -1;
	}
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	/* fd 0 cannot stand for "none" in run_limits.stop_fd: keep it above stdio */
	if (c->pidfd >= 0 && c->pidfd < 3) {
		int fd = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);

		close(c->pidfd);
		c->pidfd = fd;
	}
	return 0;
}

static bool reap(struct child *c, int options)
{
	pid_t r;

	if (c->reaped)
		return true;
	while ((r = waitpid(c->pid, &c->status, options)) < 0 && errno == EINTR)
		;
	if (r == c->pid) {
		c->reaped = true;
		if (c->pidfd >= 0)
			close(c->pidfd);
		c->pidfd = -1;
	}
	return c->reaped;
}

bool child_ended(struct child *c)
{
	return reap(c, WNOHANG);
}

bool child_stop(struct child *c, int grace_ms)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)grace_ms * 1000000;
	bool ran = !child_ended(c);

	if (ran) {
		kill(-c->pid, SIGTERM);
		while (!child_ended(c) && clock_ns(CLOCK_MONOTONIC) < end)
			usleep(10000);
	}
	/* the group too, even when the command ended by itself: what it started in the
	 * background may outlive it */
	kill(-c->pid, SIGKILL);
	reap(c, 0);
	return ran;
}

bool child_ok(const struct child *c)
{
	return c->reaped && WIFEXITED(c->status) && !WEXITSTATUS(c->status);
}

const char *child_status(const struct child *c, char *buf, size_t len)
{
	if (!c->reaped)
		snprintf(buf, len, "still running");
	else if (WIFEXITED(c->status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(c->status));
	else if (WIFSIGNALED(c->status))
		snprintf(buf, len, "killed by %s", sigabbrev_np(WTERMSIG(c->status)) ?: "a signal");
	else
		snprintf(buf, len, "ended (status 0x%x)", c->status);
	return buf;
}

/* A file that can be run: executable and not a directory (access(X_OK) is true for one). */
static bool runnable(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

bool path_lookup(const char *name, char *out, size_t len)
{
	char *env, *dir, *save = NULL;
	bool found = false;

	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return runnable(name);
	}
	env = getenv("PATH");
	if (!env || !(env = strdup(env)))
		return false;
	for (dir = strtok_r(env, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *dir ? dir : ".", name);
		found = runnable(out);
	}
	free(env);
	return found;
}

const char *load_binary(void)
{
	static char path[PATH_MAX + 16];
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/iostrata-load", self);
			if (!access(path, X_OK))
				return path;
		}
	}
	return path_lookup("iostrata-load", path, sizeof(path)) ? path : NULL;
}
