/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command-line pieces shared by iostrata and iostrata-load. */
#ifndef IOSTRATA_CLI_H
#define IOSTRATA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The one-line message for what getopt_long returned as a problem: ':' (an option missing its
 * argument; the option string must start with ':') or '?' (an unknown option).
 */
const char *cli_getopt_problem(int c, char **argv, char *buf, size_t len);

/* One error line: "PROG: error: MSG", or {"type":"error","message":MSG} under --json. */
void cli_error_line(FILE *f, const char *prog, bool json, const char *msg);

/* "10s", "500ms", "250us", "1000ns", "1m", "2" (seconds) in ns; 0 only when zero_ok. 0 or -1. */
int cli_parse_time(const char *s, bool zero_ok, uint64_t *out);

#endif
