// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of serve's --user lookup (user/lib/privs.c), which reads passwd by hand (a static
 * binary has no NSS): empty fields are fields, a malformed uid or gid is refused rather than
 * read as 0 (root), and an over-long line's tail is not taken for an entry. No root needed.
 * Exits non-zero on any failed check; the last line is "N passed, N failed". As root, `window`
 * and `race` check the uid change leaves no moment another process of the new uid can attach in.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "log.h"
#include "privs.h"

#include "check.h"

/* log.c's, without libbpf: what the lookup says goes to stderr */
void errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *passwd_file(void)
{
	static char path[] = "/tmp/iostrata-test-passwd-XXXXXX";
	char gecos[2000];
	FILE *f;
	int fd = mkstemp(path);

	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		perror("passwd file");
		exit(2);
	}
	memset(gecos, 'g', sizeof(gecos) - 1);
	gecos[sizeof(gecos) - 1] = '\0';
	fputs("root:x:0:0:root:/root:/bin/bash\n", f);
	fputs("svc::1001:1001::/home/svc:/bin/sh\n", f);	/* empty password and GECOS */
	fputs("odd:x:1002:abc:odd:/:/bin/sh\n", f);		/* a gid that is no number */
	fputs("neg:x:-5:7:neg:/:/bin/sh\n", f);
	fputs("short:x:1003:1003\n", f);			/* not the 7 fields of an entry */
	/* a line longer than the reader's buffer, whose tail looks like an entry */
	fprintf(f, "long:x:1004:1004:%s:evil:x:0:0:/:/bin/sh\n", gecos);
	fputs("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", f);
	fclose(f);
	return path;
}

/* The racer's account of an attach: when, and what the target was doing (its /proc stat). */
static void say_attached(pid_t target, const struct timespec *t0)
{
	char path[64], stat[128] = "";
	struct timespec t1;
	FILE *f;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)target);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = '\0';
		fclose(f);
	}
	stat[strcspn(stat, "\n")] = '\0';
	fprintf(stderr, "attached %ld us after the go: %.60s\n",
		((t1.tv_sec - t0->tv_sec) * 1000000000L + t1.tv_nsec - t0->tv_nsec) / 1000, stat);
}

/*
 * test_privs window UID [control|as-user|as-user-and-group] (root, with fs.suid_dumpable 1): a
 * child drops to UID with drop_privileges() (with "control": by setresuid alone, then
 * PR_SET_DUMPABLE 0; with "as-user": from a start as UID already, with gid 0 and every
 * capability, dumpable as an exec with ambient capabilities leaves it; "as-user-and-group":
 * so, with UID's gid too, open to the probe from the start), stopped by
 * this process at every system call's entry and exit (PTRACE_SYSCALL). At each stop a probe
 * of UID that holds every capability in its permitted set, none effective, asks for one of the
 * child's file descriptors (pidfd_getfd, PTRACE_MODE_ATTACH_REALCREDS). The kernel lets it
 * through exactly when the child's uids and gids are all UID's and the child is dumpable: the
 * state in which a racer of UID, whose permitted set is empty, passes ptrace's uid check
 * and reads the child dumpable, then, the child's capabilities cleared by the time it looks,
 * passes the capability check too. Prints in how many of the stops from the drop's first
 * system call on (the child marks its start with getppid) the probe got through: any but 0 is
 * such a moment, but for the entry of the drop's first system call when the child starts open.
 * Stepping by system call sees every state: the ids and the dumpable flag change only inside
 * them.
 */
static int window(uid_t uid, const char *mode)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct all[2];
	bool control = !strcmp(mode, "control"), counting = false, marked = false;
	struct __ptrace_syscall_info info;
	int ask[2], ans[2], st, stops = 0, open = 0, bad = 0;
	pid_t target, probe;
	char c;

	if (pipe(ask) || pipe(ans))
		return 2;
	signal(SIGPIPE, SIG_IGN);	/* a probe gone: write() fails, read() ends, said below */
	probe = fork();
	if (!probe) {
		pid_t pid;
		int pidfd, fd;

		close(ask[1]);
		close(ans[0]);
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(4);
		while (read(ask[0], &pid, sizeof(pid)) == sizeof(pid)) {
			pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
			fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, 1, 0);
			c = pidfd < 0 ? 'e' : fd >= 0 || errno == EBADF ? 'y' : errno == EPERM ?
			    'n' : 'e';
			if (fd >= 0)
				close(fd);
			if (pidfd >= 0)
				close(pidfd);
			if (write(ans[1], &c, 1) != 1)
				_exit(4);
		}
		_exit(0);
	}
	close(ask[0]);
	close(ans[1]);
	target = fork();
	if (!target) {
		close(ask[1]);
		close(ans[0]);
		gid_t g = strcmp(mode, "as-user-and-group") ? 0 : (gid_t)uid;

		if (!strncmp(mode, "as-user", 7) &&
		    (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setresgid(g, g, g) ||
		     setresuid(uid, uid, uid) || syscall(SYS_capget, &h, all) ||
		     (all[0].effective = all[0].permitted, all[1].effective = all[1].permitted,
		      syscall(SYS_capset, &h, all)) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)))
			_exit(3);
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) || raise(SIGSTOP))
			_exit(3);
		(void)getppid();	/* the drop starts after this */
		if (control) {
			if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ||
			    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
				_exit(3);
		} else if (drop_privileges(uid, uid)) {
			_exit(3);
		}
		_exit(0);
	}
	if (waitpid(target, &st, 0) != target || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, target, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL))
		return 2;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, target, 0, 0) || waitpid(target, &st, 0) != target)
			return 2;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
			break;
		}
		if (WSTOPSIG(st) != (SIGTRAP | 0x80))
			continue;
		if (!counting) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, target, sizeof(info), &info) <= 0)
				return 2;
			if (info.op == PTRACE_SYSCALL_INFO_ENTRY)
				marked = info.entry.nr == SYS_getppid;
			else
				counting = marked;
			continue;
		}
		stops++;
		if (write(ask[1], &target, sizeof(target)) != sizeof(target) ||
		    read(ans[0], &c, 1) != 1)
			return 2;
		open += c == 'y';
		bad += c == 'e';
	}
	close(ask[1]);
	waitpid(probe, &st, 0);
	bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("%s: open to the probe in %d of %d system call stops (%d probes failed)\n",
	       control ? "control" : !strcmp(mode, "as-user") ? "drop_privileges as the user" :
	       !strcmp(mode, "as-user-and-group") ? "drop_privileges as the user and group" :
	       "drop_privileges", open, stops, bad);
	return bad ? 2 : 0;
}

/*
 * test_privs race N UID (root, with fs.suid_dumpable 1, which the caller sets and restores): N
 * times, a process drops to UID with drop_privileges() while another, already UID, tries
 * PTRACE_SEIZE on it without pause for 100 ms. Prints how many attached. With "control", the
 * first drops by setresuid alone and becomes undumpable 2 ms later: the window a racer must
 * find, which shows it can.
 */
static int race(int n, uid_t uid, bool control)
{
	int won = 0, bad = 0, t, go[2], st;
	pid_t target, racer;
	struct timespec t0, t1;
	char c;

	for (t = 0; t < n; t++) {
		if (pipe(go))
			return 2;
		target = fork();
		if (!target) {
			if (read(go[0], &c, 1) != 1)
				_exit(3);
			usleep(200);
			if (control) {
				if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
					_exit(3);
				usleep(2000);
				prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			} else if (drop_privileges(uid, uid)) {
				_exit(3);
			}
			usleep(150 * 1000);
			_exit(0);
		}
		racer = fork();
		if (!racer) {
			if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ||
			    write(go[1], "x", 1) != 1)
				_exit(4);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (;;) {
				if (!ptrace(PTRACE_SEIZE, target, 0, 0)) {
					say_attached(target, &t0);
					_exit(0);
				}
				clock_gettime(CLOCK_MONOTONIC, &t1);
				if ((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec >
				    100 * 1000000L)
					_exit(1);
			}
		}
		waitpid(racer, &st, 0);		/* its exit detaches it */
		won += WIFEXITED(st) && WEXITSTATUS(st) == 0;
		bad += !WIFEXITED(st) || WEXITSTATUS(st) > 1;
		waitpid(target, &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		close(go[0]);
		close(go[1]);
	}
	printf("%s: attached in %d of %d drops (%d processes failed)\n",
	       control ? "control" : "drop_privileges", won, n, bad);
	return bad ? 2 : 0;
}

int main(int argc, char **argv)
{
	const char *pw;
	uid_t uid = 99;
	gid_t gid = 99;
	int r;

	if (argc >= 3 && !strcmp(argv[1], "window"))
		return window((uid_t)atoi(argv[2]), argc > 3 ? argv[3] : "drop");
	if (argc >= 4 && !strcmp(argv[1], "race"))
		return race(atoi(argv[2]), (uid_t)atoi(argv[3]), argc > 4 &&
			    !strcmp(argv[4], "control"));
	pw = passwd_file();
	r = user_lookup_in(pw, "svc", &uid, &gid);
	CHECK(r == 0 && uid == 1001 && gid == 1001, "svc: r %d uid %u gid %u", r, uid, gid);
	r = user_lookup_in(pw, "nobody", &uid, &gid);
	CHECK(r == 0 && uid == 65534 && gid == 65534, "nobody: r %d uid %u gid %u", r, uid, gid);
	r = user_lookup_in(pw, "65534", &uid, &gid);
	CHECK(r == 0 && uid == 65534 && gid == 65534, "65534: r %d uid %u gid %u", r, uid, gid);
	r = user_lookup_in(pw, "4242", &uid, &gid);	/* no entry: the number for both */
	CHECK(r == 0 && uid == 4242 && gid == 4242, "4242: r %d uid %u gid %u", r, uid, gid);
	CHECK(user_lookup_in(pw, "odd", &uid, &gid) == -1, "odd: a gid 'abc' was accepted");
	CHECK(user_lookup_in(pw, "neg", &uid, &gid) == -1, "neg: a uid '-5' was accepted");
	CHECK(user_lookup_in(pw, "short", &uid, &gid) == -1, "short: a 4-field line was an entry");
	CHECK(user_lookup_in(pw, "evil", &uid, &gid) == -1, "evil: a line's tail was an entry");
	r = user_lookup_in(pw, "long", &uid, &gid);
	CHECK(r == 0 && uid == 1004 && gid == 1004, "long: r %d uid %u gid %u", r, uid, gid);
	CHECK(user_lookup_in(pw, "nosuch", &uid, &gid) == -1, "nosuch: found");
	CHECK(user_lookup_in(pw, "", &uid, &gid) == -1, "'': found");
	CHECK(user_lookup_in(pw, "+5", &uid, &gid) == -1, "'+5': taken for a number");
	CHECK(user_lookup_in("/nonexistent/passwd", "svc", &uid, &gid) == -1, "no file: found");
	unlink(pw);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
