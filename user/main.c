// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata: I/O latency, layer by layer. A table of commands; tracing is the default one.
 * Each command builds its configuration and runs a session (session.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
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

/*
 * What is still buffered for stdout (a --help, a report's last line) goes out here: one that
 * cannot (a full disk, stdout closed) makes a successful command fail, saying so. A reader
 * gone (EPIPE) is a way to stop, as everywhere. stdout not being a terminal, its buffer holds
 * any such text whole (64 KiB), so its error is this flush's, with its errno; each command
 * flushes what it streams (intervals, records) itself.
 */
static char out_buf[1 << 16];

static int out_done(int status)
{
	if (status)
		return status;
	errno = 0;
	if (fflush(stdout) && errno != EPIPE) {
		errorf("writing the output: %s", strerror(errno ? errno : EIO));
		return 1;
	}
	return status;
}

/*
 * stdin, stdout or stderr closed (`iostrata record -o F >&-`): the first file opened would take
 * its number, and what is printed to it would land there (the view in the recording, an error
 * line in an HTML page). Each closed one holds a descriptor on which every read and write fails
 * with EBADF, as on the closed one.
 */
static void std_fds_held(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/", O_PATH) != fd)
			_exit(1);	/* no descriptor left to say it on */
}

int main(int argc, char **argv)
{
	bool json = false;
	size_t i;
	int a;

	std_fds_held();
	/*
	 * A reader that goes away (head, a closed pipe) is a way to stop, exit 0 (iostrata.8):
	 * every command sees EPIPE from its write instead of dying of SIGPIPE.
	 */
	signal(SIGPIPE, SIG_IGN);
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
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
				a = out_done(commands[i].run(argc - 1, argv + 1));
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
	return out_done(cmd_trace(argc, argv));
}
