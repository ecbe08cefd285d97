// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of serve's --user lookup (user/lib/privs.c), which reads passwd by hand (a static
 * binary has no NSS): empty fields are fields, a malformed uid or gid is refused rather than
 * read as 0 (root), and an over-long line's tail is not taken for an entry. No root needed.
 * Exits non-zero on any failed check; the last line is "N passed, N failed". As root, `race`
 * checks the uid change leaves no moment another process of the new uid can attach in.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
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
				if (!ptrace(PTRACE_SEIZE, target, 0, 0))
					_exit(0);
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
