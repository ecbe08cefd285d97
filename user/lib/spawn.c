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
#include <dirent.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/close_range.h>
#include "cgroups.h"
#include "log.h"
#include "spawn.h"
#include "sysinfo.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/*
 * A load's cgroup, "iostrata-load-PID-NS" (our pid, a CLOCK_MONOTONIC ns: unique), is flock()ed
 * by the run that made it for as long as it is in use: a later run tells a dead run's cgroup
 * (killed by SIGKILL, which nothing can catch) from a live one's by whether it can lock it,
 * whatever pid or time namespace, or /proc view, either runs in. Making one, and sweeping the
 * dead ones, is done under a lock on the parent, so that no sweep finds one made and not yet
 * locked.
 */
#define CG_PREFIX	"iostrata-load-"
#define CG_EMPTY_MS	5000	/* for the killed to exit (an I/O in flight ends first) */
#define CG_DEPTH	8	/* of cgroups a load makes under its own, followed */

/* /proc/PID/stat in buf, from the ") " after the command (which may hold spaces and
 * parentheses): its fields from the state on; NULL if the process is gone. */
static const char *proc_stat(long pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strrchr(buf, ')');
}

/* Our own cgroup v2 directory ("/sys/fs/cgroup/user.slice/..."): 0, or -1 with why. */
static int own_cgroup(char *buf, size_t len)
{
	char mnt[PATH_MAX], line[PATH_MAX];
	FILE *f;
	int found = -1;

	cgroup2_mount(mnt, sizeof(mnt));
	if (!mnt[0]) {
		snprintf(buf, len, "no cgroup2 hierarchy is mounted");
		return -1;
	}
	if (!(f = fopen("/proc/self/cgroup", "r"))) {
		snprintf(buf, len, "/proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	while (found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::/", 4)) {
			line[strcspn(line, "\n")] = '\0';
			if ((size_t)snprintf(buf, len, "%s%s", mnt,
					     strcmp(line + 3, "/") ? line + 3 : "") < len)
				found = 0;
			else
				snprintf(buf, len, "our cgroup's path is too long");
		}
	fclose(f);
	if (found)
		snprintf(buf, len, "not in a cgroup v2 (/proc/self/cgroup has no 0:: line)");
	return found;
}

/* Does cgroup.events say "populated 1" (a process in it or below)? (true if unreadable) */
static bool cgroup_populated(int cg_fd)
{
	int fd = openat(cg_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	char buf[256];
	ssize_t r = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (r <= 0)
		return true;
	buf[r] = '\0';
	return !strstr(buf, "populated 0");
}

/*
 * Calls fn(pid, arg) for each process in the cgroup and the cgroups below it (a load may make
 * its own), CG_DEPTH deep: how many there were.
 */
static int cgroup_each(int cg_fd, int depth, void (*fn)(long pid, void *arg), void *arg)
{
	int fd = openat(cg_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC), n = 0, sub;
	struct dirent *e;
	char line[32];
	FILE *f;
	DIR *d;

	if (fd >= 0 && (f = fdopen(fd, "r"))) {
		while (fgets(line, sizeof(line), f)) {
			n++;
			if (fn)
				fn(strtol(line, NULL, 10), arg);
		}
		fclose(f);
	} else if (fd >= 0) {
		close(fd);
	}
	if (depth >= CG_DEPTH || (fd = openat(cg_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return n;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return n;
	}
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
		    (sub = openat(cg_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			n += cgroup_each(sub, depth + 1, fn, arg);
			close(sub);
		}
	closedir(d);
	return n;
}

/* The cgroup name under dir_fd and those below it removed, the deepest first (rmdir: only
 * empty ones go). */
static void cgroup_rmdir(int dir_fd, const char *name, int depth)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC), sub;
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return;
	if (depth < CG_DEPTH && (sub = dup(fd)) >= 0) {
		if ((d = fdopendir(sub))) {
			while ((e = readdir(d)))
				if (e->d_type == DT_DIR && e->d_name[0] != '.')
					cgroup_rmdir(fd, e->d_name, depth + 1);
			closedir(d);
		} else {
			close(sub);
		}
	}
	close(fd);
	unlinkat(dir_fd, name, AT_REMOVEDIR);
}

/*
 * Everything in the cgroup and below killed at once (cgroup.kill) and waited for, CG_EMPTY_MS
 * at most: true once it is empty.
 */
static bool cgroup_kill(int cg_fd)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + CG_EMPTY_MS * 1000000ULL;
	int fd = openat(cg_fd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
	bool sent;

	if (fd < 0)
		return !cgroup_populated(cg_fd);
	sent = write(fd, "1", 1) == 1;
	close(fd);
	while (sent && cgroup_populated(cg_fd) && clock_ns(CLOCK_MONOTONIC) < end)
		usleep(5000);
	return !cgroup_populated(cg_fd);
}

void child_sweep(void)
{
	char parent[PATH_MAX];
	struct dirent *e;
	int pfd, fd, n;
	DIR *d;

	if (own_cgroup(parent, sizeof(parent)) ||
	    (pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if (flock(pfd, LOCK_EX) || !(d = opendir(parent))) {
		close(pfd);
		return;
	}
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, CG_PREFIX, strlen(CG_PREFIX)) ||
		    (fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB)) {	/* a live run's */
			close(fd);
			continue;
		}
		if ((n = cgroup_each(fd, 0, NULL, NULL)) > 0 || cgroup_populated(fd)) {
			char count[32] = "";

			if (n > 0)	/* else cgroup.procs could not be read */
				snprintf(count, sizeof(count), " (%d process%s)", n,
					 n == 1 ? "" : "es");
			if (cgroup_kill(fd))
				warnf("killed what the load of an earlier run, itself killed, left "
				      "running in %s/%s%s", parent, e->d_name, count);
			else
				warnf("%s/%s, the cgroup of an earlier run's load, still has processes "
				      "%d s after they were killed", parent, e->d_name,
				      CG_EMPTY_MS / 1000);
		}
		close(fd);
		cgroup_rmdir(pfd, e->d_name, 0);
	}
	closedir(d);
	close(pfd);	/* and its lock */
}

/*
 * A cgroup of its own for the command, under ours (so that what it uses is still accounted to
 * whatever runs us), with cgroup.kill (Linux 5.14) to end all of it at once: c->cg_fd and
 * c->cg_path, and cgroup.procs open to join it; -1 when there is none (c->cg_path says why,
 * and the command runs in our cgroup, its process group alone stopped).
 */
static int cgroup_make(struct child *c)
{
	char parent[PATH_MAX];
	int pfd, procs = -1, err;

	c->cg_fd = -1;
	if (own_cgroup(parent, sizeof(parent))) {
		snprintf(c->cg_path, sizeof(c->cg_path), "%s", parent);
		return -1;
	}
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || flock(pfd, LOCK_EX)) {
		err = errno;
		snprintf(c->cg_path, sizeof(c->cg_path), "cannot lock %.3000s: %s", parent,
			 strerror(err));
		if (pfd >= 0)
			close(pfd);
		return -1;
	}
	if ((size_t)snprintf(c->cg_path, sizeof(c->cg_path), "%s/" CG_PREFIX "%d-%llu", parent,
			     (int)getpid(), (unsigned long long)clock_ns(CLOCK_MONOTONIC)) >=
	    sizeof(c->cg_path)) {
		snprintf(c->cg_path, sizeof(c->cg_path), "our cgroup's path is too long");
	} else if (mkdir(c->cg_path, 0755)) {
		err = errno;
		snprintf(c->cg_path, sizeof(c->cg_path), "cannot make a cgroup in %.3000s: %s",
			 parent, strerror(err));
	} else if ((c->cg_fd = open(c->cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
		   flock(c->cg_fd, LOCK_EX | LOCK_NB)) {
		err = errno;
		rmdir(c->cg_path);
		snprintf(c->cg_path, sizeof(c->cg_path), "cannot open and lock the cgroup it made: "
			 "%s", strerror(err));
	} else if (faccessat(c->cg_fd, "cgroup.kill", W_OK, 0)) {
		err = errno;
		snprintf(c->cg_path, sizeof(c->cg_path), "%s", err == ENOENT ?
			 "the kernel's cgroups have no cgroup.kill (Linux 5.14)" : strerror(err));
	} else if ((procs = openat(c->cg_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0) {
		err = errno;
		snprintf(c->cg_path, sizeof(c->cg_path), "cannot open its cgroup.procs: %s",
			 strerror(err));
	}
	if (procs < 0 && c->cg_fd >= 0) {
		close(c->cg_fd);
		c->cg_fd = -1;
		rmdir(c->cg_path);
	}
	close(pfd);	/* and the parent's lock: the cgroup is locked, or gone */
	return procs;
}

/* Its cgroup removed, with those the command made below it. */
static void cgroup_remove(struct child *c)
{
	if (c->cg_fd < 0)
		return;
	close(c->cg_fd);
	c->cg_fd = -1;
	cgroup_rmdir(AT_FDCWD, c->cg_path, 0);	/* an absolute path: AT_FDCWD unused */
}

struct in_group {
	pid_t pgid;
	int n;
};

static void count_in_group(long pid, void *arg)
{
	struct in_group *g = arg;
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	long pgrp;
	char state;

	/* ") STATE PPID PGRP"; a zombie (the command itself, not reaped yet) runs no more */
	if (p && sscanf(p + 1, " %c %*d %ld", &state, &pgrp) == 2 && pgrp == g->pgid &&
	    state != 'Z')
		g->n++;
}

/* Each process of the system (a /proc scan): for a load without a cgroup of its own. */
static void each_process(void (*fn)(long pid, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long pid;

	while (d && (e = readdir(d)))
		if ((pid = strtol(e->d_name, NULL, 10)) > 0)
			fn(pid, arg);
	if (d)
		closedir(d);
}

int child_group_running(const struct child *c)
{
	struct in_group g = { .pgid = c->pid };

	if (c->cg_fd >= 0)
		cgroup_each(c->cg_fd, 0, count_in_group, &g);
	else
		each_process(count_in_group, &g);
	return g.n;
}

int child_end_rest(struct child *c, bool *gone)
{
	int n;

	*gone = true;
	if (c->cg_fd < 0)
		return -1;
	if ((n = cgroup_each(c->cg_fd, 0, NULL, NULL)) <= 0 && !cgroup_populated(c->cg_fd))
		return 0;
	*gone = cgroup_kill(c->cg_fd);
	return n;
}

/* What the child says on the pipe before exec closes it: a step that failed, and errno. */
enum { STEP_JOIN = 1, STEP_EXEC };

/* In the child, before exec: what the parent changed back to the defaults; its files; killed
 * with its parent (a parent that dies by SIGKILL cannot stop it); in its cgroup. */
static void child_setup(int out_fd, pid_t parent, int cg_procs, int say)
{
	int nul = open("/dev/null", O_RDONLY), msg[2] = { STEP_JOIN, 0 };
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
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)	/* it died before the line above */
		_exit(127);
	if (cg_procs >= 0 && write(cg_procs, "0", 1) != 1) {
		msg[1] = errno;
		if (write(say, msg, sizeof(msg)) < 0)
			_exit(127);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);	/* an ignored signal stays ignored across exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

int child_start(char *const argv[], int out_fd, struct child *c, char *why, size_t len)
{
	int pfd[2], msg[2], procs, exec_err = 0;
	pid_t parent = getpid();
	ssize_t n;

	memset(c, 0, sizeof(*c));
	c->pidfd = -1;
	c->cg_fd = -1;
	/* exec closes the pipe's write end: a read of 0 bytes says it ran; each step that failed
	 * before says so */
	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	procs = cgroup_make(c);
	c->pid = fork();
	if (c->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		if (procs >= 0)
			close(procs);
		cgroup_remove(c);
		return -1;
	}
	if (!c->pid) {
		close(pfd[0]);
		child_setup(out_fd, parent, procs, pfd[1]);
		execvp(argv[0], argv);
		msg[0] = STEP_EXEC;
		msg[1] = errno;
		if (write(pfd[1], msg, sizeof(msg)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	if (procs >= 0)
		close(procs);
	setpgid(c->pid, c->pid);	/* both sides: whichever runs first */
	while ((n = read(pfd[0], msg, sizeof(msg))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(msg))
			break;
		if (msg[0] == STEP_EXEC) {
			exec_err = msg[1];
		} else {	/* it runs in ours: stopped by its process group alone */
			cgroup_remove(c);
			snprintf(c->cg_path, sizeof(c->cg_path), "cannot join a cgroup of its own: %s",
				 strerror(msg[1]));
		}
	}
	close(pfd[0]);
	if (exec_err) {
		waitpid(c->pid, &c->status, 0);
		c->reaped = true;
		cgroup_remove(c);
		snprintf(why, len, "cannot run '%s': %s", argv[0], strerror(exec_err));
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

bool child_stop(struct child *c, int grace_ms, bool *gone)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)grace_ms * 1000000;
	bool ran = !child_ended(c);

	if (ran) {
		kill(-c->pid, SIGTERM);
		while (!child_ended(c) && clock_ns(CLOCK_MONOTONIC) < end)
			usleep(10000);
	}
	/* the group and the cgroup too, even when the command ended by itself: what it started
	 * in the background may outlive it */
	kill(-c->pid, SIGKILL);
	reap(c, 0);
	*gone = c->cg_fd < 0 || cgroup_kill(c->cg_fd);
	cgroup_remove(c);
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

int run_for_status(char *const argv[], char *line, size_t len)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, was;
	size_t used = 0;
	char buf[512];
	int pfd[2], st, fd;
	ssize_t n;
	pid_t pid;

	line[0] = '\0';
	/* reaped by us: a SIGCHLD we were started ignoring would have the kernel reap it */
	sigaction(SIGCHLD, &dfl, &was);
	if (pipe2(pfd, O_CLOEXEC) || (pid = fork()) < 0) {
		snprintf(line, len, "cannot run %s: %s", argv[0], strerror(errno));
		sigaction(SIGCHLD, &was, NULL);
		return -1;
	}
	if (!pid) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 || dup2(pfd[1], STDOUT_FILENO) < 0 ||
		    dup2(pfd[1], STDERR_FILENO) < 0)
			_exit(127);
		/* nothing of ours but those three (where the kernel can say so) */
		syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
		execv(argv[0], argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	/* read to the end (a child blocked on a full pipe would never exit), keep the start */
	while ((n = read(pfd[0], buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (used + 1 < len) {
			size_t k = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;

			memcpy(line + used, buf, k);
			used += k;
			line[used] = '\0';
		}
	}
	close(pfd[0]);
	line[strcspn(line, "\n")] = '\0';
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(line, len, "waiting for %s: %s", argv[0], strerror(errno));
			sigaction(SIGCHLD, &was, NULL);
			return -1;
		}
	sigaction(SIGCHLD, &was, NULL);
	return st;
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
