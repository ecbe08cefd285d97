// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "stopsig.h"

static const int stop_sigs[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTRAP, SIGABRT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM,
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
	SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,
#ifdef SIGPWR
	SIGPWR,
#endif
	SIGSYS,
};

#define NSTOP (sizeof(stop_sigs) / sizeof(stop_sigs[0]))

void stop_signals_set(sigset_t *set)
{
	size_t i;
	int s;

	sigemptyset(set);
	for (i = 0; i < NSTOP; i++)
		sigaddset(set, stop_sigs[i]);
	for (s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaddset(set, s);
}

/* SIGSEGV, SIGBUS, SIGFPE, SIGILL: a fault, or a process asking the end with kill(1) */
static const int fault_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
static void (*fault_stop)(int);

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	(void)uc;
	/* kill(), sigqueue(), tgkill(): sent, not a fault (si_code <= 0): a stop like SIGTERM */
	if (si->si_code <= 0 && fault_stop) {
		fault_stop(sig);
		return;
	}
	/* a real fault: the instruction runs again on return and the default ends the process */
	sigaction(sig, &dfl, NULL);
}

void stop_signals_catch(const struct sigaction *sa)
{
	struct sigaction was, fault = { .sa_sigaction = on_fault,
					 .sa_flags = SA_SIGINFO | (sa->sa_flags & SA_RESTART) };
	sigset_t set;
	size_t i;
	int s;

	stop_signals_set(&set);
	for (s = 1; s < NSIG; s++) {
		if (sigismember(&set, s) != 1)
			continue;
		if (s != SIGINT && s != SIGTERM && !sigaction(s, NULL, &was) &&
		    was.sa_handler == SIG_IGN)
			continue;
		sigaction(s, sa, NULL);
	}
	if (sa->sa_flags & SA_SIGINFO)
		return;
	fault_stop = sa->sa_handler;
	for (i = 0; i < sizeof(fault_sigs) / sizeof(fault_sigs[0]); i++)
		sigaction(fault_sigs[i], &fault, NULL);
}

const char *stop_signal_name(int sig, char *buf, size_t len)
{
	const char *n = sig < SIGRTMIN || sig > SIGRTMAX ? sigabbrev_np(sig) : NULL;

	if (sig == SIGIO)	/* glibc's name for it is POLL; the docs and kill -l say IO */
		snprintf(buf, len, "SIGIO");
	else if (n)
		snprintf(buf, len, "SIG%s", n);
	else if (sig == SIGRTMIN || sig == SIGRTMAX)
		snprintf(buf, len, sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMAX");
	else if (sig > SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}
