// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cgroups.h"
#include "sysinfo.h"

struct cgroup_path {
	uint64_t id;
	char *path;
};

/* ids looked for and not found, each by the walk made for it: an open set, emptied when full */
#define MISSING_SLOTS	1024

struct cgroup_names {
	char mount[512];		/* "" when no cgroup2 hierarchy is mounted */
	struct cgroup_path *v;		/* the first `sorted` sorted by id, the rest being added */
	size_t n, sorted, cap;
	uint64_t last_scan;		/* CLOCK_MONOTONIC ns, 0 = never */
	uint64_t missing[MISSING_SLOTS];	/* 0: free (no cgroup has id 0) */
	size_t nmissing;
};

void cgroup2_mount(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], mnt[512], *sep;

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			snprintf(buf, len, "%s", mnt);
			break;
		}
	}
	fclose(f);
}

static int by_id(const void *a, const void *b)
{
	const struct cgroup_path *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct cgroup_path *find(struct cgroup_names *c, uint64_t id)
{
	struct cgroup_path key = { .id = id };

	return c->sorted ? bsearch(&key, c->v, c->sorted, sizeof(*c->v), by_id) : NULL;
}

/* One cgroup seen: kept, or its path updated (renamed, or a new cgroup at a recycled id). */
static void note(struct cgroup_names *c, uint64_t id, const char *rel)
{
	struct cgroup_path *p = find(c, id);
	char *dup;

	if (p) {
		if (strcmp(p->path, rel) && (dup = strdup(rel))) {
			free(p->path);
			p->path = dup;
		}
		return;
	}
	if (c->n == CGROUP_NAMES_MAX)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct cgroup_path *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return;
		c->v = v;
		c->cap = cap;
	}
	dup = strdup(rel);
	if (!dup)
		return;
	/* appended unsorted: find() sees only the sorted part; scan() sorts after the walk */
	c->v[c->n].id = id;
	c->v[c->n++].path = dup;
}

/* The directory at mount + rel and every one below it (depth-first, bounded). */
static void walk(struct cgroup_names *c, char *rel, size_t len, size_t cap, int depth)
{
	char path[PATH_MAX];
	struct dirent *d;
	struct stat st;
	DIR *dir;

	snprintf(path, sizeof(path), "%s%s", c->mount, rel);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return;
	/* on 64-bit kernels a cgroup's id is its kernfs inode number */
	note(c, st.st_ino, len ? rel : "/");
	if (depth >= 64 || !(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		size_t n = strlen(d->d_name);

		if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") || !strcmp(d->d_name, "..") ||
		    len + 1 + n >= cap)
			continue;
		rel[len] = '/';
		memcpy(rel + len + 1, d->d_name, n + 1);
		walk(c, rel, len + 1 + n, cap, depth + 1);
		rel[len] = '\0';
	}
	closedir(dir);
}

static void scan(struct cgroup_names *c)
{
	char rel[PATH_MAX] = "";

	c->last_scan = clock_ns(CLOCK_MONOTONIC);
	if (!*c->mount)
		return;
	walk(c, rel, 0, sizeof(rel), 0);
	if (c->n != c->sorted)
		qsort(c->v, c->n, sizeof(*c->v), by_id);
	c->sorted = c->n;
}

struct cgroup_names *cgroup_names_new(void)
{
	struct cgroup_names *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	cgroup2_mount(c->mount, sizeof(c->mount));
	scan(c);
	return c;
}

void cgroup_names_free(struct cgroup_names *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	free(c);
}

/* Was id looked for by a walk of its own and not found? Else noted so, when note is set. */
static bool missing(struct cgroup_names *c, uint64_t id, bool note)
{
	size_t i = (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 54) & (MISSING_SLOTS - 1);

	for (; c->missing[i]; i = (i + 1) & (MISSING_SLOTS - 1))
		if (c->missing[i] == id)
			return true;
	if (note) {
		if (c->nmissing == MISSING_SLOTS / 2) {	/* then each is looked for once more */
			memset(c->missing, 0, sizeof(c->missing));
			c->nmissing = 0;
			return missing(c, id, true);
		}
		c->missing[i] = id;
		c->nmissing++;
	}
	return false;
}

/*
 * An unknown id is looked for at once by a walk of its own, whatever the last walk's age: its
 * I/O was submitted before this walk, so its cgroup, unless removed since, is found. The walks
 * are at most one per id not seen before (not one per record: the first finds every cgroup
 * made before it) and, for ids a walk did not find (removed, or outside this mount), one every
 * CGROUP_RESCAN_NS. Rate-limited alone, a cgroup made within 100 ms of the walk that named
 * another was shown as cgroup:ID, in snoop for good: containers started together.
 */
const char *cgroup_name(struct cgroup_names *c, uint64_t id, char *buf, size_t len)
{
	struct cgroup_path *p = c ? find(c, id) : NULL;

	if (!p && c && id && (!missing(c, id, false) ||
			      clock_ns(CLOCK_MONOTONIC) - c->last_scan >= CGROUP_RESCAN_NS)) {
		scan(c);
		p = find(c, id);
		if (!p)
			missing(c, id, true);
	}
	if (p && strlen(p->path) < len) {
		snprintf(buf, len, "%s", p->path);
	} else if (p) {		/* cut, and said, with the id that tells it from its kin */
		char tail[48];
		size_t keep, t = (size_t)snprintf(tail, sizeof(tail), "...(cgroup:%" PRIu64 ")", id);

		keep = len > t ? len - 1 - t : 0;
		while (keep && ((unsigned char)p->path[keep] & 0xc0) == 0x80)
			keep--;	/* not inside a UTF-8 character */
		snprintf(buf, len, "%.*s%s", (int)keep, p->path, tail);
	} else {
		snprintf(buf, len, "cgroup:%" PRIu64, id);
	}
	return buf;
}
