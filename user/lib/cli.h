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
 * argument; the option string must start with ':') or '?' (an unknown option, or an
 * abbreviation of several of lo's long options, which are named).
 */
struct option;
const char *cli_getopt_problem(int c, char **argv, const struct option *lo, char *buf,
			       size_t len);

/*
 * s with each control character (C0, DEL, C1) and each byte of no well-formed UTF-8 sequence
 * shown as '?': a name holding a newline or an escape sequence (a file, a disk named on the
 * command line, a load's last line) stays one line and drives no terminal.
 */
void cli_put_clean(FILE *f, const char *s);
/*
 * s with C escapes where cli_put_clean shows '?', so that the name can be read back: \n, \t,
 * \r, and \xNN for each byte of any other character not shown; a backslash as \\.
 */
void cli_put_escaped(FILE *f, const char *s);
/* One error line: "PROG: error: MSG", or {"type":"error","message":MSG} under --json. */
void cli_error_line(FILE *f, const char *prog, bool json, const char *msg);

/*
 * A decimal integer as written: digits only (no blank, sign, 0x or exponent, which strtoull
 * would take: " -1" as 2^64 - 1), from min to max. 0, or -1 (not one, or out of range).
 */
int cli_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A decimal number as written: digits with at most one '.', nothing else. */
bool cli_decimal(const char *s);

/*
 * A time in ns: a decimal number as written (cli_decimal: no exponent, sign or blank) and a unit,
 * ns, us, ms, s, or m (minutes; never milliseconds), none being seconds: "10s", "500ms",
 * "250us", "1000ns", "1.5m", "2". 0 only when zero_ok. 0 or -1.
 */
int cli_parse_time(const char *s, bool zero_ok, uint64_t *out);

#endif
