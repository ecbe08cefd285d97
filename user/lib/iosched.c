// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A disk's I/O scheduler through sysfs (iosched.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "iosched.h"
#include "sysinfo.h"

static void queue_path(const char *disk, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "/sys/block/%s/queue/%s", disk, rel);
}

int iosched_offered(const char *disk, char *list, size_t llen, char *active, size_t alen,
		    char *why, size_t wlen)
{
	char path[300], line[256], *w, *save = NULL;
	size_t used = 0;
	int err;

	queue_path(disk, "scheduler", path, sizeof(path));
	err = sysfs_line(path, line, sizeof(line));
	if (err == -ENOENT) {
		snprintf(why, wlen, "%s is not a blk-mq disk (no queue/scheduler: a bio-based "
			 "device such as zram has no I/O scheduler to compare)", disk);
		return -2;
	}
	if (err) {
		snprintf(why, wlen, "%s: %s", path, strerror(-err));
		return -1;
	}
	list[0] = active[0] = '\0';
	for (w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		size_t n = strlen(w);

		if (w[0] == '[' && n > 2 && w[n - 1] == ']') {
			w[n - 1] = '\0';
			snprintf(active, alen, "%s", ++w);
		}
		if (used < llen)
			used += (size_t)snprintf(list + used, llen - used, "%s%s", used ? " " : "", w);
	}
	if (!active[0]) {	/* "none" alone, without brackets: no choice at all */
		snprintf(why, wlen, "%s offers no choice of I/O scheduler (queue/scheduler: %s)",
			 disk, list);
		return -2;
	}
	return 0;
}

bool iosched_in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while ((p = strstr(p, name))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

void iosched_active(const char *disk, char *buf, size_t len)
{
	char list[256], why[256];

	if (iosched_offered(disk, list, sizeof(list), buf, len, why, sizeof(why)))
		snprintf(buf, len, "%s", strstr(why, "no choice") ? "none" : "unknown");
}

static bool word(const char *s, size_t n, const char *extra)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      strchr(extra, s[i])))
			return false;
	return true;
}

int sched_spec_parse(const char *text, struct sched_spec *sp, char *why, size_t len)
{
	const char *colon = strchr(text, ':'), *p, *end, *eq;
	size_t n = colon ? (size_t)(colon - text) : strlen(text);

	memset(sp, 0, sizeof(*sp));
	if (strlen(text) >= sizeof(sp->text) || n >= sizeof(sp->name) || !word(text, n, "-")) {
		snprintf(why, len, "bad scheduler spec '%s': expected NAME or NAME:TUNABLE=VALUE,... "
			 "(e.g. mq-deadline, bfq:low_latency=0)", text);
		return -1;
	}
	snprintf(sp->text, sizeof(sp->text), "%s", text);
	memcpy(sp->name, text, n);
	for (p = colon ? colon + 1 : NULL; p; p = *end ? end + 1 : NULL) {
		struct sysfs_val *kv = &sp->kv[sp->nkv];

		end = p + strcspn(p, ",");
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || !word(p, (size_t)(eq - p), "") || eq + 1 == end ||
		    (size_t)(eq - p) >= sizeof(kv->name) || (size_t)(end - eq) > sizeof(kv->val) ||
		    strcspn(eq + 1, " \t\n") < (size_t)(end - eq - 1)) {
			snprintf(why, len, "bad tunable '%.*s' in scheduler spec '%s': expected "
				 "TUNABLE=VALUE (e.g. read_expire=100)", (int)(end - p), p, text);
			return -1;
		}
		if (sp->nkv == IOSCHED_SPEC_KV) {
			snprintf(why, len, "scheduler spec '%s' sets more than %d tunables", text,
				 IOSCHED_SPEC_KV);
			return -1;
		}
		memcpy(kv->name, p, (size_t)(eq - p));
		memcpy(kv->val, eq + 1, (size_t)(end - eq - 1));
		sp->nkv++;
	}
	if (!strcmp(sp->name, "none") && sp->nkv) {
		snprintf(why, len, "scheduler spec '%s': none has no tunables", text);
		return -1;
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct sysfs_val *)a)->name, ((const struct sysfs_val *)b)->name);
}

/*
 * The attributes of dir: every regular file (writable ones only when `writable`), except
 * `skip`, by name. Names beyond max are left out with an error: a state that cannot be saved
 * whole is not saved.
 */
static int read_dir(const char *dir, bool writable, const char *skip, struct sysfs_val *v,
		    int *n, char *why, size_t len)
{
	char path[600];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : (snprintf(why, len, "%s: %s", dir, strerror(errno)), -1);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (skip && !strcmp(de->d_name, skip)) ||
		    strlen(de->d_name) >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode) || (writable && !(st.st_mode & S_IWUSR)))
			continue;
		if (*n == IOSCHED_VALS) {
			closedir(d);
			snprintf(why, len, "%s: more than %d attributes", dir, IOSCHED_VALS);
			return -1;
		}
		if (sysfs_line(path, v[*n].val, sizeof(v->val)))
			continue;	/* write-only or unreadable: nothing to put back */
		snprintf(v[*n].name, sizeof(v->name), "%s", de->d_name);
		(*n)++;
	}
	closedir(d);
	qsort(v, (size_t)*n, sizeof(*v), by_name);
	return 0;
}

int iosched_save(const char *disk, struct iosched_state *st, char *why, size_t len)
{
	char list[256], dir[300];

	memset(st, 0, sizeof(*st));
	snprintf(st->disk, sizeof(st->disk), "%s", disk);
	if (iosched_offered(disk, list, sizeof(list), st->sched, sizeof(st->sched), why, len))
		return -1;
	queue_path(disk, "iosched", dir, sizeof(dir));
	if (read_dir(dir, false, NULL, st->tun, &st->ntun, why, len))
		return -1;
	queue_path(disk, "", dir, sizeof(dir));
	return read_dir(dir, true, "scheduler", st->queue, &st->nqueue, why, len);
}

/* Write val to the queue attribute rel. 0 or -errno. */
static int queue_write(const char *disk, const char *rel, const char *val)
{
	char path[300];
	size_t n = strlen(val);
	ssize_t w;
	int fd, err = 0;

	queue_path(disk, rel, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, val, n);
	if (w < 0)
		err = -errno;
	else if ((size_t)w != n)
		err = -EIO;
	close(fd);
	return err;
}

static const struct sysfs_val *find(const struct sysfs_val *v, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static void names(const struct sysfs_val *v, int n, char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", v[i].name);
}

/*
 * The kernel ignores a write of the active scheduler's name: its instance, tunables and
 * nr_requests stay as they are. To start sp's scheduler fresh, the disk first goes through
 * another one it offers (none, unless none is the one wanted). 0, or -errno.
 */
static int leave_if_active(const char *disk, const char *name)
{
	char list[256], active[IOSCHED_NAME], why[256], *w, *save = NULL;

	if (iosched_offered(disk, list, sizeof(list), active, sizeof(active), why, sizeof(why)) ||
	    strcmp(active, name))
		return 0;
	if (strcmp(name, "none"))
		return queue_write(disk, "scheduler", "none");
	for (w = strtok_r(list, " ", &save); w; w = strtok_r(NULL, " ", &save))
		if (strcmp(w, name))
			return queue_write(disk, "scheduler", w);
	return 0;
}

/* A tunable's value as read, and as written: the same number ("05", "+5" and "5"), or text. */
static bool same_value(const char *read, const char *written)
{
	char *e1, *e2;
	long long a, b;

	errno = 0;
	a = strtoll(read, &e1, 10);
	b = strtoll(written, &e2, 10);
	if (!errno && e1 != read && !*e1 && e2 != written && !*e2)
		return a == b;
	return !strcmp(read, written);
}

int iosched_apply(const char *disk, const struct sched_spec *sp, char *why, size_t len)
{
	struct sysfs_val *tun = calloc(IOSCHED_VALS, sizeof(*tun));
	char dir[300], rel[128], list[1024];
	int i, n, err = -1;

	if (!tun) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if ((n = leave_if_active(disk, sp->name)) || (n = queue_write(disk, "scheduler", sp->name))) {
		snprintf(why, len, "cannot switch %s to %s: %s", disk, sp->name, strerror(-n));
		goto out;
	}
	queue_path(disk, "iosched", dir, sizeof(dir));
	if (read_dir(dir, false, NULL, tun, &n, why, len))
		goto out;
	for (i = 0; i < sp->nkv; i++) {
		if (!find(tun, n, sp->kv[i].name)) {
			names(tun, n, list, sizeof(list));
			snprintf(why, len, "%s has no tunable '%s' (its tunables: %s)", sp->name,
				 sp->kv[i].name, n ? list : "none");
			err = -2;
			goto out;
		}
		snprintf(rel, sizeof(rel), "iosched/%s", sp->kv[i].name);
		if ((err = queue_write(disk, rel, sp->kv[i].val))) {
			snprintf(why, len, "%s: %s's %s does not take '%s': %s", disk, sp->name,
				 sp->kv[i].name, sp->kv[i].val, strerror(-err));
			err = err == -EINVAL || err == -ERANGE ? -2 : -1;
			goto out;
		}
	}
	/*
	 * A write the kernel takes may still not leave the value: bfq and mq-deadline clamp out of
	 * range values without an error (front_merges=2 reads 1), jiffies round (read_expire=101
	 * reads 104 at HZ=250), and one tunable resets another (bfq's strict_guarantees=1 sets
	 * slice_idle back to 8 ms). The rounds would run under what the spec does not say.
	 */
	err = -1;
	if (read_dir(dir, false, NULL, tun, &n, why, len))
		goto out;
	for (i = 0; i < sp->nkv; i++) {
		const struct sysfs_val *now = find(tun, n, sp->kv[i].name);
		int j;

		for (j = i + 1; j < sp->nkv && strcmp(sp->kv[j].name, sp->kv[i].name); j++)
			;
		if (j < sp->nkv)	/* set again later in the spec: the later one counts */
			continue;
		if (!now || !same_value(now->val, sp->kv[i].val)) {
			snprintf(why, len, "%s: %s's %s reads '%s' after '%s' was written (the kernel "
				 "clamped or rounded it, or another tunable of the spec reset it): the "
				 "rounds would not run under '%s'", disk, sp->name, sp->kv[i].name,
				 now ? now->val : "(gone)", sp->kv[i].val, sp->text);
			err = now ? -2 : -1;
			goto out;
		}
	}
	err = 0;
out:
	free(tun);
	return err;
}

/*
 * Write back every attribute of want that now reads otherwise; prefix: "" or "iosched/". Goes on
 * past one that cannot be written, so that the others are put back; -1 if any could not be.
 */
static int put_back(const char *disk, const char *prefix, const struct sysfs_val *want, int nwant,
		    const struct sysfs_val *now, int nnow)
{
	const struct sysfs_val *cur;
	char rel[128];
	int i, bad = 0;

	for (i = 0; i < nwant; i++) {
		cur = find(now, nnow, want[i].name);
		if (cur && !strcmp(cur->val, want[i].val))
			continue;
		snprintf(rel, sizeof(rel), "%s%s", prefix, want[i].name);
		bad |= queue_write(disk, rel, want[i].val) != 0;
	}
	return bad ? -1 : 0;
}

/* Append "queue/NAME is 'v', not 'w'" to why (used bytes of len so far, the first from
 * start); the new used. */
static size_t said(char *why, size_t len, size_t start, size_t used, const char *what,
		   const char *name, const char *is, const char *want)
{
	if (used < len)
		used += (size_t)snprintf(why + used, len - used, "%s%s%s is '%s', not '%s'",
					 used > start ? "; " : "", what, name, is, want);
	return used;
}

/* Each of want[] that now[] holds otherwise (or not at all) said in why; the new used. */
static size_t vals_said(const struct sysfs_val *want, int nwant, const struct sysfs_val *now,
			int nnow, const char *what, char *why, size_t len, size_t start, size_t used)
{
	const struct sysfs_val *v;
	int i;

	for (i = 0; i < nwant; i++)
		if (!(v = find(now, nnow, want[i].name)) || strcmp(v->val, want[i].val))
			used = said(why, len, start, used, what, want[i].name,
				    v ? v->val : "(gone)", want[i].val);
	return used;
}

/* Every setting that differs between a (wanted) and b (now), in why; 0 when none does. */
static int differs(const struct iosched_state *a, const struct iosched_state *b, char *why,
		   size_t len)
{
	size_t used, start;

	if (strcmp(a->sched, b->sched)) {
		snprintf(why, len, "%s's scheduler is %s, not %s", a->disk, b->sched, a->sched);
		return -1;
	}
	start = used = (size_t)snprintf(why, len, "%s's ", a->disk);
	used = vals_said(a->queue, a->nqueue, b->queue, b->nqueue, "queue/", why, len, start,
			 used);
	used = vals_said(a->tun, a->ntun, b->tun, b->ntun, "iosched/", why, len, start, used);
	if (used > start)
		return -1;
	why[0] = '\0';
	return 0;
}

/*
 * The scheduler, then its queue attributes, then its tunables: switching resets the tunables,
 * nr_requests and wbt_lat_usec, and writing nr_requests resets tunables derived from it
 * (mq-deadline's async_depth). Written again while anything still differs, at most 3 times, so
 * that one attribute resetting another is undone too; every setting still otherwise is named.
 */
int iosched_restore(const struct iosched_state *st, char *why, size_t len)
{
	struct iosched_state *now = malloc(sizeof(*now));
	int err = -1, e, round;

	if (!now) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if ((e = queue_write(st->disk, "scheduler", st->sched))) {
		/* the tunables belong to the other scheduler; the queue's own attributes are
		 * still put back, and any that could not be is named after the failure */
		size_t used = (size_t)snprintf(why, len, "cannot switch %s back to %s: %s",
					       st->disk, st->sched, strerror(-e));

		if (!iosched_save(st->disk, now, NULL, 0)) {
			put_back(st->disk, "", st->queue, st->nqueue, now->queue, now->nqueue);
			if (!iosched_save(st->disk, now, NULL, 0))
				vals_said(st->queue, st->nqueue, now->queue, now->nqueue, "queue/",
					  why, len, 0, used);
		}
		goto out;
	}
	for (round = 0; round <= 3; round++) {
		if (iosched_save(st->disk, now, why, len))
			goto out;
		if (!differs(st, now, why, len)) {
			err = 0;
			goto out;
		}
		if (round == 3)
			break;
		put_back(st->disk, "", st->queue, st->nqueue, now->queue, now->nqueue);
		if (!iosched_save(st->disk, now, why, len))
			put_back(st->disk, "iosched/", st->tun, st->ntun, now->tun, now->ntun);
	}
	/* why: every setting that could not be put back */
out:
	free(now);
	return err;
}

int iosched_check(const struct iosched_state *st, char *why, size_t len)
{
	struct iosched_state *now = malloc(sizeof(*now));
	int err;

	if (!now) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	err = iosched_save(st->disk, now, why, len) || differs(st, now, why, len) ? -1 : 0;
	free(now);
	return err;
}

void iosched_describe(const struct iosched_state *st, char *buf, size_t len)
{
	const struct sysfs_val *nr = find(st->queue, st->nqueue, "nr_requests");
	size_t used;
	int i;

	used = (size_t)snprintf(buf, len, "%s", st->sched);
	for (i = 0; i < st->ntun && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", i ? " " : " (",
					 st->tun[i].name, st->tun[i].val);
	if (st->ntun && used < len)
		used += (size_t)snprintf(buf + used, len - used, ")");
	if (nr && used < len)
		snprintf(buf + used, len - used, ", nr_requests %s", nr->val);
}
