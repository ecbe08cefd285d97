/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The trace options: what `iostrata` and `iostrata record` share (filters, label sets, layers,
 * the text view, INTERVAL COUNT and --duration), parsed once for both.
 */
#ifndef IOSTRATA_TRACE_OPTS_H
#define IOSTRATA_TRACE_OPTS_H

#include <stdbool.h>
#include "config.h"
#include "output.h"
#include "session.h"

struct trace_args {
	struct trace_config cfg;
	struct run_limits lim;
	struct text_opts text;
	bool json;
	int verbose;
	/* record only */
	const char *output;	/* -o FILE */
	bool force;		/* --force: overwrite FILE */
};

/*
 * Parse argv (from the command's name on). record: also -o FILE (required) and --force.
 * 0 to go on, 1 when done (help, version), -1 on a usage error (said).
 */
int trace_parse(int argc, char **argv, struct trace_args *a, bool record);

#endif
