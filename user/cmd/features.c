// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `iostrata features`: what this kernel supports and how each layer and stage attaches. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <dirent.h>
#include <getopt.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include "cli.h"
#include "cmd.h"
#include "sysinfo.h"
#include "json.h"
#include "layer.h"
#include "log.h"
#include "privs.h"
#include "session.h"
#include "trace_opts.h"

#define TRACEFS_MAGIC_ 0x74726163

static const char *tracefs_state(void)
{
	struct statfs s;

	if (!statfs("/sys/kernel/tracing", &s) && s.f_type == TRACEFS_MAGIC_)
		return "mounted at /sys/kernel/tracing (the aio and syscall layers' events)";
	return "not mounted (the aio and syscall layers need it: iostrata mounts it as root)";
}

static long btf_size(void)
{
	struct stat st;

	return stat("/sys/kernel/btf/vmlinux", &st) ? -1 : (long)st.st_size;
}

/* Per disk: does the kernel keep the request start time the wait stage starts from? */
struct disk_info {
	char name[32], sched[32];
	char below[128];	/* a bio-based disk's disks below it (slaves), space-separated */
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
		disk_below(de->d_name, di[n].below, sizeof(di[n].below));
		n++;
	}
	closedir(d);
	qsort(di, (size_t)n, sizeof(*di), disk_cmp);
	return n;
}

/* What the block layer sees of a disk: a bio-based one (dm, md, zram, brd, pmem) builds no
 * requests; only a stacked one (dm, md) has disks below it, where its I/O shows. */
static const char *disk_note(const struct disk_info *d, char *buf, size_t len)
{
	if (d->mq)
		return "request-based (blk-mq): every block stage";
	if (!d->below[0])
		return "bio-based, no disk below it: no block stage times its I/O";
	snprintf(buf, len, "bio-based: no requests, its I/O shows on the disks below it: %s",
		 d->below);
	return buf;
}

/* The BPF memory the session takes: each map is listed once (a layer's lists leave out the
 * shared maps, told by their kernel id: report_maps in layer.c), so the sum counts it once. */
static uint64_t maps_total(const struct layer_report *reps, int n)
{
	uint64_t total = 0;
	int l, i;

	for (l = 0; l < n; l++)
		for (i = 0; i < reps[l].nmaps; i++)
			total += reps[l].maps[i].bytes;
	return total;
}

static int features_print(const struct layer_report *reps, const char *const *names, int n,
			  bool verified, bool json, FILE *f)
{
	struct disk_info di[64];
	char note[192];
	struct utsname u;
	uint64_t total = maps_total(reps, n);
	int i, l, nd = disk_infos(di, 64);
	long bs = btf_size();

	uname(&u);

	if (json) {
		struct jw w;

		jw_init(&w);
		jw_obj(&w, NULL);
		jw_str(&w, "type", "features");
		jw_str(&w, "kernel", u.release);
		jw_bool(&w, "btf", bs >= 0);
		jw_str(&w, "tracefs", tracefs_state());
		jw_bool(&w, "verified_by_attach", verified);
		jw_bool(&w, "direct_reads", kernel_direct_reads());
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
			jw_str(&w, "note", disk_note(&di[i], note, sizeof(note)));
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
	fprintf(f, "reads      %s\n", kernel_direct_reads() ?
		"direct loads through bpf_rdonly_cast where an object is reached by address" :
		"bpf_probe_read_kernel where an object is reached by address (no bpf_rdonly_cast: "
		"slower linking and fd checks)");
	fprintf(f, "checked    %s\n", verified ? "by loading and attaching every program, then "
		"detaching" : "from BTF only (not root: nothing was loaded)");
	for (l = 0; l < n; l++) {
		if (!reps[l].nevents)
			continue;
		fprintf(f, "\n%s layer events\n", names[l]);
		for (i = 0; i < reps[l].nevents; i++) {
			const struct event_status *e = &reps[l].events[i], *x = e + 1;
			char name[64];

			snprintf(name, sizeof(name), "%s", e->event);
			/* a syscall's entry and exit on one row, when they attach alike */
			if (i + 1 < reps[l].nevents && !strncmp(e->event, "sys_enter_", 10) &&
			    !strncmp(x->event, "sys_exit_", 9) && !strcmp(e->event + 10, x->event + 9) &&
			    e->method == x->method && !strcmp(e->why, x->why)) {
				snprintf(name, sizeof(name), "sys_{enter,exit}_%s", e->event + 10);
				e = x;
				i++;
			}
			fprintf(f, "  %-26s %-10s %s%s%s\n", name, e->method ? e->method : "-",
				e->method ? e->role : e->why, e->method && *e->why ? "; " : "",
				e->method && *e->why ? e->why : "");
		}
	}
	fprintf(f, "\nstages\n");
	for (l = 0; l < n; l++)
		for (i = 0; i < reps[l].nstages; i++) {
			const struct stage_status *s = &reps[l].stages[i];

			fprintf(f, "  %-7s %-15s %-11s %s\n", s->layer, s->stage,
				s->available ? "available" : "UNAVAILABLE", s->how);
		}
	fprintf(f, "\ndisks\n");
	for (i = 0; i < nd; i++)
		fprintf(f, "  %-10s scheduler %-12s iostats %-2d %s\n", di[i].name, di[i].sched,
			di[i].iostats, disk_note(&di[i], note, sizeof(note)));
	if (total) {
		fprintf(f, "\nBPF memory (kernel's memlock figures)\n");
		for (l = 0; l < n; l++)
			for (i = 0; i < reps[l].nmaps; i++)
				fprintf(f, "  %-8s %-16s %8" PRIu64 " KiB  %s\n", names[l],
					reps[l].maps[i].name, reps[l].maps[i].bytes / 1024,
					reps[l].maps[i].note);
		fprintf(f, "  %-25s %8" PRIu64 " KiB\n", "total", total / 1024);
	}
	return ferror(f) ? -1 : 0;
}

/* Root, or the capabilities loading and attaching tracing programs takes. */
bool privileged(void)
{
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	eff = caps_effective();
	return (eff & (1ULL << CAP_SYS_ADMIN)) ||
	       ((eff & (1ULL << 39 /* CAP_BPF */)) && (eff & (1ULL << 38 /* CAP_PERFMON */)));
}

static const char usage[] =
"Usage: iostrata features [-j] [-v] [--fail-probe=TP] [--force-raw-tp]\n"
"\n"
"What this kernel supports: for every layer, how each tracepoint attaches (or why it\n"
"cannot), which stages can be measured, the disks and their schedulers, and the BPF\n"
"memory a session takes. As root every program is loaded, attached and detached again;\n"
"otherwise the report comes from BTF alone.\n"
"\n"
"  -j, --json            one JSON document\n"
"      --fail-probe=TP   testing: act as if the kernel lacked tracepoint TP\n"
"      --force-raw-tp    testing: the raw_tp twins, not tp_btf\n"
"  -v, --verbose         show probing and libbpf diagnostics\n"
"  -h, --help            show this help\n";

int cmd_features(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "fail-probe", required_argument, NULL, 'f' },
		{ "force-raw-tp", no_argument, NULL, 'r' }, { 0 },
	};
	struct trace_config cfg = TRACE_CONFIG_DEFAULT;
	struct layer_report reps[NLAYERS + 1];
	const char *names[NLAYERS + 1];
	bool verified = privileged(), json = log_json(), tried[NLAYERS];
	struct session *s = NULL;
	int i, c, verbose = 0, n = NLAYERS;
	char msg[256];

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":jvh", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'v': verbose++; break;
		case 'h': fputs(usage, stdout); return 0;
		case 'f':
			if (parse_fail_probe(&cfg, optarg))
				return 2;
			break;
		case 'r': cfg.force_raw_tp = true; break;
		default:
			errorf("%s", cli_getopt_problem(c, argv, lo, msg, sizeof(msg)));
			return 2;
		}
	}
	if (optind < argc) {
		errorf("features takes no argument '%s'", argv[optind]);
		return 2;
	}
	log_init("iostrata", json, verbose);
	/* the probe may mount tracefs: Ctrl-C, a hangup or a closed pipe must not skip the close */
	session_signals();
	memset(reps, 0, sizeof(reps));
	for (i = 0; i < NLAYERS; i++)
		names[i] = layers[i]->name;
	if (verified) {
		/* prove it: load and attach every layer, then detach before printing; a layer
		 * that cannot start says why in its report */
		if (session_open(&cfg, true, &s, reps, tried))
			return 1;
		/* what every layer shares: the generation map, the request table, the process
		 * names; listed here once, not under the layers that use them */
		names[n] = "shared";
		session_shared_maps(s, &reps[n]);
		n++;
	} else {
		for (i = 0; i < NLAYERS; i++)
			layer_report_static(layers[i], &cfg, &reps[i]);
	}
	/* a reader gone (a closed pipe) is a way to stop: status 0 */
	i = sink_written(features_print(reps, names, n, verified, json, stdout)) > 0;
	session_close(s);
	return i;
}
