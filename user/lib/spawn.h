/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A command run beside the tracer (sched-ab's load): in its own process group and its own
 * cgroup v2, so that it and whatever it starts are stopped together, even what left the group
 * (setsid, a daemon), with a pidfd to notice at once when it ends. It is killed if we are.
 */
#ifndef IOSTRATA_SPAWN_H
#define IOSTRATA_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct child {
	pid_t pid;		/* also its process group */
	int pidfd;		/* readable once it has ended; -1 where the kernel has no pidfd */
	int status;		/* waitpid's, once reaped */
	bool reaped;
	int cg_fd;		/* its cgroup's directory; -1: it runs in ours (cg_path says why) */
	char cg_path[4096];	/* that cgroup, or why it has none of its own */
};

/*
 * Start argv (argv[0] searched in PATH) with the signals at their defaults, stdin /dev/null,
 * stdout and stderr to out_fd (-1: ours). 0, or -1 with why: a command that cannot be run
 * (not found, not executable) is known before this returns.
 */
int child_start(char *const argv[], int out_fd, struct child *c, char *why, size_t len);
/*
 * Before the first child_start: what the loads of earlier runs that were killed (SIGKILL, which
 * nothing can catch) left running in their cgroups beside ours is killed and said, and those
 * cgroups removed: those no live run holds locked (see spawn.c).
 */
void child_sweep(void);
/* How many processes of its process group still run, zombies aside: in its cgroup, or, without
 * one, anywhere (a /proc scan). */
int child_group_running(const struct child *c);
/*
 * What runs in its cgroup (after it ended, or was stopped) killed at once and waited for, for
 * at most a few seconds: how many processes were there (-1 when it has no cgroup of its own,
 * nothing done); *gone: none is left.
 */
int child_end_rest(struct child *c, bool *gone);
/* Has it ended (reaped if so)? */
bool child_ended(struct child *c);
/*
 * End it if it runs: SIGTERM to its group, SIGKILL after grace_ms; reaped. Whatever is left
 * in its group and its cgroup is killed either way, and the cgroup removed. true if it ran.
 * *gone: nothing was left in its cgroup a few seconds after the kill (true without a cgroup,
 * or when none was left to kill); false: some still ran (one in D state), the cgroup is left.
 */
bool child_stop(struct child *c, int grace_ms, bool *gone);
/* Did it end by itself with status 0? (reaped, not stopped) */
bool child_ok(const struct child *c);
/* "exited with status 1", "killed by SIGSEGV" */
const char *child_status(const struct child *c, char *buf, size_t len);

/*
 * Run argv (argv[0] a path) to its end, stdin /dev/null, and keep the first line of what it
 * writes on stdout and stderr in line ("" if nothing): its wait status (sys/wait.h), or -1 (line
 * says why) if it could not be waited for. One that could not be run exits 127, line saying why.
 */
int run_for_status(char *const argv[], char *line, size_t len);
/* name as execvp finds it (a path, or a file in PATH), executable by us; its path in out. */
bool path_lookup(const char *name, char *out, size_t len);
/* iostrata-load beside this binary (/proc/self/exe), else in PATH; NULL if neither. */
const char *load_binary(void);

#endif
