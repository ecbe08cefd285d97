// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report's intake and panels: every interval's non-empty buckets are kept, sparse, per
 * layer, label set and stage; at write time they are binned into panels (time columns x
 * latency rows made of whole buckets of bpf/hist.h) and rendered (svg.c, html.c).
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "layer.h"
#include "log.h"
#include "outfile.h"
#include "report_int.h"

/* Columns of a big panel and of a label set's small one, before the size budget. */
#define BIG_COLS	120
#define SMALL_COLS	60
#define MIN_COLS	16
/* Rows a panel holds at most: the finest of 16, 8, 4, 2, 1 rows per octave that fits. */
#define BIG_ROWS	56
#define SMALL_ROWS	22
/* Non-empty cells in all panels together: each carries its tooltip (~150 bytes). */
#define CELL_BUDGET	26000

struct report *report_new(const struct report_opts *o)
{
	struct report *r = calloc(1, sizeof(*r));

	if (!r) {
		errorf("out of memory");
		return NULL;
	}
	r->o = *o;
	return r;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int report_add_meta(struct report *r, const char *file, const struct recread_meta *m)
{
	struct file_info *f = realloc(r->files, (r->nfiles + 1) * sizeof(*f));
	size_t i;

	if (!f)
		goto oom;
	r->files = f;
	f = &f[r->nfiles++];
	memset(f, 0, sizeof(*f));
	f->file = dup_or_empty(file);
	f->has_meta = m->format > 0;
	f->meta = *m;
	f->meta.host = dup_or_empty(m->host);
	f->meta.kernel = dup_or_empty(m->kernel);
	f->meta.version = dup_or_empty(m->version);
	f->meta.command = dup_or_empty(m->command);
	f->meta.kv = calloc(m->nkv ? m->nkv : 1, sizeof(*m->kv));
	if (!f->meta.kv)
		goto oom;
	for (i = 0; i < m->nkv; i++) {
		f->meta.kv[i].key = dup_or_empty(m->kv[i].key);
		f->meta.kv[i].val = dup_or_empty(m->kv[i].val);
	}
	return 0;
oom:
	errorf("out of memory");
	return -1;
}

void report_add_end(struct report *r, const char *file, const struct recread_end *e)
{
	struct file_info *f = r->nfiles ? &r->files[r->nfiles - 1] : NULL;

	if (!f || strcmp(f->file, file))
		return;
	f->has_end = true;
	free(f->end_reason);
	f->end_reason = dup_or_empty(e->reason);
	f->end_intervals = e->intervals;
}

void report_add_note(struct report *r, const char *note)
{
	char **n = realloc(r->notes, (r->nnotes + 1) * sizeof(*n));

	if (!n)
		return;
	r->notes = n;
	if ((n[r->nnotes] = strdup(note)))
		r->nnotes++;
}

/* FNV-1a over the layer, stage and labels. */
static uint64_t key_hash(const struct rec_id *k, bool with_stage)
{
	/* every label same_key compares: one left out puts its series in one probe chain */
	const char *parts[] = { k->layer, with_stage ? k->stage : "", k->disk, k->op, k->flags,
				k->syscall, k->opcode, k->comm, k->cgroup };
	uint64_t h = 1469598103934665603ULL;
	const unsigned char *p;
	size_t i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		for (p = (const unsigned char *)parts[i]; *p; p++)
			h = (h ^ *p) * 1099511628211ULL;
		h = (h ^ 0x1f) * 1099511628211ULL;
	}
	return (h ^ k->pid) * 1099511628211ULL;
}

static bool same_key(const struct rec_id *a, const struct rec_id *b)
{
	return !strcmp(a->stage, b->stage) && rec_id_same_labels(a, b);
}

/*
 * Room for one more in an array of n elements of `size` bytes at *(T **)vp with room for *cap:
 * doubled (from `first`) when full. 0, or -1 when out of memory (the array as it was).
 */
static int grow_array(void *vp, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c = *cap ? *cap * 2 : first;
	void *v, *q;

	if (n < *cap)
		return 0;
	memcpy(&v, vp, sizeof(v));
	q = realloc(v, c * size);
	if (!q)
		return -1;
	memcpy(vp, &q, sizeof(q));
	*cap = c;
	return 0;
}

/* One open-addressed table of index + 1 (0 empty) of n entries grown to twice that. */
static int index_grow(size_t **tab, size_t *cap, size_t n, uint64_t (*hash_of)(void *, size_t),
		      void *arg)
{
	size_t c = *cap ? *cap * 2 : 256, i, j;
	size_t *t = calloc(c, sizeof(*t));

	if (!t)
		return -1;
	for (i = 0; i < n; i++) {
		for (j = hash_of(arg, i) & (c - 1); t[j]; j = (j + 1) & (c - 1))
			;
		t[j] = i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = c;
	return 0;
}

static uint64_t labelset_hash(void *arg, size_t i)
{
	return key_hash(((struct report *)arg)->labelsets[i].key, false);
}

/* k: a series' key, which outlives the label set */
static int labelset_of(struct report *r, const struct rec_id *k)
{
	uint64_t h = key_hash(k, false);
	struct labelset *l;
	size_t j;

	for (j = h & (r->lcap - 1); r->lcap && r->ltable[j]; j = (j + 1) & (r->lcap - 1))
		if (rec_id_same_labels(r->labelsets[r->ltable[j] - 1].key, k))
			return (int)r->ltable[j] - 1;
	if ((r->nlabelsets + 1) * 2 > r->lcap &&
	    index_grow(&r->ltable, &r->lcap, r->nlabelsets, labelset_hash, r))
		return -1;
	for (j = h & (r->lcap - 1); r->ltable[j]; j = (j + 1) & (r->lcap - 1))
		;
	if (grow_array(&r->labelsets, &r->lscap, r->nlabelsets, sizeof(*l), 64))
		return -1;
	l = &r->labelsets[r->nlabelsets];
	memset(l, 0, sizeof(*l));
	l->key = k;
	r->ltable[j] = r->nlabelsets + 1;
	return (int)r->nlabelsets++;
}

static uint64_t series_hash(void *arg, size_t i)
{
	return ((struct report *)arg)->series[i]->hash;
}

static struct series *series_of(struct report *r, const struct rec *rec)
{
	uint64_t h = key_hash(&rec->id, true);
	struct series *s, **v;
	size_t j;
	int ls;

	if (r->tcap) {
		for (j = h & (r->tcap - 1); r->table[j]; j = (j + 1) & (r->tcap - 1)) {
			s = r->series[r->table[j] - 1];
			if (s->hash == h && same_key(&s->key, &rec->id))
				return s;
		}
	}
	if ((r->nseries + 1) * 2 > r->tcap &&
	    index_grow(&r->table, &r->tcap, r->nseries, series_hash, r))
		return NULL;
	if (grow_array(&r->series, &r->scap, r->nseries, sizeof(*r->series), 64))
		return NULL;
	v = r->series;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->key = rec->id;
	s->key.layer = strpool_intern(&r->pool, rec->layer);
	s->key.stage = strpool_intern(&r->pool, rec->stage);
	/* a new label set keeps a pointer to this key: made last, once nothing can fail after */
	if (!s->key.layer || !s->key.stage || (ls = labelset_of(r, &s->key)) < 0) {
		free(s);
		return NULL;
	}
	s->labelset = ls;
	s->hash = h;
	v[r->nseries] = s;
	for (j = h & (r->tcap - 1); r->table[j]; j = (j + 1) & (r->tcap - 1))
		;
	r->table[j] = ++r->nseries;
	return s;
}

static int series_add(struct series *s, uint32_t iv, const struct hist *h)
{
	struct series_tot *t = &s->tot;
	uint32_t i, lo, hi;

	if (!h->count) {
		t->unmeasured += h->unmeasured;
		return 0;
	}
	/* every count lies in the slots from min's to max's: only those are looked at */
	lo = hist_index(h->min_ns);
	hi = hist_index(h->max_ns);
	if (hi >= HIST_NSLOTS)
		hi = HIST_NSLOTS - 1;
	if (!t->count || h->min_ns < t->min_ns)
		t->min_ns = h->min_ns;
	if (h->max_ns > t->max_ns)
		t->max_ns = h->max_ns;
	t->count += h->count;
	t->sum_ns += h->sum_ns;
	t->unmeasured += h->unmeasured;
	if (grow_array(&s->ivs, &s->icap, s->nivs, sizeof(*s->ivs), 4))
		return -1;
	s->ivs[s->nivs++] = (struct ivstat){ iv, h->count, h->min_ns, h->max_ns, h->sum_ns };
	for (i = lo; i <= hi; i++) {
		if (!h->slots[i])
			continue;
		if (grow_array(&s->pts, &s->cap, s->npts, sizeof(*s->pts), 16))
			return -1;
		s->pts[s->npts++] = (struct pt){ iv, i, h->slots[i] };
	}
	return 0;
}

void series_hist(const struct series *s, struct hist *h)
{
	const struct series_tot *t = &s->tot;
	size_t i;

	if (t->count) {
		if (!h->count || t->min_ns < h->min_ns)
			h->min_ns = t->min_ns;
		if (t->max_ns > h->max_ns)
			h->max_ns = t->max_ns;
	}
	h->count += t->count;
	h->sum_ns += t->sum_ns;
	h->unmeasured += t->unmeasured;
	for (i = 0; i < s->npts; i++)
		h->slots[s->pts[i].slot] += s->pts[i].n;
}

/* The latency sum of rec's layer and stage in sums[0, *n): made when new; NULL: no memory. */
static uint64_t *stage_sum(struct report *r, struct stage_sum *sums, int *n, const struct rec *rec)
{
	const char *layer, *stage;
	int i;

	for (i = 0; i < *n; i++)
		if (!strcmp(sums[i].layer, rec->layer) && !strcmp(sums[i].stage, rec->stage))
			return &sums[i].sum;
	if (*n == MAX_STAGE_SUMS)
		return &sums[MAX_STAGE_SUMS - 1].sum;
	layer = strpool_intern(&r->pool, rec->layer);
	stage = strpool_intern(&r->pool, rec->stage);
	if (!layer || !stage)
		return NULL;
	sums[*n] = (struct stage_sum){ layer, stage, 0 };
	return &sums[(*n)++].sum;
}

/*
 * iv's counts added to r's totals: 1 when one would wrap round 2^64 (then nothing changed), -1
 * out of memory, else 0.
 */
static int totals_add(struct report *r, const struct interval *iv)
{
	uint64_t c = r->tot_count, u = r->tot_unmeasured, d = r->tot_drops, e = r->tot_events, *t;
	struct stage_sum sums[MAX_STAGE_SUMS];
	int nsums = r->nstsum;
	bool wrap = false;
	size_t i;
	int j;

	memcpy(sums, r->stsum, (size_t)nsums * sizeof(*sums));
	for (i = 0; i < iv->recs.n; i++) {
		const struct hist *h = &iv->recs.v[i].h;

		if (!(t = stage_sum(r, sums, &nsums, &iv->recs.v[i])))
			return -1;
		wrap |= __builtin_add_overflow(c, h->count, &c);
		wrap |= __builtin_add_overflow(*t, h->sum_ns, t);
		wrap |= __builtin_add_overflow(u, h->unmeasured, &u);
	}
	for (j = 0; j < iv->ndrops; j++)
		wrap |= __builtin_add_overflow(d, iv->drops[j].n, &d);
	for (j = 0; j < iv->nevents; j++)
		wrap |= __builtin_add_overflow(e, iv->events[j].n, &e);
	if (wrap)
		return 1;
	r->tot_count = c;
	r->tot_unmeasured = u;
	r->tot_drops = d;
	r->tot_events = e;
	memcpy(r->stsum, sums, (size_t)nsums * sizeof(*sums));
	r->nstsum = nsums;
	return 0;
}

int report_add_interval(struct report *r, const char *file, const struct interval *iv)
{
	struct interval_info *ii;
	uint32_t idx = (uint32_t)r->nivs;
	char when[64];
	size_t i;
	int j;

	j = totals_add(r, iv);
	if (j < 0)
		goto oom;
	if (j) {
		fmt_date(when, sizeof(when), iv->ts_ns);
		errorf("%s: its counts or latency sums, summed over the recording%s, pass 2^64 at "
		       "the interval ending %s: not what a host can count", file,
		       r->nfiles > 1 ? "s" : "", when);
		return -1;
	}

	if (grow_array(&r->ivs, &r->ivcap, r->nivs, sizeof(*r->ivs), 1024))
		goto oom;
	ii = &r->ivs[r->nivs++];
	memset(ii, 0, sizeof(*ii));
	ii->ts_ns = iv->ts_ns;
	ii->interval_ns = iv->interval_ns;
	for (i = 0; i < iv->recs.n; i++) {
		struct series *s = series_of(r, &iv->recs.v[i]);

		if (!s || series_add(s, idx, &iv->recs.v[i].h))
			goto oom;
	}
	for (j = 0; j < iv->ndrops; j++) {
		const char *name = strpool_intern(&r->pool, iv->drops[j].name);

		if (!iv->drops[j].n)	/* a recording names every counter, most of them 0 */
			continue;
		ii->drops += iv->drops[j].n;
		if (!name || counters_add(r->drops, &r->ndrops, name, iv->drops[j].n))
			r->drops_other += iv->drops[j].n;	/* still shown, as "other" */
	}
	for (j = 0; j < iv->nevents; j++) {
		const char *name = strpool_intern(&r->pool, iv->events[j].name);

		if (name)
			counters_add(r->events, &r->nevents, name, iv->events[j].n);
	}
	if (!r->t0 || iv->ts_ns - (iv->ts_ns > iv->interval_ns ? iv->interval_ns : 0) < r->t0)
		r->t0 = iv->ts_ns - (iv->ts_ns > iv->interval_ns ? iv->interval_ns : 0);
	if (iv->ts_ns > r->t1)
		r->t1 = iv->ts_ns;
	return 0;
oom:
	errorf("out of memory reading the recording (interval %zu)", r->nivs);
	return -1;
}

int report_row_key(uint32_t slot, int rpo)
{
	if (slot < HIST_SUB)	/* exact values below 16 ns: one row per octave */
		return slot ? 1 + (int)hist_msb(slot) : 0;
	return 5 + (int)((slot >> HIST_SUB_BITS) - 1) * rpo +
	       (int)(slot & (HIST_SUB - 1)) / (HIST_SUB / rpo);
}

int report_column(const struct report *r, size_t i, int cols)
{
	const struct interval_info *ii = &r->ivs[i];
	uint64_t span = r->t1 > r->t0 ? r->t1 - r->t0 : 1;
	uint64_t mid = ii->ts_ns - (ii->interval_ns < ii->ts_ns ? ii->interval_ns / 2 : 0);
	int c;

	if (mid < r->t0)
		mid = r->t0;
	c = (int)((unsigned __int128)(mid - r->t0) * (unsigned)cols / span);
	return c >= cols ? cols - 1 : c;
}

void panel_unbin(struct panel *p)
{
	free(p->grid);
	free(p->colsum);
	free(p->colmax);
	free(p->colh);
	free(p->rowlo);
	free(p->rowhi);
	free(p->colivs);
	p->grid = p->colsum = p->colmax = p->rowlo = p->rowhi = NULL;
	p->colivs = NULL;
	p->colivs_max = 0;
	p->colh = NULL;
	p->cells = 0;
}

/* Rows per octave: the finest (up to rpo_cap) that keeps the panel's span within its rows. */
static int choose_rpo(const struct panel *p, uint32_t lo_slot, uint32_t hi_slot)
{
	static const int choices[] = { 16, 8, 4, 2, 1 };
	int max_rows = p->small ? SMALL_ROWS : BIG_ROWS, i;

	for (i = 0; i < 4; i++)
		if (choices[i] <= p->rpo_cap &&
		    report_row_key(hi_slot, choices[i]) - report_row_key(lo_slot, choices[i]) + 1 <=
		    max_rows)
			return choices[i];
	return 1;
}

int panel_bin(const struct report *r, struct panel *p, int cols)
{
	uint32_t lo_slot = HIST_NSLOTS, hi_slot = 0, slot;
	int k, c, s, *col_of = NULL;
	size_t i;

	panel_unbin(p);
	for (s = 0; s < p->nser; s++)
		for (i = 0; i < p->ser[s]->npts; i++) {
			slot = p->ser[s]->pts[i].slot;
			if (slot < lo_slot)
				lo_slot = slot;
			if (slot > hi_slot)
				hi_slot = slot;
		}
	if (lo_slot == HIST_NSLOTS)
		lo_slot = hi_slot = hist_index(1000);	/* nothing measured: an empty 1 us row */
	/* a narrow span gets an octave of room either side: one bucket is not a whole panel */
	if (hi_slot - lo_slot < 2 * HIST_SUB) {
		lo_slot = lo_slot > HIST_SUB ? lo_slot - HIST_SUB : 0;
		/* never below the highest bucket with samples: the open-ended one has a row too */
		if (hi_slot + HIST_SUB < HIST_OVERFLOW)
			hi_slot += HIST_SUB;
		else if (hi_slot < HIST_OVERFLOW - 1)
			hi_slot = HIST_OVERFLOW - 1;
	}
	p->cols = cols;
	p->rpo = choose_rpo(p, lo_slot, hi_slot);
	p->key0 = report_row_key(lo_slot, p->rpo);
	p->nrows = report_row_key(hi_slot, p->rpo) - p->key0 + 1;
	p->grid = calloc((size_t)cols * (size_t)p->nrows, sizeof(*p->grid));
	p->colsum = calloc((size_t)cols, sizeof(*p->colsum));
	p->colmax = calloc((size_t)cols, sizeof(*p->colmax));
	p->colh = calloc((size_t)cols, sizeof(*p->colh));
	p->colivs = calloc((size_t)cols, sizeof(*p->colivs));
	p->rowlo = calloc((size_t)p->nrows, sizeof(*p->rowlo));
	p->rowhi = calloc((size_t)p->nrows, sizeof(*p->rowhi));
	col_of = malloc((r->nivs ? r->nivs : 1) * sizeof(*col_of));
	if (!p->grid || !p->colsum || !p->colmax || !p->colh || !p->colivs || !p->rowlo ||
	    !p->rowhi || !col_of) {
		free(col_of);
		panel_unbin(p);
		return -1;
	}
	/* row bounds: the union of the buckets each row holds */
	for (slot = HIST_NSLOTS; slot-- > 0;) {
		k = report_row_key(slot, p->rpo) - p->key0;
		if (k < 0 || k >= p->nrows)
			continue;
		p->rowlo[k] = hist_lo(slot);
		if (!p->rowhi[k])
			p->rowhi[k] = slot >= HIST_OVERFLOW ? UINT64_MAX : hist_hi(slot);
	}
	for (i = 0; i < r->nivs; i++) {
		col_of[i] = report_column(r, i, cols);
		if (++p->colivs[col_of[i]] > p->colivs_max)
			p->colivs_max = p->colivs[col_of[i]];
	}
	for (s = 0; s < p->nser; s++) {
		const struct series *se = p->ser[s];

		for (i = 0; i < se->npts; i++) {
			const struct pt *pt = &se->pts[i];

			p->colh[col_of[pt->iv]].slots[pt->slot] += pt->n;
		}
		for (i = 0; i < se->nivs; i++) {
			const struct ivstat *st = &se->ivs[i];
			struct hist *h = &p->colh[col_of[st->iv]];

			if (!h->count || st->min < h->min_ns)
				h->min_ns = st->min;
			if (st->max > h->max_ns)
				h->max_ns = st->max;
			h->count += st->count;
			h->sum_ns += st->sum;
		}
	}
	for (c = 0; c < cols; c++) {
		struct hist *h = &p->colh[c];

		p->colmax[c] = h->max_ns;
		for (slot = lo_slot; slot <= hi_slot; slot++) {
			uint64_t *g;

			if (!h->slots[slot])
				continue;
			k = report_row_key(slot, p->rpo) - p->key0;
			g = &p->grid[(size_t)c * (size_t)p->nrows + (size_t)k];
			p->cells += !*g;
			*g += h->slots[slot];
			p->colsum[c] += h->slots[slot];
		}
	}
	free(col_of);
	return 0;
}

/* ---- panels */

static int labelset_cmp(const void *a, const void *b)
{
	const struct labelset *x = *(const struct labelset *const *)a,
			      *y = *(const struct labelset *const *)b;
	int c = strcmp(x->key->layer, y->key->layer);

	if (c)
		return c;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* Each label set's rank in its layer, by the largest count of its stages. */
static int rank_labelsets(struct report *r)
{
	struct labelset **v = calloc(r->nlabelsets + 1, sizeof(*v));
	size_t i;
	int rank = 0;

	if (!v)
		return -1;
	for (i = 0; i < r->nseries; i++) {
		struct labelset *l = &r->labelsets[r->series[i]->labelset];

		if (r->series[i]->tot.count > l->count)
			l->count = r->series[i]->tot.count;
	}
	for (i = 0; i < r->nlabelsets; i++)
		v[i] = &r->labelsets[i];
	qsort(v, r->nlabelsets, sizeof(*v), labelset_cmp);
	for (i = 0; i < r->nlabelsets; i++) {
		if (i && strcmp(v[i]->key->layer, v[i - 1]->key->layer))
			rank = 0;
		v[i]->rank = rank++;
	}
	free(v);
	return 0;
}

static int layer_order(const char *name)
{
	int id;

	return layer_by_name(name, &id) ? id : NLAYERS;
}

static int series_cmp(const void *a, const void *b)
{
	const struct series *x = *(const struct series *const *)a,
			    *y = *(const struct series *const *)b;
	int c = layer_order(x->key.layer) - layer_order(y->key.layer);

	if (c)
		return c;
	if ((c = strcmp(x->key.layer, y->key.layer)))
		return c;
	if ((c = x->key.stage_order - y->key.stage_order))
		return c;
	return strcmp(x->key.stage, y->key.stage);
}

static void slug(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	for (; *src && n + 1 < len; src++) {
		char ch = *src;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')
			dst[n++] = ch;
		else if (ch >= 'A' && ch <= 'Z')
			dst[n++] = (char)(ch - 'A' + 'a');
		else if (n && dst[n - 1] != '-')
			dst[n++] = '-';
	}
	while (n && dst[n - 1] == '-')
		n--;
	dst[n] = '\0';
}

/*
 * What a merged panel merges, said as its label set ("all disks", "all opcodes and processes"):
 * the labels whose values differ between the layer's label sets. Not "all", which is what an
 * unlabelled label set is called, here and in the text output (a recording without -D, given
 * with one of -D, has one beside the merged panel).
 */
static void merged_labels(const struct report *r, const char *layer, char *buf, size_t len)
{
	static const char *const what[] = { "disks", "ops", "opcodes", "flags", "syscalls",
					    "processes", "cgroups" };
	const struct rec_id *first = NULL, *k;
	bool differ[7] = { false };
	size_t i, used;
	int j, n = 0, said = 0;

	for (i = 0; i < r->nlabelsets; i++) {
		k = r->labelsets[i].key;
		if (strcmp(k->layer, layer))
			continue;
		if (!first) {
			first = k;
			continue;
		}
		differ[0] |= strcmp(k->disk, first->disk) != 0;
		differ[1] |= strcmp(k->op, first->op) != 0;
		differ[2] |= strcmp(k->opcode, first->opcode) != 0;
		differ[3] |= strcmp(k->flags, first->flags) != 0;
		differ[4] |= strcmp(k->syscall, first->syscall) != 0;
		differ[5] |= k->pid != first->pid || strcmp(k->comm, first->comm);
		differ[6] |= strcmp(k->cgroup, first->cgroup) != 0;
	}
	for (j = 0; j < 7; j++)
		n += differ[j];
	used = (size_t)snprintf(buf, len, "all");
	for (j = 0; j < 7 && used < len; j++)
		if (differ[j])
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 !said++ ? " " : said == n ? " and " : ", ", what[j]);
	if (!n)		/* label sets apart by nothing: none to merge (not reached) */
		snprintf(buf, len, "all label sets");
}

static struct panel *panel_new(struct panel **v, int *n, const struct series *s, int labelset,
			       const char *merged)
{
	struct panel *p = realloc(*v, (size_t)(*n + 1) * sizeof(*p)), *q;
	char lab[REC_LABELS_LEN], id[REC_LABELS_LEN + 64];

	if (!p)
		return NULL;
	*v = p;
	q = &p[(*n)++];
	memset(q, 0, sizeof(*q));
	q->layer = s->key.layer;
	q->stage = s->key.stage;
	q->stage_order = s->key.stage_order;
	q->labelset = labelset;
	if (labelset < 0)
		snprintf(q->labels, sizeof(q->labels), "%s", merged);
	else
		rec_id_labels(&s->key, q->labels, sizeof(q->labels));
	/* a merged panel's id (and SVG file) stays "all": links to it keep working */
	snprintf(lab, sizeof(lab), "%s", labelset < 0 ? "all" : q->labels);
	snprintf(id, sizeof(id), "%s-%s-%s", q->layer, q->stage, lab);
	slug(q->id, sizeof(q->id), id);
	q->small = labelset >= 0;
	return q;
}

static int panel_take(struct panel *p, struct series *s)
{
	if (grow_array(&p->ser, &p->sercap, (size_t)p->nser, sizeof(*p->ser), 4))
		return -1;
	p->ser[p->nser++] = s;
	p->count += s->tot.count;
	p->unmeasured += s->tot.unmeasured;
	return 0;
}

/*
 * Per layer and stage: one big panel of every label set merged (the label set's own when the
 * layer has one), then the top label sets' small panels. Ids made unique.
 */
/* Panel a's id is an earlier panel's. */
static bool id_taken(const struct panel *p, int a)
{
	int b;

	for (b = 0; b < a; b++)
		if (!strcmp(p[a].id, p[b].id))
			return true;
	return false;
}

static int build_panels(struct report *r, struct panel **out, int *nout)
{
	struct series **v = malloc((r->nseries + 1) * sizeof(*v));
	struct panel *panels = NULL, *p;
	char merged[REC_LABELS_LEN] = "";
	int n = 0, lsets, a, top = r->o.top;
	size_t i, j, k;

	if (!v)
		return -1;
	if (r->nseries)
		memcpy(v, r->series, r->nseries * sizeof(*v));
	qsort(v, r->nseries, sizeof(*v), series_cmp);
	for (i = 0; i < r->nseries; i = j) {
		/* v[i..j): one layer and stage */
		for (j = i + 1; j < r->nseries && !series_cmp(&v[i], &v[j]); j++)
			;
		lsets = 0;
		for (k = 0; k < r->nlabelsets; k++)
			lsets += !strcmp(r->labelsets[k].key->layer, v[i]->key.layer);
		if (lsets != 1)
			merged_labels(r, v[i]->key.layer, merged, sizeof(merged));
		p = panel_new(&panels, &n, v[i], lsets == 1 ? v[i]->labelset : -1, merged);
		if (!p)
			goto oom;
		p->small = false;
		for (k = i; k < j; k++)
			if (panel_take(p, v[k]))
				goto oom;
		if (lsets == 1)
			continue;
		for (a = 0; a < top; a++) {
			for (k = i; k < j; k++) {
				if (r->labelsets[v[k]->labelset].rank != a)
					continue;
				p = panel_new(&panels, &n, v[k], v[k]->labelset, NULL);
				if (!p || panel_take(p, v[k]))
					goto oom;
			}
		}
	}
	/* ids: the label text may repeat after slugging, and so may a renamed one ("x" + "-2"
	 * being another panel's "x-2"): renamed until no earlier panel has it */
	for (a = 0; a < n; a++) {
		size_t l = strlen(panels[a].id);
		int tries;

		for (tries = 0; id_taken(panels, a); tries++)
			snprintf(panels[a].id + (l > 180 ? 180 : l), 20, "-%d", a + tries * n);
	}
	free(v);
	*out = panels;
	*nout = n;
	return 0;
oom:
	free(v);
	for (a = 0; a < n; a++)
		free(panels[a].ser);
	free(panels);
	return -1;
}

/*
 * Every cell carries its tooltip, so the page's size is about its non-empty cells. Within
 * CELL_BUDGET: full detail when it fits; else fewer rows per octave first (16 -> 8 -> 4 for
 * the big panels, 4 -> 2 for the small ones: time matters more over a long recording than
 * the last 3 % of latency), then fewer columns, scaled by how far over the budget it is.
 */
static const struct { int big_rpo, small_rpo; } levels[] = { { 16, 4 }, { 8, 4 }, { 4, 2 } };

/*
 * The most columns a panel can have: as many as intervals of their mean length fit in the
 * recording's span, so that no column lies between two intervals of a recording with neither
 * in it. Of one recording, its intervals; of recordings given together with time between
 * them, that time's worth more (it was their count: two of 5 s a minute apart were 10 columns
 * of 7 s, each recording drawn in one); of recordings of the same time (two hosts), fewer (it
 * was twice theirs: every other column empty, hatched as if no I/O completed then).
 */
static int span_cols(const struct report *r)
{
	uint64_t span = r->t1 > r->t0 ? r->t1 - r->t0 : 0;
	unsigned __int128 sum = 0;
	double cols;
	size_t i, n = 0;

	for (i = 0; i < r->nivs; i++)
		if (r->ivs[i].interval_ns && r->ivs[i].interval_ns <= r->ivs[i].ts_ns) {
			sum += r->ivs[i].interval_ns;
			n++;
		}
	/* no interval of a length known: one column each, as many as there are */
	cols = n && span ? (double)span * (double)n / (double)sum : (double)r->nivs;
	return cols < 1 ? 1 : cols > 100000 ? 100000 : (int)lround(cols);
}

static size_t bin_pass(const struct report *r, struct panel *p, int n, int level, double scale)
{
	int i, cols, most = span_cols(r);
	size_t cells = 0;

	for (i = 0; i < n; i++) {
		cols = (int)((p[i].small ? SMALL_COLS : BIG_COLS) * scale);
		if (cols < MIN_COLS)
			cols = MIN_COLS;
		if (cols > most)
			cols = most;
		p[i].rpo_cap = p[i].small ? levels[level].small_rpo : levels[level].big_rpo;
		if (panel_bin(r, &p[i], cols))
			return SIZE_MAX;
		cells += p[i].cells;
	}
	return cells;
}

static int bin_all(const struct report *r, struct panel *p, int n)
{
	int level = 0, last = (int)(sizeof(levels) / sizeof(levels[0])) - 1;
	double scale = 1.0;
	size_t cells;

	for (;;) {
		cells = bin_pass(r, p, n, level, scale);
		if (cells == SIZE_MAX)
			return -1;
		if (cells <= CELL_BUDGET || scale < 0.1)
			break;
		if (level < last)	/* far over: straight to the coarsest rows */
			level = cells > 2 * CELL_BUDGET ? last : level + 1;
		else
			scale *= scale < 1.0 ? 0.8 : 0.95 * CELL_BUDGET / (double)cells;
	}
	vlog("report: %d panels, %zu cells (level %d, column scale %.2f)", n, cells, level, scale);
	return 0;
}

/* ---- writing: each file whole or not at all (outfile.c), none replaced without --force */

int report_write_file(const char *path, bool force, const struct sbuf *b)
{
	if (b->oom) {
		errorf("out of memory rendering %s", path);
		return -1;
	}
	return outfile_write(path, force, b->p, b->len);
}

static void svg_path(const struct report *r, const struct panel *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.svg", r->o.svg_dir, p->id);
}

/* What write_svgs made, to be removed again if the run fails: the files new to it, the dir. */
struct svg_undo {
	bool *fresh;		/* per panel: its file did not exist */
	int done;		/* panels written */
	bool made_dir;
};

static void svg_undo(const struct report *r, const struct panel *p, struct svg_undo *u)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; u->fresh && i < u->done; i++)
		if (u->fresh[i]) {
			svg_path(r, &p[i], path, sizeof(path));
			unlink(path);
		}
	if (u->made_dir)
		rmdir(r->o.svg_dir);
	free(u->fresh);
	memset(u, 0, sizeof(*u));
}

/* Does path name a file in the directory dir_st, called name? (by the directory's identity:
 * "-o panels/x.svg" and "--svg ./panels" meet) */
static bool file_in(const char *path, const struct stat *dir_st, const char *name)
{
	char dir[PATH_MAX];
	struct stat st;

	if (strcmp(outfile_dir(path, dir, sizeof(dir)), name))
		return false;
	return !stat(dir, &st) && st.st_dev == dir_st->st_dev && st.st_ino == dir_st->st_ino;
}

/*
 * The SVGs, before the page: every name checked before any is written (one that exists needs
 * --force); on a failure here or at the page, svg_undo removes what this run created.
 */
static int write_svgs(const struct report *r, struct panel *p, int n, struct svg_undo *u)
{
	char path[PATH_MAX];
	struct sbuf b = { 0 };
	struct stat st;
	int i, a;

	if (!mkdir(r->o.svg_dir, 0755))
		u->made_dir = true;
	else if (errno != EEXIST) {
		errorf("cannot create %s: %s", r->o.svg_dir, strerror(errno));
		return -1;
	}
	if (stat(r->o.svg_dir, &st) || !S_ISDIR(st.st_mode)) {
		errorf("--svg %s: not a directory", r->o.svg_dir);
		return -1;
	}
	u->fresh = calloc((size_t)n + 1, sizeof(*u->fresh));
	if (!u->fresh) {
		errorf("out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		char name[PATH_MAX];

		svg_path(r, &p[i], path, sizeof(path));
		snprintf(name, sizeof(name), "%s.svg", p[i].id);
		/* the page would replace the panel (--force), or the panel the page just made */
		if (file_in(r->o.html, &st, name)) {
			errorf("-o %s is also a file --svg writes (%s): choose another name",
			       r->o.html, path);
			return -1;
		}
		if ((a = outfile_allowed(path, r->o.force, NULL, 0)) < 0)
			return -1;
		u->fresh[i] = a == 1;
	}
	for (; u->done < n; u->done++) {
		b.len = 0;
		svg_heatmap(r, &p[u->done], true, &b);
		svg_path(r, &p[u->done], path, sizeof(path));
		if (report_write_file(path, r->o.force, &b)) {
			sbuf_free(&b);
			return -1;
		}
	}
	sbuf_free(&b);
	return 0;
}

/*
 * What was written, said on stdout before the page is put in place: a line stdout cannot take
 * (a full disk, stdout closed) is an error with nothing left behind, not a whole page beside
 * exit 1 that a second try finds in its way. A reader gone (EPIPE) is a way to stop, as
 * everywhere: the page is written. 0, or -1 (said, or a stop pending).
 */
static int say_written(const struct report *r, int n, size_t bytes)
{
	char from[64], to[64], line[2 * PATH_MAX + 256];
	int len;

	fmt_date(from, sizeof(from), r->t0);
	fmt_date(to, sizeof(to), r->t1);
	len = snprintf(line, sizeof(line), "%s: %d panels, %.1f KiB, %zu intervals from %s to %s\n",
		       r->o.html, n, bytes / 1024.0, r->nivs, r->nivs ? from : "-",
		       r->nivs ? to : "-");
	if (r->o.svg_dir && len < (int)sizeof(line))
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s: %d SVG files\n",
				r->o.svg_dir, n);
	if (len >= (int)sizeof(line))
		len = (int)sizeof(line) - 1;
	if (fflush(stdout) || fd_write_held(STDOUT_FILENO, line, (size_t)len)) {
		if (errno == EPIPE)
			return 0;
		if (errno != ECANCELED)
			errorf("writing the output: %s (no report written)", strerror(errno));
		return -1;
	}
	return 0;
}

int report_write(struct report *r)
{
	struct panel *panels = NULL;
	struct sbuf *svgs = NULL, page = { 0 };
	struct svg_undo undo = { 0 };
	int n = 0, i, err = -1;
	char staged[PATH_MAX + 8];
	sigset_t held;

	if (rank_labelsets(r) || build_panels(r, &panels, &n) || bin_all(r, panels, n)) {
		errorf("out of memory building the report");
		goto out;
	}
	svgs = calloc((size_t)n + 1, sizeof(*svgs));
	if (!svgs) {
		errorf("out of memory building the report");
		goto out;
	}
	for (i = 0; i < n; i++)
		svg_heatmap(r, &panels[i], false, &svgs[i]);
	html_page(r, panels, n, svgs, &page);
	/* the SVGs and the page are written whole, or what was written is undone: an interrupt
	 * waits for either end */
	if (page.oom) {
		errorf("out of memory rendering %s", r->o.html);
		goto out;
	}
	/* the page is staged first: where it cannot be written (no such directory, no room), no
	 * SVG is replaced either */
	held = outfile_hold();
	if (outfile_stage(r->o.html, page.p, page.len, staged)) {
		outfile_release(&held);
		goto out;
	}
	if ((r->o.svg_dir && write_svgs(r, panels, n, &undo)) ||
	    say_written(r, n, page.len))
		unlink(staged);
	else if (!outfile_commit(staged, r->o.html, r->o.force))	/* its file gone if not */
		staged[0] = '\0';
	if (staged[0]) {
		svg_undo(r, panels, &undo);
		outfile_release(&held);	/* a stop that cut the line short lands here */
		goto out;
	}
	outfile_release(&held);
	free(undo.fresh);
	err = 0;
out:
	for (i = 0; i < n; i++) {
		panel_unbin(&panels[i]);
		free(panels[i].ser);
		if (svgs)
			sbuf_free(&svgs[i]);
	}
	free(panels);
	free(svgs);
	sbuf_free(&page);
	return err;
}

void report_free(struct report *r)
{
	size_t i, j;

	if (!r)
		return;
	for (i = 0; i < r->nseries; i++) {
		free(r->series[i]->pts);
		free(r->series[i]->ivs);
		free(r->series[i]);
	}
	free(r->series);
	free(r->table);
	free(r->ltable);
	free(r->labelsets);
	free(r->ivs);
	for (i = 0; i < r->nfiles; i++) {
		struct file_info *f = &r->files[i];

		for (j = 0; j < f->meta.nkv; j++) {
			free(f->meta.kv[j].key);
			free(f->meta.kv[j].val);
		}
		free(f->meta.kv);
		free(f->meta.host);
		free(f->meta.kernel);
		free(f->meta.version);
		free(f->meta.command);
		free(f->end_reason);
		free(f->file);
	}
	free(r->files);
	for (i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	strpool_free(&r->pool);
	free(r);
}

void fmt_clock(char *buf, size_t len, uint64_t ns, bool seconds)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, seconds ? "%H:%M:%S" : "%H:%M", &tm);
}

void fmt_date(char *buf, size_t len, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}
