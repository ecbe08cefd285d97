// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `iostrata features`: what this kernel supports and how each layer and stage attaches. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <dirent.h>
#include "common.h"
#include "json.h"
#include "output.h"

#define TRACEFS_MAGIC_ 0x74726163

static const char *tracefs_state(void)
{
	struct statfs s;

	if (!statfs("/sys/kernel/tracing", &s) && s.f_type == TRACEFS_MAGIC_)
		return "mounted at /sys/kernel/tracing (not needed: tp_btf/raw_tp attach without it)";
	return "not mounted (not needed: tp_btf/raw_tp attach without it)";
}

static long btf_size(void)
{
	struct stat st;

	return stat("/sys/kernel/btf/vmlinux", &st) ? -1 : (long)st.st_size;
}

/* Per disk: does the kernel keep the request start time the wait stage starts from? */
struct disk_info {
	char name[32], sched[32];
	int iostats;
	bool mq;
};

static int read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	if ((nl = strchr(buf, '\n')))
		*nl = '\0';
	return 0;
}

static int disk_cmp(const void *a, const void *b)
{
	return strcmp(((const struct disk_info *)a)->name, ((const struct disk_info *)b)->name);
}

static int disk_infos(struct disk_info *di, int max)
{
	char path[512], line[256], *a, *b;
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		memset(&di[n], 0, sizeof(di[n]));
		snprintf(di[n].name, sizeof(di[n].name), "%.31s", de->d_name);
		snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", de->d_name);
		if (!read_str(path, line, sizeof(line)) && (a = strchr(line, '[')) &&
		    (b = strchr(a, ']'))) {
			*b = '\0';
			snprintf(di[n].sched, sizeof(di[n].sched), "%.31s", a + 1);
			di[n].mq = true;
		} else {
			/* "none" alone, no brackets: blk-mq without schedulers, or bio-based */
			snprintf(di[n].sched, sizeof(di[n].sched), "%.31s",
				 !read_str(path, line, sizeof(line)) ? line : "?");
			di[n].mq = false;
		}
		snprintf(path, sizeof(path), "/sys/block/%s/queue/iostats", de->d_name);
		di[n].iostats = !read_str(path, line, sizeof(line)) ? line[0] == '1' : -1;
		n++;
	}
	closedir(d);
	qsort(di, (size_t)n, sizeof(*di), disk_cmp);
	return n;
}

static const char *disk_note(const struct disk_info *d)
{
	if (!d->mq)
		return "bio-based: no requests, its I/O shows on the disks below it";
	return "request-based (blk-mq): every block stage";
}

int features_print(const struct layer_report *reps, const char *const *names, int n,
		   bool verified, FILE *f)
{
	struct disk_info di[64];
	struct utsname u;
	uint64_t total = 0;
	int i, l, nd = disk_infos(di, 64);
	long bs = btf_size();

	uname(&u);
	for (l = 0; l < n; l++)
		for (i = 0; i < reps[l].nmaps; i++)
			total += reps[l].maps[i].bytes;

	if (opts.json) {
		struct jw w;

		jw_init(&w);
		jw_obj(&w, NULL);
		jw_str(&w, "type", "features");
		jw_str(&w, "kernel", u.release);
		jw_bool(&w, "btf", bs >= 0);
		jw_str(&w, "tracefs", tracefs_state());
		jw_bool(&w, "verified_by_attach", verified);
		jw_arr(&w, "events");
		for (l = 0; l < n; l++)
			for (i = 0; i < reps[l].nevents; i++) {
				const struct event_status *e = &reps[l].events[i];

				jw_obj(&w, NULL);
				jw_str(&w, "layer", names[l]);
				jw_str(&w, "event", e->event);
				jw_str(&w, "role", e->role);
				if (e->method)
					jw_str(&w, "method", e->method);
				else
					jw_null(&w, "method");
				if (!e->method || *e->why)
					jw_str(&w, "reason", e->why);
				jw_bool(&w, "required", e->required);
				jw_end_obj(&w);
			}
		jw_end_arr(&w);
		jw_arr(&w, "stages");
		for (l = 0; l < n; l++)
			for (i = 0; i < reps[l].nstages; i++) {
				const struct stage_status *s = &reps[l].stages[i];

				jw_obj(&w, NULL);
				jw_str(&w, "layer", s->layer);
				jw_str(&w, "stage", s->stage);
				jw_str(&w, "from", s->from);
				jw_str(&w, "to", s->to);
				jw_bool(&w, "available", s->available);
				jw_str(&w, "how", s->how);
				jw_end_obj(&w);
			}
		jw_end_arr(&w);
		jw_arr(&w, "disks");
		for (i = 0; i < nd; i++) {
			jw_obj(&w, NULL);
			jw_str(&w, "disk", di[i].name);
			jw_str(&w, "scheduler", di[i].sched);
			jw_i64(&w, "iostats", di[i].iostats);
			jw_str(&w, "note", disk_note(&di[i]));
			jw_end_obj(&w);
		}
		jw_end_arr(&w);
		jw_arr(&w, "maps");
		for (l = 0; l < n; l++)
			for (i = 0; i < reps[l].nmaps; i++) {
				jw_obj(&w, NULL);
				jw_str(&w, "layer", names[l]);
				jw_str(&w, "map", reps[l].maps[i].name);
				jw_u64(&w, "bytes", reps[l].maps[i].bytes);
				jw_str(&w, "note", reps[l].maps[i].note);
				jw_end_obj(&w);
			}
		jw_end_arr(&w);
		jw_u64(&w, "bpf_memory_bytes", total);
		jw_end_obj(&w);
		i = jw_flush_line(&w, f);
		jw_free(&w);
		return i;
	}

	fprintf(f, "kernel     %s\n", u.release);
	if (bs >= 0)
		fprintf(f, "btf        /sys/kernel/btf/vmlinux (%ld KiB)\n", bs / 1024);
	else
		fprintf(f, "btf        missing: iostrata needs CONFIG_DEBUG_INFO_BTF\n");
	fprintf(f, "tracefs    %s\n", tracefs_state());
	fprintf(f, "checked    %s\n", verified ? "by loading and attaching every program, then "
		"detaching" : "from BTF only (not root: nothing was loaded)");
	for (l = 0; l < n; l++) {
		fprintf(f, "\n%s layer events\n", names[l]);
		for (i = 0; i < reps[l].nevents; i++) {
			const struct event_status *e = &reps[l].events[i];

			fprintf(f, "  %-18s %-10s %s%s%s\n", e->event, e->method ? e->method : "-",
				e->method ? e->role : e->why, e->method && *e->why ? "; " : "",
				e->method && *e->why ? e->why : "");
		}
	}
	fprintf(f, "\nstages\n");
	for (l = 0; l < n; l++)
		for (i = 0; i < reps[l].nstages; i++) {
			const struct stage_status *s = &reps[l].stages[i];

			fprintf(f, "  %-7s %-8s %-11s %s\n", s->layer, s->stage,
				s->available ? "available" : "UNAVAILABLE", s->how);
		}
	fprintf(f, "\ndisks\n");
	for (i = 0; i < nd; i++)
		fprintf(f, "  %-10s scheduler %-12s iostats %-2d %s\n", di[i].name, di[i].sched,
			di[i].iostats, disk_note(&di[i]));
	if (total) {
		fprintf(f, "\nBPF memory (kernel's memlock figures)\n");
		for (l = 0; l < n; l++)
			for (i = 0; i < reps[l].nmaps; i++)
				fprintf(f, "  %-8s %-12s %8" PRIu64 " KiB  %s\n", names[l],
					reps[l].maps[i].name, reps[l].maps[i].bytes / 1024,
					reps[l].maps[i].note);
		fprintf(f, "  %-21s %8" PRIu64 " KiB\n", "total", total / 1024);
	}
	return ferror(f) ? -1 : 0;
}
