/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The signals that stop iostrata and iostrata-load, one list for both: every catchable signal
 * whose default action ends the process (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM,
 * SIGXCPU, SIGPWR, SIGRTMIN..SIGRTMAX, ...). Left to its default, any of them ended the process
 * where it stood: a disk's scheduler left switched, BPF programs' output lost, a load's file or
 * an output's temporary file left behind. Not among them: SIGPIPE (ignored: a closed reader is
 * EPIPE), and the faults a handler cannot return from (SIGSEGV, SIGBUS, SIGFPE, SIGILL).
 */
#ifndef IOSTRATA_STOPSIG_H
#define IOSTRATA_STOPSIG_H

#include <signal.h>
#include <stddef.h>

/* set: every stop signal (to block around what must not be cut in two) */
void stop_signals_set(sigset_t *set);
/*
 * sa for every stop signal; one the process was started ignoring stays ignored (nohup: a
 * hangup; a shell's background job: SIGQUIT), except SIGINT and SIGTERM, which always stop it.
 * SIGSEGV, SIGBUS, SIGFPE and SIGILL sent by a process (kill -SEGV) stop it too, through
 * sa's handler (not an SA_SIGINFO one); a real fault still ends it at once, as by default.
 */
void stop_signals_catch(const struct sigaction *sa);
/* "SIGUSR1", "SIGRTMIN", "SIGRTMIN+3", "SIGRTMAX": sig's name in buf */
const char *stop_signal_name(int sig, char *buf, size_t len);

#endif
