// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <stdio.h>
#include "cli.h"

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
