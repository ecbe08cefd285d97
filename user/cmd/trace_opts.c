// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options every tracing command shares: parsed once, here (trace_opts.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include "cli.h"
#include "cmd.h"
#include "layer.h"
#include "log.h"
#include "stopsig.h"
#include "sysinfo.h"
#include "trace_opts.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

const char trace_opts_help_what[] =
"  -d, --disk=DISK       only this disk (vda, /dev/nvme0n1): the block layer\n"
"  -p, --pid=PID         only I/O queued by this process\n"
"  -c, --cgroup=PATH     only I/O queued from this cgroup v2 or below it\n"
"  -l, --layers=LIST     block,uring,aio,syscall (stages below; default: every\n"
"                        available layer, only block with -d)\n"
"      --comm=NAME       only threads named NAME (syscall layer)\n"
"      --stages=LIST     only these stages (device, block.device, ...); block's\n"
"                        device alone: 2 programs per I/O, own I/O not excluded\n";

const char trace_opts_help_knobs[] =
"      --duration=SEC    stop after SEC seconds\n"
"      --inflight=N      in-flight table slots, a power of two (default 131072):\n"
"                        bios, and block requests without a tag slot\n"
"      --fail-probe=TP   testing: act as if the kernel lacked tracepoint TP\n"
"      --force-raw-tp    testing: attach the raw_tp twins, not tp_btf\n"
"      --no-tag-slots    testing: block requests in the in-flight table, not at\n"
"                        their tags\n"
"      --lose-completions=N\n"
"                        testing: miss every Nth block completion of a request\n"
"                        held, as the kernel sometimes does (complete_unseen)\n"
"      --stale-after=SEC testing: take table entries older than SEC (default\n"
"                        120) for leftovers where nothing better tells them\n"
"      --hist-keys=N[,M] testing: at most N keys in each per-CPU histogram map\n"
"                        (-D, -F, -O, -P, -C), M spill slots past it\n"
"  -v, --verbose         show probing and libbpf diagnostics (-vv: more)\n"
"  -h, --help            show this help\n"
"  -V, --version         show the version\n";

void layer_names(char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < NLAYERS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 layers[i]->name);
}

void usage_layers(FILE *f)
{
	int i, s, n;

	fputs("\nLayers (-l) and their stages:\n", f);
	for (i = 0; i < NLAYERS; i++) {
		fprintf(f, "  %-8s", layers[i]->name);
		for (s = n = 0; s < layers[i]->nstages; s++)
			if (layers[i]->stages[s].name)
				fprintf(f, "%s%s", n++ ? ", " : " ", layers[i]->stages[s].name);
		fputc('\n', f);
	}
}

static int parse_layers(const char *list, unsigned int *mask)
{
	char buf[512], names[96], *tok, *save = NULL;
	int id;

	layer_names(names, sizeof(names));
	if ((size_t)snprintf(buf, sizeof(buf), "%s", list) >= sizeof(buf)) {
		errorf("bad -l: a list of %zu characters; the layers' names need fewer than %zu",
		       strlen(list), sizeof(buf));
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!layer_by_name(tok, &id)) {
			errorf("unknown layer '%s' in -l (layers: %s)", tok, names);
			return -1;
		}
		*mask |= 1u << id;
	}
	if (!*mask) {
		errorf("-l needs at least one layer (%s)", names);
		return -1;
	}
	return 0;
}

/* A tracepoint some layer attaches to, or "syscalls" (every syscall tracepoint at once). */
static bool known_probe(const char *tp)
{
	int i, j;

	if (!strcmp(tp, "syscalls"))
		return true;
	for (i = 0; i < NLAYERS; i++)
		for (j = 0; j < layers[i]->nevents; j++)
			if (!strcmp(layers[i]->events[j].tp, tp))
				return true;
	return false;
}

int parse_fail_probe(struct trace_config *c, const char *tp)
{
	if (!known_probe(tp)) {
		errorf("--fail-probe '%s': no layer attaches to a tracepoint of that name", tp);
		return -1;
	}
	if (c->nfail_tp == MAX_FAIL_TPS) {
		errorf("too many --fail-probe options");
		return -1;
	}
	c->fail_tp[c->nfail_tp++] = tp;
	return 0;
}

int parse_seconds(const char *what, const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* as written, digits and one '.': strtod also takes " 5", "0x1", "1e3" and "inf" */
	if (!cli_decimal(s) || errno || end == s || *end || !isfinite(v) || v < 0.001 ||
	    v > 31536000) {
		errorf("bad %s '%s': expected seconds, from 0.001 to 31536000 (a year)", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

int parse_long(const char *what, const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	/* as written: strtol would take leading blanks and a '+' */
	if (errno || end == s || *end || v < min || v > max ||
	    !(isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1])))) {
		errorf("bad %s '%s': expected an integer from %ld to %ld", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* --hist-keys=N[,M]: N keys per per-CPU histogram map, M spill slots (default: as sized) */
static int parse_hist_keys(struct trace_config *c, const char *arg)
{
	const unsigned long max = 1ul << 20;
	unsigned long n, m = 0;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)*arg))
		goto bad;
	n = strtoul(arg, &end, 10);
	if (*end == ',') {
		if (!isdigit((unsigned char)end[1]))
			goto bad;
		m = strtoul(end + 1, &end, 10);
		if (!m)
			goto bad;
	}
	if (errno || *end || !n || n > max || m > max)
		goto bad;
	c->hist_keys = (uint32_t)n;
	c->spill_keys = (uint32_t)m;
	return 0;
bad:
	errorf("bad --hist-keys '%s': expected N or N,M, numbers of keys from 1 to %lu", arg, max);
	return -1;
}

/* -p takes a pid or tid; the filter matches the process (tgid) it belongs to. */
static int resolve_pid(const char *s, pid_t *tgid_out)
{
	char path[64], line[256];
	long pid, tgid = -1;
	FILE *f;

	if (parse_long("pid", s, 1, INT_MAX, &pid))
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f) {
		errorf("no such process: %ld", pid);
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	*tgid_out = (pid_t)(tgid > 0 ? tgid : pid);
	return 0;
}

/*
 * --stages: each name is a stage of every layer that has it (device) or of one (block.device).
 * The layers traced are then those with a stage asked, unless -l names them (each must have one).
 */
static int parse_stages(const char *list, struct trace_opts *t)
{
	struct trace_config *c = &t->cfg;
	char buf[1024], *tok, *save = NULL, *dot;
	bool any = false;
	unsigned int found;
	int i, s;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", list) >= sizeof(buf)) {
		errorf("bad --stages: a list of %zu characters; every stage's name fits in fewer "
		       "than %zu", strlen(list), sizeof(buf));
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		dot = strchr(tok, '.');
		found = 0;
		for (i = 0; i < NLAYERS; i++) {
			if (dot && (strncmp(tok, layers[i]->name, (size_t)(dot - tok)) ||
				    layers[i]->name[dot - tok]))
				continue;
			for (s = 0; s < layers[i]->nstages; s++) {
				const char *n = layers[i]->stages[s].name;

				if (n && !strcmp(n, dot ? dot + 1 : tok)) {
					c->stages[i] |= 1u << s;
					found |= 1u << i;
				}
			}
		}
		if (!found) {
			errorf("unknown stage '%s' in --stages (the stages are in --help)", tok);
			return -1;
		}
		if (!(t->stage_sets & (1u << found)))
			snprintf(t->stage_set_name[found], sizeof(t->stage_set_name[found]), "%s",
				 tok);
		t->stage_sets |= 1u << found;
		any = true;
	}
	if (!any) {	/* --stages '' or ',': no stage at all is not every stage */
		errorf("bad --stages '%s': name at least one stage (the stages are in --help)", list);
		return -1;
	}
	return 0;
}

/*
 * -l and --stages together: every layer traced has a stage asked, and every stage asked is of a
 * layer traced (a stage left out was dropped silently); --stages alone picks the layers.
 */
static int stages_layers(struct trace_opts *t)
{
	struct trace_config *c = &t->cfg;
	unsigned int with = 0, m;
	int i;

	for (i = 0; i < NLAYERS; i++)
		if (c->stages[i])
			with |= 1u << i;
	if (!with)
		return 0;
	if (!c->layers) {
		c->layers = with;
		return 0;
	}
	for (i = 0; i < NLAYERS; i++) {
		if ((c->layers & (1u << i)) && !(with & (1u << i))) {
			errorf("-l %s: none of its stages is in --stages", layers[i]->name);
			return -1;
		}
	}
	for (m = 1; m < 1u << NLAYERS; m++) {
		char names[64] = "";

		if (!(t->stage_sets & (1u << m)) || (m & c->layers))
			continue;
		for (i = 0; i < NLAYERS; i++)
			if (m & (1u << i))
				snprintf(names + strlen(names), sizeof(names) - strlen(names),
					 "%s%s", *names ? " or " : "", layers[i]->name);
		errorf("--stages %s: a stage of %s, which -l leaves out", t->stage_set_name[m],
		       names);
		return -1;
	}
	/* -l block --stages device: block's device, not also uring's and aio's (in the meta) */
	for (i = 0; i < NLAYERS; i++)
		if (!(c->layers & (1u << i)))
			c->stages[i] = 0;
	return 0;
}

int opt_once(const char *opt, const char *was, const char *arg, const char *last)
{
	if (!was)
		return 0;
	errorf("%s given twice ('%s', '%s'): it takes one (the last alone would be %s)", opt, was,
	       arg, last);
	return -1;
}

int opt_path(const char *opt, const char *was, const char *arg, const char *last)
{
	if (opt_once(opt, was, arg, last))
		return -1;
	if (!*arg) {	/* found out only once the work was done ("cannot create :") */
		errorf("bad %s '': expected a path", opt);
		return -1;
	}
	return 0;
}

/*
 * A filter holds one disk, process, cgroup or name: a second one given would replace the first
 * and the I/O of the first go untraced, silently. 0, or -1 said.
 */
static int filter_once(const char *opt, const char *was, const char *arg)
{
	return opt_once(opt, was, arg, "traced");
}

/* 1: o is one of the shared options and was taken; 0: not one of them; -1: bad (said). */
static int trace_opt(struct trace_opts *t, int o, const char *arg)
{
	struct trace_config *c = &t->cfg;
	long v;

	switch (o) {
	case 'd':
		if (filter_once("-d", t->disk, arg))
			return -1;
		t->disk = arg;
		return 1;
	case 'p':
		if (filter_once("-p", t->pid, arg))
			return -1;
		t->pid = arg;
		return 1;
	case 'c':
		if (filter_once("-c", c->cgroup, arg))
			return -1;
		c->cgroup = arg;
		return 1;
	case 'P': c->per_process = true; return 1;
	case 'O': c->per_opcode = true; return 1;
	case 'C': c->per_cgroup = true; return 1;
	case 'v': t->verbose++; return 1;
	case 'l':
		return parse_layers(arg, &c->layers) ? -1 : 1;
	case TOPT_STAGES:
		return parse_stages(arg, t) ? -1 : 1;
	case TOPT_COMM:
		if (filter_once("--comm", c->comm, arg))
			return -1;
		if (!*arg || strlen(arg) > 15) {
			errorf("bad --comm '%s': a thread name is 1 to 15 characters", arg);
			return -1;
		}
		c->comm = arg;
		return 1;
	case TOPT_DURATION:
		return parse_seconds("duration", arg, &t->lim.duration_s) ? -1 : 1;
	case TOPT_INFLIGHT:
		if (parse_long("--inflight", arg, 64, 1 << 24, &v))
			return -1;
		if (v & (v - 1)) {
			errorf("bad --inflight '%s': expected a power of two", arg);
			return -1;
		}
		c->inflight_slots = (uint32_t)v;
		return 1;
	case TOPT_FAIL_PROBE:
		return parse_fail_probe(c, arg) ? -1 : 1;
	case TOPT_FORCE_RAW_TP:
		c->force_raw_tp = true;
		return 1;
	case TOPT_NO_TAG_SLOTS:
		c->no_tag_slots = true;
		return 1;
	case TOPT_LOSE_COMPLETIONS:
		if (parse_long("--lose-completions", arg, 1, 1000000, &v))
			return -1;
		c->lose_completions = (uint32_t)v;
		return 1;
	case TOPT_STALE_AFTER:
		if (parse_long("--stale-after", arg, 1, 86400, &v))
			return -1;
		c->stale_ns = (uint64_t)v * 1000000000ULL;
		return 1;
	case TOPT_HIST_KEYS:
		return parse_hist_keys(c, arg) ? -1 : 1;
	}
	return 0;
}

int trace_getopt(struct trace_opts *t, int argc, char **argv, const char *own,
		 const struct option *lo)
{
	char shortopts[64];
	int o, r;

	if (!t->started) {
		t->started = true;
		opterr = 0;
		optind = 1;
	}
	t->lo = lo;
	snprintf(shortopts, sizeof(shortopts), ":" TRACE_OPTS_SHORT "%s", own);
	while ((o = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
		r = trace_opt(t, o, optarg);
		if (r < 0)
			return -2;
		if (!r)
			return o;
	}
	return -1;
}

int trace_opt_rest(const struct trace_opts *t, int o, char **argv, void (*usage)(FILE *f))
{
	char msg[256];

	if (o == 'h') {
		usage(stdout);
		return 1;
	}
	if (o == 'V') {
		printf("iostrata %s\n", IOSTRATA_VERSION);
		return 1;
	}
	errorf("%s", cli_getopt_problem(o, argv, t->lo, msg, sizeof(msg)));
	return -1;
}

int trace_opts_finish(struct trace_opts *t)
{
	struct trace_config *c = &t->cfg;
	struct statfs fs;
	struct stat st;
	unsigned int eff;

	if (stages_layers(t))
		return -1;
	/*
	 * A filter or a breakdown no layer that runs applies would be silently ignored. Without
	 * -l, -d runs the block layer alone (session.c), every available layer otherwise.
	 */
	eff = c->layers ? c->layers : t->disk ? 1u << LAYER_BLOCK : 0;
	if (c->layers && t->disk && !(c->layers & 1u << LAYER_BLOCK)) {
		errorf("-d %s: the disk filter applies to the block layer, which the layers chosen "
		       "(-l, --stages) leave out", t->disk);
		return -1;
	}
	if (eff && c->comm && !(eff & 1u << LAYER_SYSCALL)) {
		errorf("--comm %s: it filters the syscall layer, which %s", c->comm,
		       c->layers ? "the layers chosen (-l, --stages) leave out" :
		       "-d leaves out (the block layer alone)");
		return -1;
	}
	if (eff && c->per_opcode && !(eff & (1u << LAYER_URING | 1u << LAYER_AIO))) {
		errorf("-O: only the uring and aio layers have opcodes, and %s", c->layers ?
		       "the layers chosen (-l, --stages) leave both out" :
		       "-d leaves both out (the block layer alone)");
		return -1;
	}
	if (eff == 1u << LAYER_BLOCK && c->per_process) {
		errorf("-P: the block layer has no per-process histograms (the uring, aio and "
		       "syscall layers have)");
		return -1;
	}
	/* a bio-based disk's -d traced nothing, silently, while the kernel counted its I/O */
	if (t->disk && (disk_resolve(t->disk, &c->dev) || disk_has_requests(t->disk)))
		return -1;
	if (t->pid && resolve_pid(t->pid, &c->tgid))
		return -1;
	/*
	 * Tracing stops when -p's process ends: its pid, free again, would be given to another
	 * process, whose I/O the filter would then count as this one's. A pidfd stands for the
	 * process itself, not its number. Without one (kernels before 5.3), tracing goes on.
	 */
	if (c->tgid) {
		int fd = (int)syscall(SYS_pidfd_open, c->tgid, 0);

		if (fd > 0) {
			t->lim.stop_fd = fd;
			t->lim.stop_pid = c->tgid;
		} else {
			vlog("-p %d: no pidfd (%s): tracing will not stop when it ends",
			     (int)c->tgid, strerror(errno));
		}
	}
	if (c->cgroup && access(c->cgroup, F_OK)) {
		errorf("-c %s: %s", c->cgroup, strerror(errno));
		return -1;
	}
	/* a usage error (exit 2) like a missing path, not a failure to trace */
	if (c->cgroup && (statfs(c->cgroup, &fs) || fs.f_type != 0x63677270 /* CGROUP2 */ ||
			  stat(c->cgroup, &st) || !S_ISDIR(st.st_mode))) {	/* cgroup.procs */
		errorf("-c %s: not a cgroup v2 directory", c->cgroup);
		return -1;
	}
	return 0;
}

int trace_session_open(const struct trace_opts *t, bool json, struct session **s)
{
	log_init("iostrata", json, t->verbose);
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return -1;
	}
	session_signals();
	return session_open(&t->cfg, false, s, NULL, NULL);
}

const char *output_cut_short(void)
{
	static char msg[128];
	char name[32];

	snprintf(msg, sizeof(msg), "stopped by %s while stdout was full: the output is cut short",
		 stop_signal_name(session_stop_signal(), name, sizeof(name)));
	return msg;
}

int sink_written(int err)
{
	if (!err)
		return 0;
	if (errno == EPIPE)
		return -1;	/* a closed pipe is a reader's way to stop */
	if (errno == ECANCELED) {	/* stopout: a stop, and stdout full (stopout.h) */
		errorf("%s", output_cut_short());
		return 1;
	}
	errorf("writing the output: %s", strerror(errno));
	return 1;
}
