// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <stdio.h>
#include "cli.h"
#include "json.h"

const char *cli_getopt_problem(int c, char **argv, char *buf, size_t len)
{
	if (c == ':')
		snprintf(buf, len, "option '%s' needs an argument", argv[optind - 1]);
	else if (optopt && optopt < 256)
		snprintf(buf, len, "unknown option '-%c' (see --help)", optopt);
	else
		snprintf(buf, len, "unknown option '%s' (see --help)", argv[optind - 1]);
	return buf;
}

void cli_error_line(FILE *f, const char *prog, bool json, const char *msg)
{
	if (json) {
		struct jw w;

		jw_init(&w);
		jw_obj(&w, NULL);
		jw_str(&w, "type", "error");
		jw_str(&w, "message", msg);
		jw_end_obj(&w);
		jw_flush_line(&w, f);
		jw_free(&w);
	} else {
		fprintf(f, "%s: error: %s\n", prog, msg);
	}
}
