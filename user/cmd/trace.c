// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata [OPTIONS] [INTERVAL [COUNT]]: trace, and print an interval at a time, as text or
 * NDJSON, until Ctrl-C, COUNT intervals or --duration.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "log.h"
#include "trace_opts.h"

/* The sink: the interval on stdout, as text or NDJSON. */
static int print_interval(const struct interval *iv, void *arg)
{
	const struct trace_args *a = arg;
	int err;

	if (a->json) {
		err = output_json(iv, stdout);
	} else {
		output_text(iv, &a->text, stdout);
		err = ferror(stdout) ? -1 : 0;
	}
	if (!err)
		return 0;
	if (errno == EPIPE)
		return -1;	/* a closed pipe is a reader's way to stop */
	errorf("writing the output: %s", strerror(errno));
	return 1;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_args a = { .cfg = TRACE_CONFIG_DEFAULT, .lim = { .interval_s = 1.0 },
				.json = log_json() };
	struct session *s;
	int r = trace_parse(argc, argv, &a, false);

	if (r)
		return r > 0 ? 0 : 2;
	log_init("iostrata", a.json, a.verbose);
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	session_signals();
	if (session_open(&a.cfg, false, &s, NULL, NULL))
		return 1;
	r = session_run(s, &a.lim, print_interval, &a);
	session_close(s);
	return r;
}
