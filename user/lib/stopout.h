/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stdout that a stop can end. With SA_RESTART (a signal must not cut a record in two while the
 * reader keeps up), a write() blocked on a full pipe nobody reads was restarted after every
 * stop signal: the tracer could not be stopped but by SIGKILL, its programs attached, a disk's
 * scheduler left switched. Through stopout, stdout waits for room in poll() beside a pipe the
 * stop's handler writes to, and writes no more than the room it found. It waits as long as the
 * reader needs while no stop is asked (records stay whole); once one is, STOPOUT_GRACE_MS at a
 * time (a reader that reads what is left only after the stop, as a script's does, still gets it
 * all), and after a second stop not at all. What it could not write then fails with ECANCELED:
 * the output cut short, for the command to say.
 */
#ifndef IOSTRATA_STOPOUT_H
#define IOSTRATA_STOPOUT_H

#define STOPOUT_GRACE_MS 2000

/* stdout through the writer (its buffering as before); 0, or -1 with errno (stdout as it was) */
int stopout_init(void);
/* In a stop signal's handler: a write waiting for room waits no more than the grace, or (a
 * second stop) not at all. Async-signal-safe. */
void stopout_stop(void);
/* The errno of the first write to stdout that failed (EPIPE: the reader went), 0 if none did:
 * stdio keeps only that one did. */
int stopout_error(void);

#endif
