// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "json.h"
#include "utf8.h"

/*
 * The long options that "--name" abbreviates (name up to any '='), as " --a, --b" in buf: how
 * many there are. getopt_long calls a prefix of two or more ambiguous, and says so only on its
 * own stderr line, which iostrata mutes (opterr is not used: the error is one line of ours).
 */
static int cli_abbrev_of(const char *name, size_t n, const struct option *lo, char *buf,
			 size_t len)
{
	size_t used = 0;
	int count = 0;

	buf[0] = '\0';
	for (; lo && lo->name; lo++) {
		if (strncmp(lo->name, name, n))
			continue;
		if (strlen(lo->name) == n)	/* an exact name is never ambiguous */
			return 0;
		if (used < len) {
			int w = snprintf(buf + used, len - used, "%s--%s", count ? ", " : "",
					 lo->name);

			used += w > 0 ? (size_t)w : 0;
		}
		count++;
	}
	return count;
}

const char *cli_getopt_problem(int c, char **argv, const struct option *lo, char *buf,
			       size_t len)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	char names[160];

	if (c == ':')
		snprintf(buf, len, "option '%s' needs an argument", arg);
	else if (!strncmp(arg, "--", 2) && !optopt && n > 2 &&
		 cli_abbrev_of(arg + 2, n - 2, lo, names, sizeof(names)) > 1)
		snprintf(buf, len, "ambiguous option '%.*s': %s (see --help)", (int)n, arg, names);
	else if (!strncmp(arg, "--", 2) && eq)	/* --json=1: a known flag given a value */
		snprintf(buf, len, optopt ? "option '%.*s' takes no value (see --help)" :
			 "unknown option '%.*s' (see --help)", (int)(eq - arg), arg);
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
		fprintf(f, "%s: error: ", prog);
		cli_put_clean(f, msg);
		fputc('\n', f);
	}
}

void cli_put_clean(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t prev = 0;
	int n;

	/* utf8_printable's rule, without its buffer */
	for (; *p; p += n) {
		if (utf8_shown(p, &n, &prev))
			fwrite(p, 1, (size_t)n, f);
		else
			fputc('?', f);
	}
}

void cli_put_escaped(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t prev = 0;
	int n, i;

	for (; *p; p += n) {
		if (utf8_shown(p, &n, &prev)) {
			if (*p == '\\')
				fputc('\\', f);
			fwrite(p, 1, (size_t)n, f);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else if (*p == '\t') {
			fputs("\\t", f);
		} else if (*p == '\r') {
			fputs("\\r", f);
		} else {
			for (i = 0; i < n; i++)
				fprintf(f, "\\x%02x", p[i]);
		}
	}
}

int cli_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	const char *p;
	char *end;

	for (p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	errno = 0;
	v = strtoull(s, &end, 10);	/* decimal: 010 is ten, not eight */
	if (p == s || errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

bool cli_decimal(const char *s)
{
	bool dot = false, digit = false;

	for (; *s; s++) {
		if (*s == '.' && !dot)
			dot = true;
		else if (isdigit((unsigned char)*s))
			digit = true;
		else
			return false;
	}
	return digit;
}

int cli_parse_time(const char *s, bool zero_ok, uint64_t *out)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 }, { "m", 60e9 },
	};
	size_t n = strspn(s, "0123456789."), i;
	char num[32];
	double v, mul = 0;

	/* the number as written: digits with at most one '.' (strtod would also take "1e3",
	 * " 5", "+5", "0x10" and "inf"), then one of the units, nothing else */
	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n);
	num[n] = '\0';
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s + n, units[i].unit))
			mul = units[i].ns;
	if (!mul || !cli_decimal(num))
		return -1;
	v = strtod(num, NULL);
	/* a time below 1 ns is not 0 */
	if (!isfinite(v) || (!zero_ok && v == 0) || (v > 0 && v * mul < 1) || v * mul > 1e16)
		return -1;
	/* to the nearest ns: 8.2 * 1e6 is 8199999.999999999 in binary, and 8.2ms is 8200000 ns */
	*out = (uint64_t)(v * mul + 0.5);
	return 0;
}
