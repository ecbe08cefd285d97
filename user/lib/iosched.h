/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A disk's I/O scheduler through sysfs: which ones it offers, switching, tunables
 * (queue/iosched/), and its settings saved and put back exactly. Switching is not a change of
 * one file: the kernel resets queue/nr_requests on every switch and bfq turns writeback
 * throttling (queue/wbt_lat_usec) off while it runs, so a saved state holds every writable
 * queue attribute too, and a restore writes back whatever differs, then checks.
 */
#ifndef IOSCHED_H
#define IOSCHED_H

#include <stdbool.h>
#include <stddef.h>

#define IOSCHED_NAME	32
#define IOSCHED_VALS	96	/* attributes of queue/ or of queue/iosched/ */
#define IOSCHED_SPEC_KV	16	/* tunables one spec sets */

struct sysfs_val {
	char name[48];
	char val[160];
};

struct iosched_state {
	char disk[32];
	char sched[IOSCHED_NAME];			/* the active one */
	struct sysfs_val tun[IOSCHED_VALS];		/* queue/iosched/ by name */
	int ntun;
	struct sysfs_val queue[IOSCHED_VALS];		/* queue/ writable, but scheduler */
	int nqueue;
};

/* A scheduler and the tunables to set on it: "bfq:low_latency=0,slice_idle=0". */
struct sched_spec {
	char text[256];
	char name[IOSCHED_NAME];
	struct sysfs_val kv[IOSCHED_SPEC_KV];
	int nkv;
};

/*
 * The schedulers disk offers, space-separated ("none mq-deadline kyber bfq"), and the active
 * one. 0, or -1 with why; -2 for a disk with no scheduler to choose: one without
 * queue/scheduler is bio-based (zram, some dm and md devices), no request ever waits in a
 * scheduler there.
 */
int iosched_offered(const char *disk, char *list, size_t llen, char *active, size_t alen,
		    char *why, size_t wlen);
/* Is name one of list's words? */
bool iosched_in_list(const char *list, const char *name);
/* The active scheduler ("none" where there is no choice, "unknown" unreadable). */
void iosched_active(const char *disk, char *buf, size_t len);

/* "name[:tunable=value[,tunable=value]...]". 0, or -1 with why. */
int sched_spec_parse(const char *text, struct sched_spec *sp, char *why, size_t len);

/* Every setting a switch may change, as it is now. 0, or -1 with why. */
int iosched_save(const char *disk, struct iosched_state *st, char *why, size_t len);
/* Switch to sp's scheduler (fresh: its tunables at their defaults), then set sp's tunables;
 * each must exist and take its value. 0, or -1 with why (the disk is left as it is then); -2
 * when the spec is what is wrong: a tunable the scheduler lacks, a value refused or changed. */
int iosched_apply(const char *disk, const struct sched_spec *sp, char *why, size_t len);
/* Back to st: its scheduler, then every tunable and queue attribute that differs, then a check
 * that all read as saved. 0, or -1 with why (the first that could not be put back). */
int iosched_restore(const struct iosched_state *st, char *why, size_t len);
/* Does the disk read as st still (nothing written)? 0, or -1 with why: every setting that
 * differs, or why it could not be read. */
int iosched_check(const struct iosched_state *st, char *why, size_t len);
/* "kyber (read_lat_nsec=3000000 write_lat_nsec=10000000), nr_requests 100" */
void iosched_describe(const struct iosched_state *st, char *buf, size_t len);

#endif
