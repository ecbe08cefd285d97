/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options compare and sched-ab share, parsed once, here: --threshold, --seed and --gate;
 * and what the gates say once the comparison is made. Each command puts CMP_OPTS_LONG in its
 * option table, numbers its own long-only options from COPT_NEXT, and offers every option to
 * cmp_opt() first.
 */
#ifndef IOSTRATA_CMP_OPTS_H
#define IOSTRATA_CMP_OPTS_H

#include "compare.h"

enum { COPT_THRESHOLD = 256, COPT_GATE, COPT_SEED, COPT_NEXT };

#define CMP_OPTS_LONG							\
	{ "threshold", required_argument, NULL, COPT_THRESHOLD },		\
	{ "gate", required_argument, NULL, COPT_GATE },				\
	{ "seed", required_argument, NULL, COPT_SEED }

#define CMP_GATES_MAX 32

struct cmp_gate {
	char layer[64], stage[64];
	int q;		/* cmp_q_index */
};

struct cmp_gates {
	struct cmp_gate g[CMP_GATES_MAX];
	int n;
};

/* 1: o is one of the shared options and was taken; 0: not one of them; -1: bad (said). */
int cmp_opt(struct cmp_opts *o, struct cmp_gates *g, int opt, const char *arg);
/* Does every gate name a layer and stage compared? 0, or -1 said. */
int cmp_gates_check(const struct cmp_gates *g, const struct cmp_result *r);
/*
 * The gates' outcome, printed (or into w under -j): 3 when one is slower, else 0. A gate
 * passes only when the upper end of every label set's interval at its quantile lies below
 * 1 + limit (cmp_stage_hi): a regression beyond the limit is excluded. It is "not decided",
 * neither regressed nor passed, when reliable is false (verdicts the caller found unreliable:
 * every gate), when the events lost withheld its verdict (cmp_stage_lost), when no label set
 * had enough data at its quantile (a gate that judged nothing does not pass), or when an
 * interval reaches 1 + limit or beyond without being called slower;
 * then, unless a gate regressed, the status is 4 and "gates not decided: exit 4" is printed
 * too (under -j, "gates_decided": false).
 */
int cmp_gates_say(const struct cmp_gates *g, const struct cmp_result *r, bool reliable,
		  struct jw *w);

#endif
