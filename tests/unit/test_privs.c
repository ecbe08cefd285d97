// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of serve's --user lookup (user/lib/privs.c), which reads passwd by hand (a static
 * binary has no NSS): empty fields are fields, a malformed uid or gid is refused rather than
 * read as 0 (root), and an over-long line's tail is not taken for an entry. No root needed.
 * Exits non-zero on any failed check; the last line is "N passed, N failed".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

int main(void)
{
	const char *pw = passwd_file();
	uid_t uid = 99;
	gid_t gid = 99;
	int r;

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
