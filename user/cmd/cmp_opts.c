// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options compare and sched-ab share (cmp_opts.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cmp_opts.h"
#include "json.h"
#include "log.h"

/* "layer:stage:q". 0, or -1 said. */
static int parse_gate(const char *s, struct cmp_gate *g)
{
	const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

	if (!c1 || !c2 || c1 == s || c2 == c1 + 1 || (size_t)(c1 - s) >= sizeof(g->layer) ||
	    (size_t)(c2 - c1 - 1) >= sizeof(g->stage) || (g->q = cmp_q_index(c2 + 1)) < 0) {
		errorf("bad --gate '%s': expected LAYER:STAGE:Q with Q one of p50, p90, p99, p99.9",
		       s);
		return -1;
	}
	snprintf(g->layer, sizeof(g->layer), "%.*s", (int)(c1 - s), s);
	snprintf(g->stage, sizeof(g->stage), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	return 0;
}

int cmp_opt(struct cmp_opts *o, struct cmp_gates *g, int opt, const char *arg)
{
	char *end, num[64];
	double pct;
	uint64_t v;
	size_t n;

	switch (opt) {
	case COPT_THRESHOLD:
		/* digits and a point, then an optional %: not 0x10, 1e1 or " 5" */
		n = strlen(arg);
		snprintf(num, sizeof(num), "%.*s", (int)(n && arg[n - 1] == '%' ? n - 1 : n), arg);
		errno = 0;
		pct = strtod(arg, &end);
		if (errno || end == arg || (*end && strcmp(end, "%")) || !(pct >= 0 && pct <= 100) ||
		    n >= sizeof(num) || !cli_decimal(num)) {
			errorf("bad --threshold '%s': a percentage from 0 to 100", arg);
			return -1;
		}
		o->threshold = pct / 100;
		return 1;
	case COPT_GATE:
		if (g->n == CMP_GATES_MAX) {
			errorf("too many --gate options (at most %d)", CMP_GATES_MAX);
			return -1;
		}
		return parse_gate(arg, &g->g[g->n++]) ? -1 : 1;
	case COPT_SEED:
		if (cli_uint(arg, 0, UINT64_MAX, &v)) {
			errorf("bad --seed '%s': expected an integer from 0 to %llu", arg,
			       (unsigned long long)UINT64_MAX);
			return -1;
		}
		o->seed = v;
		return 1;
	}
	return 0;
}

int cmp_gates_check(const struct cmp_gates *g, const struct cmp_result *r)
{
	bool found;
	int i;

	for (i = 0; i < g->n; i++) {
		cmp_regressed(r, g->g[i].layer, g->g[i].stage, g->g[i].q, &found);
		if (!found) {
			errorf("--gate %s:%s:%s: no such layer and stage in both A and B",
			       g->g[i].layer, g->g[i].stage, cmp_q_name[g->g[i].q]);
			return -1;
		}
	}
	return 0;
}

/*
 * A gate is decided when its answer is known: slower in some label set (regressed), or not
 * slower beyond the limit in every label set with a verdict, the upper end of each interval
 * below 1 + limit (passed: the data exclude a regression the limit would call). A "no change"
 * whose interval reaches past 1 + limit is no pass: the data do not exclude a slowdown the
 * gate exists to catch (CI reads "passed" as "not slower"). One whose quantile had not enough data in every label set,
 * or whose verdict the events lost could change (in some label set), or whose verdicts are
 * unreliable, is not decided either: a gate that checked nothing does not pass.
 */
int cmp_gates_say(const struct cmp_gates *g, const struct cmp_result *r, bool reliable,
		  struct jw *w)
{
	bool found, slower, judged, passed, decided, lost;
	char why[160], hs[32];
	int status = 0, i;
	double hi;

	if (w)
		jw_arr(w, "gates");
	for (i = 0; i < g->n; i++) {
		const struct cmp_gate *x = &g->g[i];

		/* a label set called slower is a regression, whatever another's verdict withheld */
		slower = reliable && cmp_regressed(r, x->layer, x->stage, x->q, &found);
		lost = !slower && cmp_stage_lost(r, x->layer, x->stage, x->q);
		judged = reliable && !lost && cmp_stage_compared(r, x->layer, x->stage, x->q) > 0;
		hi = cmp_stage_hi(r, x->layer, x->stage, x->q);
		passed = judged && !slower && hi < 1 + r->limit;
		decided = slower || passed;
		/* a regression found is the answer, whatever another gate could not decide */
		status = slower ? 3 : !decided && status != 3 ? 4 : status;
		if (!reliable)
			snprintf(why, sizeof(why), "the verdicts are UNRELIABLE");
		else if (lost)
			snprintf(why, sizeof(why), "events lost could change its verdict");
		else if (!judged)
			snprintf(why, sizeof(why), "not enough data");
		else
			snprintf(why, sizeof(why), "its interval reaches %s: a slowdown beyond "
				 "1 + %.2f%% is not excluded", cmp_ratio_str(hs, sizeof(hs), hi),
				 100 * r->limit);
		if (w) {
			jw_obj(w, NULL);
			jw_str(w, "layer", x->layer);
			jw_str(w, "stage", x->stage);
			jw_str(w, "q", cmp_q_name[x->q]);
			jw_bool(w, "regressed", slower);
			jw_bool(w, "passed", passed);
			jw_bool(w, "judged", judged);
			jw_bool(w, "decided", decided);
			if (!decided)
				jw_str(w, "reason", why);
			jw_end_obj(w);
		} else {
			printf("gate %s:%s:%s: %s%s%s\n", x->layer, x->stage, cmp_q_name[x->q],
			       slower ? "REGRESSED (slower beyond the limit)" :
			       passed ? "passed (not slower beyond the limit)" : "not decided (",
			       decided ? "" : why, decided ? "" : ")");
		}
	}
	if (w)
		jw_end_arr(w);
	if (status == 4 && w)
		jw_bool(w, "gates_decided", false);
	else if (status == 4)
		printf("gates not decided: exit 4\n");
	return status;
}
