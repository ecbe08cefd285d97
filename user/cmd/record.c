// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata record -o FILE [trace options]: trace as `iostrata` does and write the recording
 * `iostrata report` reads: a meta record, the interval records, an end record (NDJSON, one
 * record a line, docs/interval.schema.json). stdout shows the usual view, or with -j the very
 * lines the file gets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "log.h"
#include "recorder.h"
#include "trace_opts.h"

struct recorder_cmd {
	const struct trace_args *a;
	struct recorder *rc;
	bool out_closed;	/* stdout went away (a closed pipe), or failed */
	int out_errno;		/* why it failed, when not a closed pipe */
};

/* The sink: the interval to the file (and stdout), then the view on stdout. */
static int record_interval(const struct interval *iv, void *arg)
{
	struct recorder_cmd *c = arg;

	if (recorder_interval(c->rc, iv))
		return 1;
	if (!c->a->json && !c->out_closed) {
		errno = 0;
		output_text(iv, &c->a->text, stdout);
		if (ferror(stdout)) {	/* the view stops; the file goes on */
			c->out_closed = true;
			if (errno != EPIPE)
				c->out_errno = errno ? errno : EIO;
		}
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct trace_args a = { .t = TRACE_OPTS_DEFAULT,
				.json = log_json() };
	struct layer_report reps[NLAYERS];
	struct recorder_cmd c = { .a = &a };
	struct rec_meta m = { .cfg = &a.t.cfg, .lim = &a.t.lim, .argc = argc, .argv = argv,
			      .reps = reps };
	struct session *s;
	const char *reason;
	int r = trace_args_parse(argc, argv, &a, true), err, out_errno;

	if (r)
		return r > 0 ? 0 : 2;
	log_init("iostrata", a.json, a.t.verbose);
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	/* the file first: a name that cannot be written is said before anything loads */
	c.rc = recorder_create(a.output, a.force, a.json);
	if (!c.rc)
		return 1;
	session_signals();
	memset(reps, 0, sizeof(reps));
	if (session_open(&a.t.cfg, false, &s, reps, NULL)) {
		recorder_discard(c.rc);
		return 1;
	}
	m.s = s;
	if (recorder_meta(c.rc, &m)) {	/* not even the meta record: no file is left */
		session_close(s);
		recorder_discard(c.rc);
		return 1;
	}
	r = session_run(s, &a.t.lim, record_interval, &c);
	if (session_stopping())
		reason = "signal";
	else if (r)
		reason = "error";
	else if (session_ended_by_fd(s))
		reason = "process_exited";
	else if (a.t.lim.count && recorder_intervals(c.rc) >= a.t.lim.count)
		reason = "count";
	else
		reason = "duration";
	session_close(s);
	out_errno = c.out_errno ? c.out_errno : recorder_echo_errno(c.rc);
	err = recorder_close(c.rc, reason);
	if (!r && !err && out_errno) {	/* a view lost unsaid would pass for a whole one */
		if (out_errno == ECANCELED)
			errorf("%s (the recording %s is whole)", output_cut_short(), a.output);
		else
			errorf("writing the output: %s (the recording %s is whole)",
			       strerror(out_errno), a.output);
		err = 1;
	}
	return r ? r : err;
}
