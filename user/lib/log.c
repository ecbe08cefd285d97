// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "log.h"

static const char *prog = "iostrata";
static bool json;
static int verbose;
static bool muted;
static char muted_error[512];
static bool defer;
static char deferred[16][512];
static int ndeferred, nmore;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (verbose < (level == LIBBPF_DEBUG ? 2 : 1))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_init(const char *name, bool as_json, int level)
{
	prog = name;
	json = as_json;
	verbose = level;
	libbpf_set_print(libbpf_print);
}

int log_verbosity(void)
{
	return verbose;
}

bool log_json(void)
{
	return json;
}

void log_mute(bool on)
{
	muted = on;
	if (on)
		muted_error[0] = '\0';
}

const char *log_muted_error(void)
{
	return muted_error;
}

void errorf(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!muted) {
		ndeferred = nmore = 0;	/* an error says only itself */
		cli_error_line(stderr, prog, json, msg);
		return;
	}
	if (!muted_error[0])
		snprintf(muted_error, sizeof(muted_error), "%s", msg);
	vlog("skipped: %s", msg);
}

void warnf(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (defer) {
		if (ndeferred < 16)
			snprintf(deferred[ndeferred++], sizeof(deferred[0]), "%s", msg);
		else
			nmore++;
		return;
	}
	fprintf(stderr, "%s: warning: ", prog);
	cli_put_clean(stderr, msg);
	fputc('\n', stderr);
}

void log_defer_warnings(void)
{
	defer = true;
}

void log_flush_warnings(void)
{
	int i, n = ndeferred, more = nmore;

	defer = false;
	ndeferred = nmore = 0;
	for (i = 0; i < n; i++)
		warnf("%s", deferred[i]);
	if (more)
		warnf("%d more warnings", more);
}

void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}
