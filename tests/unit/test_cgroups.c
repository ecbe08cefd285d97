// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Naming cgroup ids (user/lib/cgroups.c), as root on the host's cgroup2 hierarchy: a cgroup made
 * right after the walk that named another is named too (it used to wait for the next walk, at
 * least CGROUP_RESCAN_NS later: snoop printed "cgroup:ID" for good); one never there is shown by
 * its id; one removed keeps its path. Makes two cgroups below the mount and removes them.
 * Exits non-zero on any failed check (2: could not run); the last line is "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cgroups.h"
#include "sysinfo.h"

#include "check.h"

/* sysinfo.c's, which brings more than this needs */
uint64_t clock_ns(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint64_t made(const char *mount, const char *name, char *rel, size_t len)
{
	char path[1024];
	struct stat st;

	snprintf(rel, len, "/%s", name);
	snprintf(path, sizeof(path), "%s%s", mount, rel);
	if ((mkdir(path, 0755) && errno != EEXIST) || stat(path, &st)) {
		perror(path);
		return 0;
	}
	return st.st_ino;
}

int main(int argc, char **argv)
{
	struct cgroup_names *c = cgroup_names_new();
	char a[256], b[256], pa[1024], pb[1024], buf[CGROUP_LABEL_LEN], want[64];
	uint64_t ida, idb;

	if (argc != 2 || !c) {
		fprintf(stderr, "usage: test_cgroups CGROUP2_MOUNT (as root)\n");
		return 2;
	}
	snprintf(a, sizeof(a), "iostrata-test-cg-%d-a", (int)getpid());
	snprintf(b, sizeof(b), "iostrata-test-cg-%d-b", (int)getpid());
	/* made after the first walk (cgroup_names_new): the look for it walks again */
	if (!(ida = made(argv[1], a, pa, sizeof(pa))))
		return 2;
	CHECK(!strcmp(cgroup_name(c, ida, buf, sizeof(buf)), pa), "a: '%s', not '%s'", buf, pa);
	/* made at once after that walk, well within CGROUP_RESCAN_NS of it */
	if (!(idb = made(argv[1], b, pb, sizeof(pb))))
		return 2;
	CHECK(!strcmp(cgroup_name(c, idb, buf, sizeof(buf)), pb), "b, made right after the walk "
	      "that named a: '%s', not '%s'", buf, pb);
	/* an id no cgroup has (inode numbers are not this large): by its id, twice */
	snprintf(want, sizeof(want), "cgroup:%llu", 0xfffffffffffull);
	CHECK(!strcmp(cgroup_name(c, 0xfffffffffffull, buf, sizeof(buf)), want), "'%s'", buf);
	CHECK(!strcmp(cgroup_name(c, 0xfffffffffffull, buf, sizeof(buf)), want), "'%s'", buf);
	snprintf(pa, sizeof(pa), "%s/%s", argv[1], a);
	snprintf(pb, sizeof(pb), "%s/%s", argv[1], b);
	rmdir(pa);
	rmdir(pb);
	/* removed: keeps the path it had */
	CHECK(!strcmp(cgroup_name(c, ida, buf, sizeof(buf)), pa + strlen(argv[1])), "a removed: "
	      "'%s'", buf);
	cgroup_names_free(c);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
