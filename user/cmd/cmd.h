/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* iostrata's commands: each parses its options, builds a configuration and runs a session. */
#ifndef IOSTRATA_CMD_H
#define IOSTRATA_CMD_H

#include <stdbool.h>
#include "config.h"
#include "output.h"
#include "session.h"

#define IOSTRATA_VERSION "0.1.0"

/* Each takes argv from the command's name on (argv[0]) and returns the exit status. */
int cmd_trace(int argc, char **argv);
int cmd_snoop(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_sched_ab(int argc, char **argv);

/*
 * A command's answer after writing to stdout (err: its writer's -1, errno set): 0 written, -1 a
 * closed pipe (a reader's way to stop: quietly), 1 any other error (said), a stop that cut the
 * output short (stopout.h) among them.
 */
int sink_written(int err);
/* "stopped by SIGINT while stdout was full: ..." (a write stopout failed with ECANCELED) */
const char *output_cut_short(void);

/*
 * An option that takes one value given a second (was: the first, NULL: none yet): the first
 * would be dropped, silently. 0, or -1 said: "the last alone would be LAST".
 */
int opt_once(const char *opt, const char *was, const char *arg, const char *last);
/* opt_once, for an option naming a file or directory: and not "", which names none. */
int opt_path(const char *opt, const char *was, const char *arg, const char *last);

/* Root, or the capabilities loading and attaching tracing programs takes. */
bool privileged(void);

#endif
