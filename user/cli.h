/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command-line pieces shared by iostrata and iostrata-load. */
#ifndef IOSTRATA_CLI_H
#define IOSTRATA_CLI_H

#include <stddef.h>

/*
 * The one-line message for what getopt_long returned as a problem: ':' (an option missing its
 * argument; the option string must start with ':') or '?' (an unknown option).
 */
const char *cli_getopt_problem(int c, char **argv, char *buf, size_t len);

#endif
