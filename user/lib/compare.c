// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * compare's model and statistics. A set keeps, per layer, stage and label set (a row), each
 * interval's non-empty buckets, sparse. Comparing a row builds, for each side, a matrix of
 * cumulative counts (the row's buckets across, its intervals down), so that a resample, a
 * vector of interval multiplicities, finds a quantile with a few dot products: walking from
 * the point estimate's bucket costs O(intervals) per step, and a resample rarely moves more
 * than a bucket or two. The same seed draws the same intervals for every row: whole intervals
 * are resampled, not each row's on its own.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "compare.h"
#include "log.h"
#include "recread.h"
#include "stats.h"
#include "strpool.h"

const double cmp_q[CMP_NQ] = { 0.5, 0.9, 0.99, 0.999 };
const char *const cmp_q_name[CMP_NQ] = { "p50", "p90", "p99", "p99.9" };

/* One row's histogram in one interval: its buckets are [off, off + n) of the row's pairs. */
struct cell {
	uint32_t iv, off, n;
	uint64_t count, sum, min, max;
};

struct srow {
	const char *key, *layer, *stage, *labels;
	int stage_order;
	struct cell *cells;
	size_t ncells, ccap;
	uint16_t *slot;
	uint64_t *cnt;
	size_t npairs, pcap;
};

struct cmp_set {
	struct srow *rows;
	size_t nrows, cap;
	size_t *table;		/* open addressing: row index + 1, 0 empty */
	size_t tcap;
	uint32_t nintervals, nfiles;
	struct strpool pool;
};

/* ---- the set ---- */

struct cmp_set *cmp_set_new(void)
{
	struct cmp_set *s = calloc(1, sizeof(*s));

	if (!s)
		errorf("out of memory");
	return s;
}

void cmp_set_free(struct cmp_set *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nrows; i++) {
		free(s->rows[i].cells);
		free(s->rows[i].slot);
		free(s->rows[i].cnt);
	}
	free(s->rows);
	free(s->table);
	strpool_free(&s->pool);
	free(s);
}

uint32_t cmp_set_intervals(const struct cmp_set *s)
{
	return s->nintervals;
}

uint32_t cmp_set_files(const struct cmp_set *s)
{
	return s->nfiles;
}

/* The identity of a row: layer, stage and every label field (the display text may collide). */
static void row_key(const struct rec *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%u\x1f%s\x1f%s", r->layer,
		 r->stage, r->disk, r->op, r->flags, r->syscall, r->opcode, r->pid, r->comm,
		 r->cgroup);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The row called key: its index, or -1. */
static long row_find(const struct cmp_set *s, const char *key)
{
	size_t i;

	if (!s->tcap)
		return -1;
	for (i = fnv1a(key) & (s->tcap - 1); s->table[i]; i = (i + 1) & (s->tcap - 1))
		if (!strcmp(s->rows[s->table[i] - 1].key, key))
			return (long)s->table[i] - 1;
	return -1;
}

static int table_grow(struct cmp_set *s)
{
	size_t cap = s->tcap ? s->tcap * 2 : 64, i, j;
	size_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (i = 0; i < s->nrows; i++) {
		for (j = fnv1a(s->rows[i].key) & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = i + 1;
	}
	free(s->table);
	s->table = t;
	s->tcap = cap;
	return 0;
}

/* The row of rec r, made on first sight: its index, or -1 (out of memory). */
static long row_get(struct cmp_set *s, const struct rec *r)
{
	char key[640], labels[400];
	struct srow *row;
	size_t j;
	long i;

	row_key(r, key, sizeof(key));
	i = row_find(s, key);
	if (i >= 0)
		return i;
	if ((s->nrows + 1) * 2 > s->tcap && table_grow(s))
		return -1;
	if (s->nrows == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct srow *v = realloc(s->rows, cap * sizeof(*v));

		if (!v)
			return -1;
		s->rows = v;
		s->cap = cap;
	}
	row = &s->rows[s->nrows];
	memset(row, 0, sizeof(*row));
	rec_labels(r, labels, sizeof(labels));
	row->key = strpool_intern(&s->pool, key);
	row->layer = strpool_intern(&s->pool, r->layer);
	row->stage = strpool_intern(&s->pool, r->stage);
	row->labels = strpool_intern(&s->pool, labels);
	row->stage_order = r->stage_order;
	if (!row->key || !row->layer || !row->stage || !row->labels)
		return -1;
	for (j = fnv1a(key) & (s->tcap - 1); s->table[j]; j = (j + 1) & (s->tcap - 1))
		;
	s->table[j] = ++s->nrows;
	return (long)s->nrows - 1;
}

static int pair_add(struct srow *row, uint32_t slot, uint64_t n)
{
	if (row->npairs == row->pcap) {
		size_t cap = row->pcap ? row->pcap * 2 : 64;
		uint16_t *sl = realloc(row->slot, cap * sizeof(*sl));
		uint64_t *c;

		if (!sl)
			return -1;
		row->slot = sl;
		c = realloc(row->cnt, cap * sizeof(*c));
		if (!c)
			return -1;
		row->cnt = c;
		row->pcap = cap;
	}
	row->slot[row->npairs] = (uint16_t)slot;
	row->cnt[row->npairs++] = n;
	return 0;
}

/* Interval iv's histogram h into the row: a cell, or merged into the cell iv already has. */
static int row_add_hist(struct srow *row, uint32_t iv, const struct hist *h)
{
	struct cell *c = row->ncells ? &row->cells[row->ncells - 1] : NULL;
	uint32_t i, k;

	if (!c || c->iv != iv) {
		if (row->ncells == row->ccap) {
			size_t cap = row->ccap ? row->ccap * 2 : 16;
			struct cell *v = realloc(row->cells, cap * sizeof(*v));

			if (!v)
				return -1;
			row->cells = v;
			row->ccap = cap;
		}
		c = &row->cells[row->ncells++];
		memset(c, 0, sizeof(*c));
		c->iv = iv;
		c->off = (uint32_t)row->npairs;
		c->min = h->min_ns;
	}
	if (h->min_ns < c->min)
		c->min = h->min_ns;
	if (h->max_ns > c->max)
		c->max = h->max_ns;
	c->count += h->count;
	c->sum += h->sum_ns;
	for (i = 0; i < HIST_NSLOTS; i++) {
		if (!h->slots[i])
			continue;
		/* the cell is the row's last: its pairs are the last ones, a repeat is added in */
		for (k = c->off; k < c->off + c->n && row->slot[k] != i; k++)
			;
		if (k < c->off + c->n) {
			row->cnt[k] += h->slots[i];
			continue;
		}
		if (pair_add(row, i, h->slots[i]))
			return -1;
		c->n++;
	}
	return 0;
}

int cmp_set_add_interval(struct cmp_set *s, const struct interval *iv)
{
	const struct rec *r;
	size_t i;
	long k;

	for (i = 0; i < iv->recs.n; i++) {
		r = &iv->recs.v[i];
		if (!r->h.count && !r->h.unmeasured)
			continue;
		k = row_get(s, r);
		if (k < 0 || (r->h.count && row_add_hist(&s->rows[k], s->nintervals, &r->h))) {
			errorf("out of memory reading intervals");
			return -1;
		}
	}
	s->nintervals++;
	return 0;
}

int cmp_set_add_file(struct cmp_set *s, const char *path)
{
	struct recread *rr = recread_open(path);
	uint32_t before = s->nintervals;
	struct interval iv;
	enum recread_kind k;
	int err = 0;

	if (!rr)
		return -1;
	memset(&iv, 0, sizeof(iv));
	while ((k = recread_next(rr, &iv)) != RR_EOF) {
		if (k == RR_ERROR || (k == RR_INTERVAL && cmp_set_add_interval(s, &iv))) {
			err = -1;
			break;
		}
	}
	if (!err && s->nintervals == before) {
		errorf("%s: no intervals in it: nothing to compare", path);
		err = -1;
	}
	vlog("%s: %u intervals", path, s->nintervals - before);
	interval_clear(&iv);
	recread_close(rr);
	if (!err)
		s->nfiles++;
	return err;
}

static int is_recording(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	if (d->d_name[0] == '.')
		return 0;
	return (n > 7 && !strcmp(d->d_name + n - 7, ".ndjson")) ||
	       (n > 10 && !strcmp(d->d_name + n - 10, ".ndjson.gz"));
}

int cmp_set_add_path(struct cmp_set *s, const char *path)
{
	struct dirent **names;
	char file[4096];
	struct stat st;
	int n, i, err = 0;

	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return cmp_set_add_file(s, path);	/* which says what is wrong with it */
	n = scandir(path, &names, is_recording, alphasort);
	if (n < 0) {
		errorf("%s: %s", path, strerror(errno));
		return -1;
	}
	if (!n)
		errorf("%s: no recordings in it (*.ndjson, *.ndjson.gz)", path);
	for (i = 0; i < n; i++) {
		if (!err) {
			snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name);
			err = cmp_set_add_file(s, file);
		}
		free(names[i]);
	}
	free(names);
	return n ? err : -1;
}

/* ---- one row's matrix of cumulative counts, and quantiles of resamples ---- */

struct mat {
	uint32_t ncol, nslot;
	uint32_t *slot;		/* local bucket -> the scheme's slot */
	double *cum;		/* [nslot][ncol]: column c's samples at or below local bucket s */
	double *cnt;		/* per column: its samples */
	uint64_t *min, *max;	/* per column: exact */
	int32_t *col;		/* per interval of the set: its column, -1: no samples there */
};

static void mat_free(struct mat *m)
{
	free(m->slot);
	free(m->cum);
	free(m->cnt);
	free(m->min);
	free(m->max);
	free(m->col);
	memset(m, 0, sizeof(*m));
}

static int mat_build(struct mat *m, const struct srow *row, uint32_t nintervals)
{
	uint32_t local[HIST_NSLOTS];
	uint32_t c, s, k;
	size_t p;

	memset(m, 0, sizeof(*m));
	memset(local, 0xff, sizeof(local));
	for (p = 0; p < row->npairs; p++)
		local[row->slot[p]] = 0;
	for (s = 0; s < HIST_NSLOTS; s++)
		if (!local[s])
			m->nslot++;
	m->ncol = (uint32_t)row->ncells;
	m->slot = malloc((m->nslot + 1) * sizeof(*m->slot));
	m->cum = calloc((size_t)m->nslot * m->ncol + 1, sizeof(*m->cum));
	m->cnt = malloc((m->ncol + 1) * sizeof(*m->cnt));
	m->min = malloc((m->ncol + 1) * sizeof(*m->min));
	m->max = malloc((m->ncol + 1) * sizeof(*m->max));
	m->col = malloc((nintervals + 1) * sizeof(*m->col));
	if (!m->slot || !m->cum || !m->cnt || !m->min || !m->max || !m->col) {
		mat_free(m);
		return -1;
	}
	for (s = 0, k = 0; s < HIST_NSLOTS; s++) {
		if (!local[s]) {
			local[s] = k;
			m->slot[k++] = s;
		}
	}
	memset(m->col, 0xff, nintervals * sizeof(*m->col));
	for (c = 0; c < m->ncol; c++) {
		const struct cell *ce = &row->cells[c];

		m->col[ce->iv] = (int32_t)c;
		m->cnt[c] = (double)ce->count;
		m->min[c] = ce->min;
		m->max[c] = ce->max;
		for (p = ce->off; p < ce->off + ce->n; p++)
			m->cum[(size_t)local[row->slot[p]] * m->ncol + c] += (double)row->cnt[p];
	}
	for (s = 1; s < m->nslot; s++)
		for (c = 0; c < m->ncol; c++)
			m->cum[(size_t)s * m->ncol + c] += m->cum[(size_t)(s - 1) * m->ncol + c];
	return 0;
}

/* One side of a comparison: a row's matrix and the set's intervals the side is made of. */
struct side {
	const struct mat *m;
	const uint32_t *ivs;	/* NULL: every interval, 0 .. n - 1 */
	uint32_t n;
};

/* A side's sample, weighted: w[c] is how many times column c was drawn. */
struct wstat {
	double total;
	uint64_t min, max;
	uint32_t intervals;	/* columns drawn at least once */
};

static void side_weights(const struct side *sd, struct rng *r, double *w, struct wstat *st)
{
	const struct mat *m = sd->m;
	uint32_t k, iv, c;
	int32_t col;

	memset(w, 0, m->ncol * sizeof(*w));
	for (k = 0; k < sd->n; k++) {
		/* r: a resample, n draws with replacement; none: each of the side's intervals once */
		iv = r ? rng_below(r, sd->n) : k;
		col = m->col[sd->ivs ? sd->ivs[iv] : iv];
		if (col >= 0)
			w[col] += 1;
	}
	memset(st, 0, sizeof(*st));
	st->min = UINT64_MAX;
	for (c = 0; c < m->ncol; c++) {
		if (!w[c])
			continue;
		st->total += w[c] * m->cnt[c];
		st->intervals++;
		if (m->min[c] < st->min)
			st->min = m->min[c];
		if (m->max[c] > st->max)
			st->max = m->max[c];
	}
}

static double dot(const double *a, const double *w, uint32_t n)
{
	double s = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		s += a[i] * w[i];
	return s;
}

/*
 * The q-th quantile of the weighted sum of the columns: the first local bucket whose weighted
 * cumulative count reaches q * total, looked for from *hint (left where it was found).
 */
static double mat_quantile(const struct mat *m, const double *w, const struct wstat *st,
			   double q, uint32_t *hint)
{
	double rank = q * st->total, at, below = 0;
	uint32_t s = *hint < m->nslot ? *hint : 0, n = m->ncol;

	at = dot(m->cum + (size_t)s * n, w, n);
	if (at >= rank) {
		while (s > 0 && (below = dot(m->cum + (size_t)(s - 1) * n, w, n)) >= rank) {
			at = below;
			s--;
		}
		if (s == 0)
			below = 0;
	} else {
		do {
			below = at;
			at = dot(m->cum + (size_t)++s * n, w, n);
		} while (at < rank && s + 1 < m->nslot);
	}
	*hint = s;
	return hist_interp(m->slot[s], below, at - below, rank, st->min, st->max);
}

/* Scratch for comparing rows, sized for the largest. */
struct scratch {
	double *wa, *wb, *reps;
	size_t wcap;
};

static int scratch_fit(struct scratch *sc, uint32_t ncol_a, uint32_t ncol_b, int resamples)
{
	size_t need = ncol_a > ncol_b ? ncol_a : ncol_b;

	if (!sc->reps) {
		sc->reps = malloc((size_t)resamples * CMP_NQ * sizeof(*sc->reps));
		if (!sc->reps)
			return -1;
	}
	if (need + 1 > sc->wcap) {
		free(sc->wa);
		free(sc->wb);
		sc->wcap = need + 1;
		sc->wa = malloc(sc->wcap * sizeof(*sc->wa));
		sc->wb = malloc(sc->wcap * sizeof(*sc->wb));
		if (!sc->wa || !sc->wb)
			return -1;
	}
	return 0;
}

static void scratch_free(struct scratch *sc)
{
	free(sc->wa);
	free(sc->wb);
	free(sc->reps);
}

static double limit_of(const struct cmp_opts *o)
{
	double bucket2 = 2.0 * HIST_MAX_REL_ERR_PPM / 1e6;

	return o->threshold > bucket2 ? o->threshold : bucket2;
}

/* Has a side enough data for quantile k? Else the reason in why. */
static bool enough(const char *name, const struct wstat *st, int k, char *why, size_t len)
{
	double tail = st->total * (1 - cmp_q[k]);

	if (!st->total)
		snprintf(why, len, "no samples in %s", name);
	else if (st->intervals < CMP_MIN_INTERVALS)
		snprintf(why, len, "%s has samples in %u intervals (%d needed)", name,
			 st->intervals, CMP_MIN_INTERVALS);
	else if (tail < CMP_MIN_TAIL)
		snprintf(why, len, "%s has %.0f samples above %s (%d needed)", name, floor(tail),
			 cmp_q_name[k], CMP_MIN_TAIL);
	else
		return true;
	return false;
}

static double ratio(double b, double a)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a <= 0)
		return b <= 0 ? 1 : INFINITY;
	return b / a;
}

/*
 * Compare one row's sides: point estimates into qa, qb, cells into out. The bootstrap draws
 * the same intervals for every row (seeded afresh); a resample in which a side drew none of
 * the row's intervals has no quantile and is left out, and more than alpha / 4 of them left out
 * makes the cell not enough data (the interval would be that of another question).
 */
static void compare_row(const struct side *A, const struct side *B, const struct cmp_opts *o,
			uint64_t seed, struct scratch *sc, double qa[CMP_NQ], double qb[CMP_NQ],
			struct wstat *sa, struct wstat *sb, struct cmp_cell out[CMP_NQ])
{
	uint32_t ha[CMP_NQ] = { 0 }, hb[CMP_NQ] = { 0 };
	double limit = limit_of(o), *reps = sc->reps;
	bool want[CMP_NQ], any = false;
	struct wstat ra, rb;
	int k, r, kept[CMP_NQ] = { 0 };
	struct rng rng;

	side_weights(A, NULL, sc->wa, sa);
	side_weights(B, NULL, sc->wb, sb);
	for (k = 0; k < CMP_NQ; k++) {
		memset(&out[k], 0, sizeof(out[k]));
		qa[k] = sa->total ? mat_quantile(A->m, sc->wa, sa, cmp_q[k], &ha[k]) : NAN;
		qb[k] = sb->total ? mat_quantile(B->m, sc->wb, sb, cmp_q[k], &hb[k]) : NAN;
		out[k].ratio = ratio(qb[k], qa[k]);
		out[k].lo = out[k].hi = NAN;
		out[k].v = CMP_NOT_ENOUGH;
		want[k] = enough("A", sa, k, out[k].why, sizeof(out[k].why)) &&
			  enough("B", sb, k, out[k].why, sizeof(out[k].why));
		any |= want[k];
	}
	if (!any)
		return;
	rng_seed(&rng, seed);
	for (r = 0; r < o->resamples; r++) {
		side_weights(A, &rng, sc->wa, &ra);
		side_weights(B, &rng, sc->wb, &rb);
		if (!ra.total || !rb.total)
			continue;
		for (k = 0; k < CMP_NQ; k++)
			if (want[k])
				reps[k * o->resamples + kept[k]++] =
					ratio(mat_quantile(B->m, sc->wb, &rb, cmp_q[k], &hb[k]),
					      mat_quantile(A->m, sc->wa, &ra, cmp_q[k], &ha[k]));
	}
	for (k = 0; k < CMP_NQ; k++) {
		double *v = reps + k * o->resamples;

		if (!want[k])
			continue;
		if (kept[k] < o->resamples * (1 - o->alpha / 4)) {
			snprintf(out[k].why, sizeof(out[k].why),
				 "the row is missing from %d of %d resamples", o->resamples - kept[k],
				 o->resamples);
			continue;
		}
		sort_doubles(v, (size_t)kept[k]);
		out[k].lo = quantile_sorted(v, (size_t)kept[k], o->alpha / 2);
		out[k].hi = quantile_sorted(v, (size_t)kept[k], 1 - o->alpha / 2);
		if (out[k].lo > 1 + limit)
			out[k].v = CMP_SLOWER;
		else if (out[k].hi < 1 - limit)
			out[k].v = CMP_FASTER;
		else
			out[k].v = CMP_SAME;
	}
}

/* ---- results ---- */

const char *cmp_verdict_name(enum cmp_verdict v)
{
	switch (v) {
	case CMP_SAME: return "no change";
	case CMP_FASTER: return "faster";
	case CMP_SLOWER: return "slower";
	default: return "not enough data";
	}
}

int cmp_q_index(const char *name)
{
	int k;

	for (k = 0; k < CMP_NQ; k++)
		if (!strcmp(name, cmp_q_name[k]))
			return k;
	return -1;
}

static int opts_check(const struct cmp_opts *o)
{
	if (o->resamples < 100 || o->resamples > 1000000) {
		errorf("bad resample count %d: from 100 to 1000000", o->resamples);
		return -1;
	}
	if (!(o->alpha > 0 && o->alpha < 0.5)) {
		errorf("bad alpha %g: above 0 and below 0.5", o->alpha);
		return -1;
	}
	if (!(o->threshold >= 0 && o->threshold < 10)) {
		errorf("bad threshold %g: from 0 to 10 (a fraction)", o->threshold);
		return -1;
	}
	return 0;
}

static int row_order(const char *la, int oa, const char *sa, const char *lba,
		     const char *lb, int ob, const char *sb, const char *lbb)
{
	int c;

	if ((c = strcmp(la, lb)))
		return c;
	if (oa != ob)
		return oa < ob ? -1 : 1;
	if ((c = strcmp(sa, sb)))
		return c;
	return strcmp(lba, lbb);
}

static int row_cmp(const void *x, const void *y)
{
	const struct cmp_row *a = x, *b = y;

	return row_order(a->layer, a->stage_order, a->stage, a->labels,
			 b->layer, b->stage_order, b->stage, b->labels);
}

static int lone_cmp(const void *x, const void *y)
{
	const struct cmp_lone *a = x, *b = y;
	int c = strcmp(a->layer, b->layer);

	if (c)
		return c;
	if ((c = strcmp(a->stage, b->stage)))
		return c;
	if ((c = strcmp(a->labels, b->labels)))
		return c;
	return a->side - b->side;
}

/* Every interval of a row merged: the side's histogram, for the CDFs. */
static void row_hist(const struct srow *row, const struct side *sd, struct hist *h)
{
	size_t c, p;
	int32_t col;
	uint32_t k;

	memset(h, 0, sizeof(*h));
	for (k = 0; k < sd->n; k++) {
		col = sd->m->col[sd->ivs ? sd->ivs[k] : k];
		if (col < 0)
			continue;
		c = (size_t)col;
		if (!h->count || row->cells[c].min < h->min_ns)
			h->min_ns = row->cells[c].min;
		if (row->cells[c].max > h->max_ns)
			h->max_ns = row->cells[c].max;
		h->count += row->cells[c].count;
		h->sum_ns += row->cells[c].sum;
		for (p = row->cells[c].off; p < row->cells[c].off + row->cells[c].n; p++)
			h->slots[row->slot[p]] += row->cnt[p];
	}
}

static int lone_add(struct cmp_result *res, struct strpool *pool, const struct srow *row,
		    char side)
{
	struct cmp_lone *v = realloc(res->lone, (res->nlone + 1) * sizeof(*v));

	if (!v)
		return -1;
	res->lone = v;
	v = &v[res->nlone++];
	v->layer = strpool_intern(pool, row->layer);
	v->stage = strpool_intern(pool, row->stage);
	v->labels = strpool_intern(pool, row->labels);
	v->side = side;
	return v->layer && v->stage && v->labels ? 0 : -1;
}

/* Row ra of a against row rb of b, into out. 0, or -1 (out of memory). */
static int run_row(const struct cmp_set *a, const struct srow *ra, const struct cmp_set *b,
		   const struct srow *rb, const struct cmp_opts *o, struct scratch *sc,
		   struct strpool *pool, struct cmp_row *out)
{
	struct mat ma, mb;
	struct side A = { &ma, NULL, a->nintervals }, B = { &mb, NULL, b->nintervals };
	struct wstat sa, sb;
	int err = -1;

	if (mat_build(&ma, ra, a->nintervals))
		return -1;
	if (mat_build(&mb, rb, b->nintervals))
		goto out_a;
	if (scratch_fit(sc, ma.ncol, mb.ncol, o->resamples))
		goto out;
	memset(out, 0, sizeof(*out));
	out->layer = strpool_intern(pool, ra->layer);
	out->stage = strpool_intern(pool, ra->stage);
	out->labels = strpool_intern(pool, ra->labels);
	out->stage_order = ra->stage_order;
	if (!out->layer || !out->stage || !out->labels)
		goto out;
	compare_row(&A, &B, o, o->seed, sc, out->a.q, out->b.q, &sa, &sb, out->c);
	out->a.count = (uint64_t)sa.total;
	out->a.intervals = sa.intervals;
	out->b.count = (uint64_t)sb.total;
	out->b.intervals = sb.intervals;
	row_hist(ra, &A, &out->a.h);
	row_hist(rb, &B, &out->b.h);
	err = 0;
out:
	mat_free(&mb);
out_a:
	mat_free(&ma);
	return err;
}

struct cmp_result *cmp_run(const struct cmp_set *a, const struct cmp_set *b,
			   const struct cmp_opts *o)
{
	struct cmp_result *res;
	struct scratch sc = { 0 };
	struct strpool *pool;
	size_t i;
	long j;

	if (opts_check(o))
		return NULL;
	if (!a->nintervals || !b->nintervals) {
		errorf("nothing to compare: %s has no intervals", a->nintervals ? "B" : "A");
		return NULL;
	}
	res = calloc(1, sizeof(*res));
	pool = calloc(1, sizeof(*pool));
	if (res)
		res->pool = pool;
	if (!res || !pool || !(res->rows = calloc(a->nrows + 1, sizeof(*res->rows))))
		goto oom;
	res->o = *o;
	res->limit = limit_of(o);
	res->a_intervals = a->nintervals;
	res->b_intervals = b->nintervals;
	res->a_files = a->nfiles;
	res->b_files = b->nfiles;
	for (i = 0; i < a->nrows; i++) {
		j = row_find(b, a->rows[i].key);
		if (j < 0) {
			if (lone_add(res, pool, &a->rows[i], 'A'))
				goto oom;
			continue;
		}
		if (run_row(a, &a->rows[i], b, &b->rows[j], o, &sc, pool, &res->rows[res->nrows]))
			goto oom;
		res->nrows++;
	}
	for (i = 0; i < b->nrows; i++)
		if (row_find(a, b->rows[i].key) < 0 && lone_add(res, pool, &b->rows[i], 'B'))
			goto oom;
	scratch_free(&sc);
	if (!res->nrows) {
		errorf("A and B have no layer, stage and label set in common (A has %zu, B %zu)",
		       a->nrows, b->nrows);
		cmp_result_free(res);
		return NULL;
	}
	qsort(res->rows, res->nrows, sizeof(*res->rows), row_cmp);
	if (res->nlone)
		qsort(res->lone, res->nlone, sizeof(*res->lone), lone_cmp);
	return res;
oom:
	scratch_free(&sc);
	errorf("out of memory comparing");
	if (res)
		cmp_result_free(res);
	else
		free(pool);
	return NULL;
}

int cmp_changes(const struct cmp_result *r, int *ncompared)
{
	int changes = 0, compared = 0, k;
	size_t i;

	for (i = 0; i < r->nrows; i++) {
		for (k = 0; k < CMP_NQ; k++) {
			compared += r->rows[i].c[k].v != CMP_NOT_ENOUGH;
			changes += r->rows[i].c[k].v == CMP_FASTER ||
				   r->rows[i].c[k].v == CMP_SLOWER;
		}
	}
	if (ncompared)
		*ncompared = compared;
	return changes;
}

bool cmp_regressed(const struct cmp_result *r, const char *layer, const char *stage, int qi,
		   bool *found)
{
	bool slower = false;
	size_t i;

	*found = false;
	if (qi < 0 || qi >= CMP_NQ)
		return false;
	for (i = 0; i < r->nrows; i++) {
		if (strcmp(r->rows[i].layer, layer) || strcmp(r->rows[i].stage, stage))
			continue;
		*found = true;
		slower |= r->rows[i].c[qi].v == CMP_SLOWER;
	}
	return slower;
}

void cmp_result_free(struct cmp_result *r)
{
	if (!r)
		return;
	free(r->rows);
	free(r->lone);
	if (r->pool)
		strpool_free(r->pool);
	free(r->pool);
	free(r);
}

/* ---- the A/A check ---- */

static int aa_row_cmp(const void *x, const void *y)
{
	const struct cmp_aa_row *a = x, *b = y;

	return row_order(a->layer, a->stage_order, a->stage, a->labels,
			 b->layer, b->stage_order, b->stage, b->labels);
}

/* nsplits shuffles of the set's intervals, each cut into halves of half: [split][2 * half]. */
static uint32_t *aa_splits(uint32_t n, int nsplits, uint64_t seed, uint32_t half)
{
	uint32_t *perm = malloc(n * sizeof(*perm)), *out, i, j, t;
	struct rng rng;
	int k;

	out = malloc((size_t)nsplits * 2 * half * sizeof(*out) + 1);
	if (!perm || !out) {
		free(perm);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++)
		perm[i] = i;
	rng_seed(&rng, seed ^ 0x5eed5eed5eedULL);
	for (k = 0; k < nsplits; k++) {
		for (i = n - 1; i > 0; i--) {		/* Fisher-Yates */
			j = rng_below(&rng, i + 1);
			t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		memcpy(out + (size_t)k * 2 * half, perm, 2 * half * sizeof(*out));
	}
	free(perm);
	return out;
}

struct cmp_aa *cmp_aa_run(const struct cmp_set *s, int nsplits, const struct cmp_opts *o)
{
	uint32_t half = s->nintervals / 2, *splits = NULL;
	double qa[CMP_NQ], qb[CMP_NQ];
	struct cmp_cell cells[CMP_NQ];
	struct scratch sc = { 0 };
	struct wstat sa, sb;
	struct strpool *pool;
	struct cmp_aa *aa;
	bool *any = NULL;
	struct mat m;
	size_t i;
	int sp, k;

	if (opts_check(o))
		return NULL;
	if (nsplits < 1 || nsplits > 100000) {
		errorf("bad number of A/A splits %d: from 1 to 100000", nsplits);
		return NULL;
	}
	if (half < 1) {
		errorf("the A/A check needs at least 2 intervals (the set has %u)", s->nintervals);
		return NULL;
	}
	aa = calloc(1, sizeof(*aa));
	pool = calloc(1, sizeof(*pool));
	if (aa)
		aa->pool = pool;
	if (!aa || !pool || !(aa->rows = calloc(s->nrows + 1, sizeof(*aa->rows))) ||
	    !(any = calloc((size_t)nsplits, sizeof(*any))) ||
	    !(splits = aa_splits(s->nintervals, nsplits, o->seed, half)))
		goto oom;
	aa->o = *o;
	aa->limit = limit_of(o);
	aa->nsplits = nsplits;
	aa->intervals = s->nintervals;
	for (i = 0; i < s->nrows; i++) {
		const struct srow *row = &s->rows[i];
		struct cmp_aa_row *ar = &aa->rows[aa->nrows++];

		ar->layer = strpool_intern(pool, row->layer);
		ar->stage = strpool_intern(pool, row->stage);
		ar->labels = strpool_intern(pool, row->labels);
		ar->stage_order = row->stage_order;
		if (!ar->layer || !ar->stage || !ar->labels || mat_build(&m, row, s->nintervals))
			goto oom;
		if (scratch_fit(&sc, m.ncol, m.ncol, o->resamples)) {
			mat_free(&m);
			goto oom;
		}
		for (sp = 0; sp < nsplits; sp++) {
			const uint32_t *ivs = splits + (size_t)sp * 2 * half;
			struct side A = { &m, ivs, half }, B = { &m, ivs + half, half };

			/* each split its own resamples, the same for every row */
			compare_row(&A, &B, o, o->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(sp + 1),
				    &sc, qa, qb, &sa, &sb, cells);
			for (k = 0; k < CMP_NQ; k++) {
				if (cells[k].v == CMP_NOT_ENOUGH)
					continue;
				ar->compared[k]++;
				if (cells[k].v != CMP_SAME) {
					ar->changes[k]++;
					any[sp] = true;
				}
			}
		}
		mat_free(&m);
	}
	for (sp = 0; sp < nsplits; sp++)
		aa->any += any[sp];
	qsort(aa->rows, aa->nrows, sizeof(*aa->rows), aa_row_cmp);
	scratch_free(&sc);
	free(splits);
	free(any);
	return aa;
oom:
	scratch_free(&sc);
	free(splits);
	free(any);
	errorf("out of memory in the A/A check");
	if (aa)
		cmp_aa_free(aa);
	else
		free(pool);
	return NULL;
}

void cmp_aa_free(struct cmp_aa *aa)
{
	if (!aa)
		return;
	free(aa->rows);
	if (aa->pool)
		strpool_free(aa->pool);
	free(aa->pool);
	free(aa);
}
