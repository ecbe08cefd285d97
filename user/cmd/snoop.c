// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata snoop [--slower DURATION] [OPTIONS]: one line (or NDJSON record) per request at least
 * DURATION long, with every boundary iostrata saw for it. The threshold is applied in the
 * programs: only slow requests cross to user space, through a ring buffer; what finds no room
 * there is counted and printed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "cmd.h"
#include "log.h"
#include "trace_opts.h"
#include "sysinfo.h"

struct snoop_args {
	struct trace_opts t;
	bool json;
	struct snoop_counts n;	/* in all */
};

static const char usage_head[] =
"Usage: iostrata snoop [--slower DURATION] [OPTIONS]\n"
"\n"
"One line per request whose total latency is DURATION or more (default 10ms;\n"
"0: every request), per layer that saw it, with the time of every boundary\n"
"iostrata saw for it and each stage between them; its process, thread, cgroup\n"
"v2 (taken where it was submitted), disk or file. Only slow requests leave the\n"
"kernel; records the ring buffer had no room for are counted and printed.\n"
"\n"
"      --slower=DURATION  the threshold: 10ms, 500us, 1s, 0 (default 10ms)\n";

static const char usage_own[] =
"  -j, --json            one NDJSON record per request on stdout\n"
"      --ringbuf=BYTES   ring buffer size, a power of two >= 4096 (default 4 MiB)\n";

static const char usage_tail[] =
"\n"
"Examples:\n"
"  iostrata snoop                        requests of 10 ms or more, until Ctrl-C\n"
"  iostrata snoop --slower 1ms -l block  block requests of 1 ms or more\n";

static void usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(trace_opts_help_what, f);
	fputs(usage_own, f);
	fputs(trace_opts_help_knobs, f);
	usage_layers(f);
	fputs(usage_tail, f);
}

enum { OPT_SLOWER = TOPT_NEXT, OPT_RINGBUF };

static const struct option long_opts[] = {
	TRACE_OPTS_LONG,
	{ "slower", required_argument, NULL, OPT_SLOWER },
	{ "json", no_argument, NULL, 'j' },
	{ "ringbuf", required_argument, NULL, OPT_RINGBUF },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/* 0 ok, 1 exit 0 (help, version), -1 usage error (said) */
static int parse_args(int argc, char **argv, struct snoop_args *a)
{
	struct trace_config *c = &a->t.cfg;
	long v;
	int o;

	while ((o = trace_getopt(&a->t, argc, argv, "jhV", long_opts)) != -1) {
		switch (o) {
		case -2: return -1;
		case OPT_SLOWER:
			if (cli_parse_time(optarg, true, &c->snoop_slower_ns)) {
				errorf("bad --slower '%s': expected a time such as 10ms, 500us or 0",
				       optarg);
				return -1;
			}
			break;
		case OPT_RINGBUF:
			if (parse_long("--ringbuf", optarg, 4096, 1L << 30, &v))
				return -1;
			if (v & (v - 1)) {
				errorf("bad --ringbuf '%s': expected a power of two", optarg);
				return -1;
			}
			c->snoop_rb_bytes = (uint32_t)v;
			break;
		case 'j': a->json = true; break;
		default:	/* -h, -V, ':' or '?' */
			return trace_opt_rest(&a->t, o, argv, usage);
		}
	}
	if (optind < argc) {
		errorf("unexpected argument '%s' (see iostrata snoop --help)", argv[optind]);
		return -1;
	}
	return trace_opts_finish(&a->t);
}

/*
 * Set once a write to stdout failed (its reader gone, or an error said): the session then
 * still ends its interval, whose sink must not write again (stdout's error flag would stand
 * for a new write error, with whatever errno an earlier call left: "No such file or
 * directory"), and no second line is said.
 */
static int out_closed;	/* 0 open; else what written() answered: -1 a reader gone, 1 an error */

static int written(int err)
{
	int r = sink_written(err);

	if (r)
		out_closed = r;
	return r;
}

/*
 * After each read of the ring buffer: what was printed goes out now, and a reader that went away
 * stops snoop even when nothing is slow (a pipe's write end polls POLLERR once no one reads).
 */
static int batch_done(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO };

	if (fflush(stdout))
		return written(-1);
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) {
		errno = EPIPE;
		return written(-1);
	}
	return 0;
}

static int print_request(const struct req_rec *r, void *arg)
{
	struct snoop_args *a = arg;

	if (out_closed)
		return out_closed;
	if (!r)
		return batch_done();
	a->n.printed++;
	return written(a->json ? output_req_json(r, stdout) : output_req_text(r, stdout));
}

/*
 * Each interval: the records lost in it (their ring buffer was full), when there were any; and
 * the block completions no program received, for the summary.
 */
/*
 * Drops that do not hide a slow request: its record was sent before the histogram lookup
 * (*hist_full), or its CQE was seen and the reap's bound is what was lost (uring_ring_full,
 * uring_reap_unseen). Every other counter is a request iostrata could not follow.
 */
static bool followed_anyway(const char *drop)
{
	static const char *const tails[] = { "hist_full", "ring_full", "reap_unseen" };
	size_t n = strlen(drop), t, k;

	for (k = 0; k < sizeof(tails) / sizeof(tails[0]); k++) {
		t = strlen(tails[k]);
		if (n >= t && !strcmp(drop + n - t, tails[k]))
			return true;
	}
	return false;
}

static int print_lost(const struct interval *iv, void *arg)
{
	struct snoop_counts c = { 0 };
	struct snoop_args *a = arg;
	size_t n;
	int i;

	for (i = 0; i < iv->ndrops; i++) {
		n = strlen(iv->drops[i].name);
		if (n >= 10 && !strcmp(iv->drops[i].name + n - 10, "snoop_lost"))
			c.lost += iv->drops[i].n;
		else if (!strcmp(iv->drops[i].name, "complete_unseen"))
			a->n.unseen += iv->drops[i].n;
		else if (iv->drops[i].n && !followed_anyway(iv->drops[i].name)) {
			/* not followed: said in the interval and in all */
			snoop_nf_add(&c, iv->drops[i].name, iv->drops[i].n);
			snoop_nf_add(&a->n, iv->drops[i].name, iv->drops[i].n);
		}
	}
	a->n.lost += c.lost;
	if (out_closed)
		return out_closed;
	return written(a->json ? output_snoop_counts_json(iv->ts_ns, false, &c, stdout) :
		       output_snoop_counts_text(iv->ts_ns, false, &c, stdout));
}

int cmd_snoop(int argc, char **argv)
{
	struct snoop_args a = { .t = TRACE_OPTS_DEFAULT, .json = log_json() };
	struct session *s;
	int r;

	a.t.cfg.snoop = true;
	a.t.cfg.snoop_slower_ns = 10 * 1000 * 1000;
	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : 2;
	if (trace_session_open(&a.t, a.json, &s))
		return 1;
	if (session_snoop(s, print_request, &a)) {
		session_close(s);
		return 1;
	}
	/* the header once the first interval has started: what is done after it is counted */
	if (session_begin(s)) {
		session_close(s);
		return 1;
	}
	if (!a.json && (r = written(output_req_header(stdout)))) {
		session_close(s);	/* detached: nothing ran */
		return r > 0;
	}
	r = session_run(s, &a.t.lim, print_lost, &a);
	session_close(s);
	if (!r && !out_closed)
		r = sink_written(a.json ? output_snoop_counts_json(clock_ns(CLOCK_REALTIME), true,
								   &a.n, stdout) :
				 output_snoop_counts_text(0, true, &a.n, stdout)) > 0;
	return r ? r : out_closed > 0;
}
