// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata: I/O latency, layer by layer. A table of commands; tracing is the default one.
 * Each command builds its configuration and runs a session (session.h).
 */
#include <ctype.h>
#include <signal.h>
#include <string.h>
#include "cmd.h"
#include "log.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "snoop", cmd_snoop },
	{ "features", cmd_features },
	{ "calibrate", cmd_calibrate },
	{ "serve", cmd_serve },
	{ "record", cmd_record },
	{ "report", cmd_report },
	{ "compare", cmd_compare },
	{ "sched-ab", cmd_sched_ab },
};

int main(int argc, char **argv)
{
	bool json = false;
	size_t i;
	int a;

	/*
	 * A reader that goes away (head, a closed pipe) is a way to stop, exit 0 (iostrata.8):
	 * every command sees EPIPE from its write instead of dying of SIGPIPE.
	 */
	signal(SIGPIPE, SIG_IGN);
	/*
	 * -j is known before parsing, so that parse errors are JSON too: up to "--" (what follows
	 * is sched-ab's load command's), and only for commands that have it (report and serve
	 * have not: their error about it is plain text).
	 */
	if (argc < 2 || (strcmp(argv[1], "report") && strcmp(argv[1], "serve")))
		for (a = 1; a < argc && strcmp(argv[a], "--"); a++)
			json |= !strcmp(argv[a], "-j") || !strcmp(argv[a], "--json");
	log_init("iostrata", json, 0);
	if (argc > 1) {
		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[1], commands[i].name)) {
				a = commands[i].run(argc - 1, argv + 1);
				log_flush_warnings();	/* those held back; an error dropped them */
				return a;
			}
		/* a word where a command or an interval goes: a command mistyped, not an interval */
		if (isalpha((unsigned char)argv[1][0])) {
			errorf("unknown command '%s' (snoop, record, report, compare, sched-ab, serve, "
			       "features, calibrate; see --help)", argv[1]);
			return 2;
		}
	}
	return cmd_trace(argc, argv);
}
