// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Intervals as Prometheus metrics (prom.h). Each latency series is one label set of
 * iostrata_latency_seconds: layer, stage, and the labels the records carry that a fleet can
 * afford: device (the whole disk, named as /proc/diskstats and node_exporter name it), op, the
 * syscall, and with -O the opcode, with -P the process name, with -C the cgroup path; never a
 * pid, never the block or request flags (records differing only there are summed). Counts only
 * ever grow, while their label set lives: one no I/O came to for --expire is dropped, so that
 * processes and containers come and go without filling --max-series for good (if it comes
 * back, its counts start again from 0: a counter reset, which rate() and increase() expect).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroups.h"
#include "histfmt.h"
#include "prom.h"
#include "utf8.h"

#define NAME_LEN 40

struct series {
	const char *layer, *stage;	/* the layer table's strings: they live as long as the binary */
	char device[32], op[24], syscall[24], opcode[24], comm[16], cgroup[CGROUP_LABEL_LEN];
	char *labels;			/* rendered once: layer="...",stage="...",... */
	/* 128 bits: 64 would wrap after 584 years of latency, 213 days of 1,000 s a second (1M
	 * I/O a second of 1 ms, or a thousand waiting threads), a reset only _sum would show */
	unsigned __int128 sum_ns;
	uint64_t unmeasured;
	uint64_t *buckets;		/* per merged bucket, not cumulative */
	uint64_t active_ns;		/* CLOCK_MONOTONIC: the end of its last interval with I/O */
	enum { S_REGULAR, S_HOST_ONLY, S_ALL_OTHER } kind;	/* the cap it counts against */
};

struct named {
	char name[NAME_LEN];
	uint64_t n;
};

struct prom {
	struct prom_opts o;
	int nb;				/* merged buckets, the overflow (+Inf) last */
	uint16_t of_slot[HIST_NSLOTS];	/* merged bucket of each of iostrata's slots */
	uint64_t le_ns[HIST_NSLOTS];	/* the largest value merged bucket j holds */
	char le_str[HIST_NSLOTS][24];
	struct series *s;		/* in order of birth; expired ones removed */
	size_t ns, cap;
	size_t regular;			/* series not folded ("other") */
	size_t host_only;		/* folded series keeping their host labels (fold) */
	uint32_t *table;		/* open addressing: index + 1 into s, 0 empty */
	size_t tcap;
	struct named drops[MAX_COUNTERS], events[MAX_COUNTERS];
	int ndrops, nevents;
	uint64_t folded;		/* label sets over max_series, once per interval each */
	uint64_t expired;		/* label sets dropped after expire_ns without I/O */
	uint64_t intervals;
	uint64_t last_ts_ns;
};

static void seconds_str(char *buf, size_t len, unsigned __int128 ns)
{
	snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, (uint64_t)(ns / UINT64_C(1000000000)),
		 (uint64_t)(ns % UINT64_C(1000000000)));
}

void prom_seconds(struct sbuf *out, uint64_t ns)
{
	char b[32];

	seconds_str(b, sizeof(b), ns);
	sbuf_puts(out, b);
}

/*
 * Merged buckets: everything below 2^PROM_FLOOR_LOG2 ns in the first; then each octave's 16
 * slots in groups of 16 / bpo; the overflow slot (>= 2^HIST_MAX_LOG2 ns) alone, as +Inf. A
 * slot [lo, hi) holds whole nanoseconds lo .. hi - 1, so its group's le is hi - 1 ns: le
 * means <= in Prometheus, and no slot's count is split between two le.
 */
static void make_buckets(struct prom *p)
{
	uint32_t width = HIST_SUB / (uint32_t)p->o.buckets_per_octave, i, j;
	uint32_t first = (PROM_FLOOR_LOG2 - HIST_SUB_BITS + 1) << HIST_SUB_BITS;
	uint32_t inf = 1 + (HIST_OVERFLOW - first) / width;

	for (i = 0; i < HIST_NSLOTS; i++) {
		j = i >= HIST_OVERFLOW ? inf : i >= first ? 1 + (i - first) / width : 0;
		p->of_slot[i] = (uint16_t)j;
		if (i < HIST_OVERFLOW)
			p->le_ns[j] = hist_hi(i) - 1;
	}
	p->nb = (int)inf + 1;
	for (j = 0; j < inf; j++)
		seconds_str(p->le_str[j], sizeof(p->le_str[j]), p->le_ns[j]);
	snprintf(p->le_str[inf], sizeof(p->le_str[inf]), "+Inf");
}

struct prom *prom_new(const struct prom_opts *o)
{
	struct prom *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->o = *o;
	make_buckets(p);
	/* a load factor of at most one half: max_series regular series, as many folded ones
	 * keeping their host labels, and the all-"other" ones (one per layer and stage) */
	for (p->tcap = 64; p->tcap < 2 * (2 * (size_t)o->max_series + 64); p->tcap *= 2)
		;
	p->table = calloc(p->tcap, sizeof(*p->table));
	if (!p->table) {
		free(p);
		return NULL;
	}
	return p;
}

void prom_free(struct prom *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->ns; i++) {
		free(p->s[i].labels);
		free(p->s[i].buckets);
	}
	free(p->s);
	free(p->table);
	free(p);
}

uint64_t prom_intervals(const struct prom *p)
{
	return p->intervals;
}

int prom_bucket_edges(const struct prom *p, uint64_t *le_ns, int max)
{
	int i;

	for (i = 0; i + 1 < p->nb && i < max; i++)
		le_ns[i] = p->le_ns[i];
	return i;
}

/*
 * The series' label values (flags and pid dropped, comm and opcode only when asked), as they
 * will be printed: a process or cgroup may name itself with any byte, and two names that print
 * alike must be one series, or a scrape would carry the same series twice (Prometheus keeps the
 * first sample and drops the others). Well-formed UTF-8 stays; control characters and other
 * bytes become '?'.
 */
static void key_of(const struct prom *p, const struct rec *r, struct series *k)
{
	memset(k, 0, sizeof(*k));
	k->layer = r->layer;
	k->stage = r->stage;
	utf8_printable(r->disk, k->device, sizeof(k->device));
	utf8_printable(r->op, k->op, sizeof(k->op));
	utf8_printable(r->syscall, k->syscall, sizeof(k->syscall));
	if (p->o.opcode)
		utf8_printable(r->opcode, k->opcode, sizeof(k->opcode));
	if (p->o.comm)
		utf8_printable(r->comm, k->comm, sizeof(k->comm));
	if (p->o.cgroup)
		utf8_printable(r->cgroup, k->cgroup, sizeof(k->cgroup));
}

/*
 * Over the cap: the labels that grow with the workload (process, cgroup, opcode) "other"; the
 * host's own (device, op, syscall) kept, so that a disk attached later, or one whose label
 * sets came after a crowd of short-lived processes, is still seen under its name. With
 * host_too (over the cap again), every label "other": the same layer and stage only.
 */
static bool fold(struct series *k, bool host_too)
{
	char *v[] = { k->opcode, k->comm, k->cgroup, k->device, k->op, k->syscall };
	bool changed = false;
	size_t i;

	for (i = 0; i < (host_too ? 6u : 3u); i++)
		if (*v[i] && strcmp(v[i], "other")) {
			strcpy(v[i], "other");
			changed = true;
		}
	return changed;
}

static int key_cmp(const struct series *a, const struct series *b)
{
	return strcmp(a->layer, b->layer) || strcmp(a->stage, b->stage) ||
	       strcmp(a->device, b->device) || strcmp(a->op, b->op) ||
	       strcmp(a->syscall, b->syscall) || strcmp(a->opcode, b->opcode) ||
	       strcmp(a->comm, b->comm) || strcmp(a->cgroup, b->cgroup);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL;	/* a separator: ("ab","") != ("a","b") */
}

static size_t key_hash(const struct series *k)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = hash_str(h, k->layer);
	h = hash_str(h, k->stage);
	h = hash_str(h, k->device);
	h = hash_str(h, k->op);
	h = hash_str(h, k->syscall);
	h = hash_str(h, k->opcode);
	h = hash_str(h, k->comm);
	h = hash_str(h, k->cgroup);
	return (size_t)h;
}

/* The slot of k in the table: its series, or the empty slot where it would go. */
static uint32_t *lookup(const struct prom *p, const struct series *k)
{
	size_t i = key_hash(k) & (p->tcap - 1);

	while (p->table[i] && key_cmp(&p->s[p->table[i] - 1], k))
		i = (i + 1) & (p->tcap - 1);
	return &p->table[i];
}

/* A label value (key_of made it printable UTF-8) as the text format wants it: \ and " escaped */
static void put_value(struct sbuf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			sbuf_put(b, "\\", 1);
		sbuf_put(b, v, 1);
	}
}

static void put_label(struct sbuf *b, const char *name, const char *v)
{
	if (!*v)
		return;
	sbuf_printf(b, "%s%s=\"", b->len ? "," : "", name);
	put_value(b, v);
	sbuf_put(b, "\"", 1);
}

static struct series *add_series(struct prom *p, const struct series *k, uint32_t *slot,
				 int kind)
{
	struct sbuf l = { 0 };
	struct series *s;

	if (p->ns == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;

		s = realloc(p->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		p->s = s;
		p->cap = cap;
	}
	put_label(&l, "layer", k->layer);
	put_label(&l, "stage", k->stage);
	put_label(&l, "device", k->device);
	put_label(&l, "op", k->op);
	put_label(&l, "syscall", k->syscall);
	put_label(&l, "opcode", k->opcode);
	put_label(&l, "comm", k->comm);
	put_label(&l, "cgroup", k->cgroup);
	s = &p->s[p->ns];
	*s = *k;
	s->kind = kind;
	s->labels = l.p;
	s->buckets = calloc((size_t)p->nb, sizeof(*s->buckets));
	if (l.oom || !l.p || !s->buckets) {
		free(l.p);
		free(s->buckets);
		return NULL;
	}
	*slot = (uint32_t)++p->ns;
	return s;
}

/*
 * Label sets folded in one interval, each once: records are per process and per path flags, so
 * one label set can come in many records (series_dropped counts label sets, as it says).
 */
struct fold_set {
	struct series *k;
	uint32_t *tab, cap, n;
};

/* Is k new to the set (then added)? */
static bool fold_new(struct fold_set *f, const struct series *k)
{
	uint32_t i = (uint32_t)key_hash(k) & (f->cap - 1);

	while (f->tab[i]) {
		if (!key_cmp(&f->k[f->tab[i] - 1], k))
			return false;
		i = (i + 1) & (f->cap - 1);
	}
	f->k[f->n] = *k;
	f->tab[i] = ++f->n;
	return true;
}

/* The series r counts in (its index): found, made, or over the cap its "other" series; -1
 * when out of memory. */
static long series_for(struct prom *p, const struct rec *r, struct fold_set *f)
{
	struct series k;
	uint32_t *slot;

	key_of(p, r, &k);
	slot = lookup(p, &k);
	if (*slot)
		return (long)*slot - 1;
	if (p->regular >= p->o.max_series) {
		if (fold_new(f, &k))
			p->folded++;
		/* its workload labels folded, while there is room for such series; with none to
		 * fold (none asked for), the key would be a regular one: everything folds */
		if (fold(&k, false)) {
			slot = lookup(p, &k);
			if (*slot)
				return (long)*slot - 1;
			if (p->host_only < p->o.max_series) {
				if (!add_series(p, &k, slot, S_HOST_ONLY))
					return -1;
				p->host_only++;
				return (long)p->ns - 1;
			}
		}
		fold(&k, true);
		slot = lookup(p, &k);
		if (*slot)
			return (long)*slot - 1;
		/* beyond twice the cap only the all-"other" series are made: one per layer, stage */
		return add_series(p, &k, slot, S_ALL_OTHER) ? (long)p->ns - 1 : -1;
	}
	if (!add_series(p, &k, slot, S_REGULAR))
		return -1;
	p->regular++;
	return (long)p->ns - 1;
}

/*
 * Drop the label sets no I/O came to for expire_ns: their room under the caps is free again.
 * The table is rebuilt from the series left (this happens at most once an interval).
 */
static void expire(struct prom *p, uint64_t now)
{
	size_t i, n = 0;

	if (!p->o.expire_ns)
		return;
	for (i = 0; i < p->ns; i++) {
		struct series *s = &p->s[i];

		if (now > s->active_ns && now - s->active_ns >= p->o.expire_ns) {
			if (s->kind == S_REGULAR)
				p->regular--;
			else if (s->kind == S_HOST_ONLY)
				p->host_only--;
			free(s->labels);
			free(s->buckets);
			p->expired++;
			continue;
		}
		p->s[n++] = *s;
	}
	if (n == p->ns)
		return;
	p->ns = n;
	memset(p->table, 0, p->tcap * sizeof(*p->table));
	for (i = 0; i < n; i++)
		*lookup(p, &p->s[i]) = (uint32_t)i + 1;
}

static int count_named(struct named *n, int *nn, const struct counter *c)
{
	int i;

	for (i = 0; i < *nn; i++) {
		if (!strcmp(n[i].name, c->name)) {
			n[i].n += c->n;
			return 0;
		}
	}
	if (*nn == MAX_COUNTERS)
		return -1;
	snprintf(n[*nn].name, NAME_LEN, "%s", c->name);
	n[(*nn)++].n = c->n;
	return 0;
}

int prom_add(struct prom *p, const struct interval *iv)
{
	long *idx = calloc(iv->recs.n + 1, sizeof(*idx));
	struct fold_set f = { .cap = 2 };
	size_t i;
	uint32_t j;
	int k;

	while (f.cap < 2 * iv->recs.n)
		f.cap *= 2;
	f.k = calloc(iv->recs.n + 1, sizeof(*f.k));
	f.tab = calloc(f.cap, sizeof(*f.tab));
	if (!idx || !f.k || !f.tab)
		goto oom;
	/* the series first: the only step that allocates, so a failure adds no count */
	for (i = 0; i < iv->recs.n; i++) {
		idx[i] = series_for(p, &iv->recs.v[i], &f);
		if (idx[i] < 0)
			goto oom;
	}
	free(f.k);
	free(f.tab);
	for (i = 0; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];
		struct series *s = &p->s[idx[i]];

		s->sum_ns += r->h.sum_ns;
		s->unmeasured += r->h.unmeasured;
		if (r->h.count || r->h.unmeasured || !s->active_ns)
			s->active_ns = iv->end_mono_ns;
		for (j = 0; j < HIST_NSLOTS; j++)
			s->buckets[p->of_slot[j]] += r->h.slots[j];
	}
	free(idx);
	for (k = 0; k < iv->ndrops; k++)
		count_named(p->drops, &p->ndrops, &iv->drops[k]);
	for (k = 0; k < iv->nevents; k++)
		count_named(p->events, &p->nevents, &iv->events[k]);
	p->intervals++;
	p->last_ts_ns = iv->ts_ns;
	expire(p, iv->end_mono_ns);
	return 0;
oom:
	free(idx);
	free(f.k);
	free(f.tab);
	return -1;
}

void prom_family(struct sbuf *out, const char *name, const char *type, const char *help)
{
	sbuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void named_family(struct sbuf *out, const char *name, const char *label,
			 const struct named *n, int nn, const char *help)
{
	int i;

	prom_family(out, name, "counter", help);
	for (i = 0; i < nn; i++)
		sbuf_printf(out, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, n[i].name, n[i].n);
}

void prom_render(const struct prom *p, struct sbuf *out)
{
	const char *h = "iostrata_latency_seconds";
	size_t i;
	int j;

	sbuf_printf(out, "# HELP %s I/O latency of each layer's stage, from histograms built in "
		    "the kernel: iostrata's log-linear buckets merged to %d per octave; le is the "
		    "largest value a bucket holds (whole nanoseconds)\n# TYPE %s histogram\n",
		    h, p->o.buckets_per_octave, h);
	for (i = 0; i < p->ns; i++) {
		const struct series *s = &p->s[i];
		uint64_t cum = 0;
		char num[48];

		for (j = 0; j < p->nb; j++) {
			cum += s->buckets[j];
			sbuf_printf(out, "%s_bucket{%s,le=\"%s\"} %" PRIu64 "\n", h, s->labels,
				    p->le_str[j], cum);
		}
		sbuf_printf(out, "%s_sum{%s} ", h, s->labels);
		seconds_str(num, sizeof(num), s->sum_ns);
		sbuf_puts(out, num);
		sbuf_printf(out, "\n%s_count{%s} %" PRIu64 "\n", h, s->labels, cum);
	}
	prom_family(out, "iostrata_unmeasured_total", "counter",
		    "Events of a stage whose latency could not be known (never counted as 0), by "
		    "the labels of iostrata_latency_seconds");
	for (i = 0; i < p->ns; i++)
		sbuf_printf(out, "iostrata_unmeasured_total{%s} %" PRIu64 "\n", p->s[i].labels,
			    p->s[i].unmeasured);
	named_family(out, "iostrata_drops_total", "reason", p->drops, p->ndrops,
		     "Events the tracer saw and could not record, by reason");
	named_family(out, "iostrata_app_events_total", "event", p->events, p->nevents,
		     "Events of the traced applications (not failures of the tracer)");
	prom_family(out, "iostrata_series", "gauge",
		    "Label sets of iostrata_latency_seconds, the \"other\" ones included");
	sbuf_printf(out, "iostrata_series %zu\n", p->ns);
	prom_family(out, "iostrata_series_dropped_total", "counter",
		    "Label sets over --max-series, counted once per interval with data: their "
		    "counts went to the series of the same layer and stage with its other labels "
		    "\"other\"");
	sbuf_printf(out, "iostrata_series_dropped_total %" PRIu64 "\n", p->folded);
	prom_family(out, "iostrata_series_expired_total", "counter",
		    "Label sets dropped after --expire without I/O (a process or container gone): "
		    "if one comes back, its counts start again from 0");
	sbuf_printf(out, "iostrata_series_expired_total %" PRIu64 "\n", p->expired);
	prom_family(out, "iostrata_intervals_total", "counter",
		    "Intervals drained from the kernel into these counts");
	sbuf_printf(out, "iostrata_intervals_total %" PRIu64 "\n", p->intervals);
	prom_family(out, "iostrata_last_interval_timestamp_seconds", "gauge",
		    "End of the last interval added, Unix time");
	sbuf_puts(out, "iostrata_last_interval_timestamp_seconds ");
	prom_seconds(out, p->last_ts_ns);
	sbuf_puts(out, "\n");
}
