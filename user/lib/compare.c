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
#include "layer.h"
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
	const char *key, *layer, *stage, *labels, *true_labels;
	int stage_order;
	struct cell *cells;
	size_t ncells, ccap;
	uint16_t *slot;
	uint64_t *cnt;
	size_t npairs, pcap;
	uint64_t unmeasured;	/* the row's events whose value could not be known */
	uint64_t count;		/* over the set: checked against 2^64 as it is added */
};

struct cmp_set {
	struct srow *rows;
	size_t nrows, cap;
	size_t *table;		/* open addressing: row index + 1, 0 empty */
	size_t tcap;
	uint32_t nintervals, nfiles;
	uint64_t drops;		/* events the tracer saw and could not record, every interval */
	uint64_t lost[NLAYERS];	/* of those, the ones of each layer (drop_layer) */
	const char *scheme;	/* the bucket scheme the meta records declare; NULL: none seen */
	const char *scheme_file;
	struct recread_runs runs;	/* one recording under two names would count twice */
	struct strpool pool;
};

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/*
 * A drop counter whose events are missing from the histograms: every one but a CQE whose ring
 * had no slot (uring_ring_full), whose reap is counted as unmeasured instead, and a slow
 * request's snoop record (snoop_lost), whose sample the histograms still have.
 */
static bool drop_loses_samples(const char *name)
{
	return !ends_with(name, "ring_full") && !ends_with(name, "snoop_lost");
}

/*
 * The layer whose histograms a drop counter's events are missing from: the one its name's
 * prefix names (uring_inflight_full), else, for a drop reason without one (complete_unseen),
 * the layer whose counters have none (block). -1: any other (prog_recursion, summed over every
 * layer's programs), so every layer's rows are taken to miss them.
 */
static int drop_layer(const char *name)
{
	int i, plain = -1;
	size_t n;

	for (i = 0; i < NLAYERS; i++) {
		n = strlen(layers[i]->name);
		if (layers[i]->drops_unprefixed)
			plain = i;
		else if (!strncmp(name, layers[i]->name, n) && name[n] == '_')
			return i;
	}
	return layer_drop_reason(name) ? plain : -1;
}

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
	recread_runs_free(&s->runs);
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
	char key[REC_LABELS_LEN + 256], labels[REC_LABELS_LEN];
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
	rec_id_labels_true(&r->id, labels, sizeof(labels));
	row->true_labels = strpool_intern(&s->pool, labels);
	row->stage_order = r->stage_order;
	if (!row->key || !row->layer || !row->stage || !row->labels || !row->true_labels)
		return -1;
	for (j = fnv1a(key) & (s->tcap - 1); s->table[j]; j = (j + 1) & (s->tcap - 1))
		;
	s->table[j] = ++s->nrows;
	return (long)s->nrows - 1;
}

static int pair_add(struct srow *row, uint32_t slot, uint64_t n)
{
	if (row->npairs == row->pcap) {
		/* small first: a per-process recording has many rows of a bucket or two */
		size_t cap = row->pcap ? row->pcap * 2 : 8;
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
			size_t cap = row->ccap ? row->ccap * 2 : 4;
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

/*
 * iv into the set's rows: 0; -1 said (out of memory); CMP_WRAPS, not said, when a count the
 * comparison keeps would pass 2^64 (a row's count or unmeasured count over the set, the
 * drops): only a damaged or forged file can do that. A row's bucket counts are parts of its
 * count: checking the total bounds them all. Latency sums are not checked: months of a busy
 * host can pass 2^64 ns for real, and compare shows no sum or mean.
 */
int cmp_set_add_interval(struct cmp_set *s, const struct interval *iv)
{
	const struct rec *r;
	struct srow *row;
	bool wrap = false;
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
		row = &s->rows[k];
		/* a label set twice in one interval: its sums checked against each other too */
		if (__builtin_add_overflow(row->count, r->h.count, &row->count) ||
		    __builtin_add_overflow(row->unmeasured, r->h.unmeasured, &row->unmeasured))
			return CMP_WRAPS;
	}
	for (i = 0; i < (size_t)iv->ndrops; i++) {
		int l;

		if (!drop_loses_samples(iv->drops[i].name))
			continue;
		wrap |= __builtin_add_overflow(s->drops, iv->drops[i].n, &s->drops);
		l = drop_layer(iv->drops[i].name);
		for (k = 0; k < NLAYERS; k++)
			if (l < 0 || l == k)
				wrap |= __builtin_add_overflow(s->lost[k], iv->drops[i].n, &s->lost[k]);
	}
	if (wrap)
		return CMP_WRAPS;
	s->nintervals++;
	return 0;
}

/*
 * Quantiles of sums of buckets mean something only if every file counted into the same
 * buckets: the reader refuses a bucket this build does not have; a set whose meta records
 * declare two schemes is refused here. 0, or -1 said.
 */
static int set_scheme(struct cmp_set *s, const char *path, const struct recread_meta *m)
{
	size_t i;

	for (i = 0; i < m->nkv && strcmp(m->kv[i].key, "buckets"); i++)
		;
	if (i == m->nkv)
		return 0;
	if (!s->scheme) {
		s->scheme = strpool_intern(&s->pool, m->kv[i].val);
		s->scheme_file = strpool_intern(&s->pool, path);
		return s->scheme && s->scheme_file ? 0 : -1;
	}
	if (strcmp(s->scheme, m->kv[i].val)) {
		errorf("%s and %s were recorded with different bucket schemes: not comparable",
		       s->scheme_file, path);
		return -1;
	}
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
		if (k == RR_INTERVAL && (err = cmp_set_add_interval(s, &iv)) == CMP_WRAPS)
			errorf("%s: its counts or drops, summed over the set, pass 2^64 at its "
			       "interval %u: not what a host can count", path,
			       s->nintervals - before + 1);
		if (err || k == RR_ERROR ||
		    (k == RR_META && (recread_runs_add(&s->runs, path, recread_meta(rr), NULL) ||
				      set_scheme(s, path, recread_meta(rr)))) ||
		    (k == RR_INTERVAL && s->nintervals == before + 1 &&
		     recread_runs_add(&s->runs, path, recread_meta(rr), &iv))) {
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
			/* a FIFO named like a recording would block the open for a writer */
			if (!stat(file, &st) && !S_ISREG(st.st_mode)) {
				errorf("%s: not a regular file, not a recording", file);
				err = -1;
			} else {
				err = cmp_set_add_file(s, file);
			}
		}
		free(names[i]);
	}
	free(names);
	return n ? err : -1;
}

/* ---- one side of one row: cumulative counts, and quantiles of weighted intervals ---- */

struct side {
	uint32_t n;		/* the side's intervals: a resample draws n of them */
	uint32_t ncol, nslot;	/* columns: those of the n intervals holding samples of the row */
	int32_t *col;		/* [n]: the column of the side's k-th interval; -1: no samples */
	uint32_t *slot;		/* [nslot]: the scheme's slot of each local bucket */
	double *cum;		/* [nslot][ncol]: column c's samples at or below local bucket s */
	double *cnt;		/* [ncol]: column c's samples */
	uint64_t *min, *max;	/* [ncol]: exact */
	/* the current weighting: w[c] is how often column c was drawn; drawn[] those with w > 0 */
	uint32_t *w, *drawn, ndrawn;
	double total;
	uint64_t wmin, wmax;
};

static void side_free(struct side *sd)
{
	free(sd->col);
	free(sd->slot);
	free(sd->cum);
	free(sd->cnt);
	free(sd->min);
	free(sd->max);
	free(sd->w);
	free(sd->drawn);
	memset(sd, 0, sizeof(*sd));
}

/*
 * The side made of the set's intervals ivs[0..n) (NULL: 0 .. n - 1) of row; cell_of maps an
 * interval of the set to the row's cell there, -1 when it has none. 0, or -1 (out of memory).
 */
static int side_build(struct side *sd, const struct srow *row, const int32_t *cell_of,
		      const uint32_t *ivs, uint32_t n)
{
	uint32_t local[HIST_NSLOTS], k, s, c, m;
	const struct cell *ce;
	int32_t ci;
	size_t p;

	memset(sd, 0, sizeof(*sd));
	memset(local, 0xff, sizeof(local));
	sd->n = n;
	sd->col = malloc((n + 1) * sizeof(*sd->col));
	if (!sd->col)
		return -1;
	for (k = 0; k < n; k++) {
		ci = cell_of[ivs ? ivs[k] : k];
		sd->col[k] = ci < 0 ? -1 : (int32_t)sd->ncol++;
		if (ci >= 0)
			for (ce = &row->cells[ci], p = ce->off; p < ce->off + ce->n; p++)
				local[row->slot[p]] = 0;
	}
	for (s = 0; s < HIST_NSLOTS; s++)
		sd->nslot += !local[s];
	m = sd->ncol + 1;
	sd->slot = malloc((sd->nslot + 1) * sizeof(*sd->slot));
	sd->cum = calloc((size_t)sd->nslot * sd->ncol + 1, sizeof(*sd->cum));
	sd->cnt = malloc(m * sizeof(*sd->cnt));
	sd->min = malloc(m * sizeof(*sd->min));
	sd->max = malloc(m * sizeof(*sd->max));
	sd->w = calloc(m, sizeof(*sd->w));
	sd->drawn = malloc(m * sizeof(*sd->drawn));
	if (!sd->slot || !sd->cum || !sd->cnt || !sd->min || !sd->max || !sd->w || !sd->drawn) {
		side_free(sd);
		return -1;
	}
	for (s = 0, k = 0; s < HIST_NSLOTS; s++) {
		if (!local[s]) {
			local[s] = k;
			sd->slot[k++] = s;
		}
	}
	for (k = 0; k < n; k++) {
		if (sd->col[k] < 0)
			continue;
		c = (uint32_t)sd->col[k];
		ce = &row->cells[cell_of[ivs ? ivs[k] : k]];
		sd->cnt[c] = (double)ce->count;
		sd->min[c] = ce->min;
		sd->max[c] = ce->max;
		for (p = ce->off; p < ce->off + ce->n; p++)
			sd->cum[(size_t)local[row->slot[p]] * sd->ncol + c] += (double)row->cnt[p];
	}
	for (s = 1; s < sd->nslot; s++)
		for (c = 0; c < sd->ncol; c++)
			sd->cum[(size_t)s * sd->ncol + c] += sd->cum[(size_t)(s - 1) * sd->ncol + c];
	return 0;
}

/* Weigh the columns: r, a resample (n draws with replacement); NULL, each interval once. */
static void side_weigh(struct side *sd, struct rng *r)
{
	uint32_t k, j, c;
	int32_t col;

	for (j = 0; j < sd->ndrawn; j++)	/* w is zero but for the last draw's columns */
		sd->w[sd->drawn[j]] = 0;
	sd->ndrawn = 0;
	if (!r) {	/* each interval once: each column once, in the intervals' order */
		for (c = 0; c < sd->ncol; c++) {
			sd->w[c] = 1;
			sd->drawn[sd->ndrawn++] = c;
		}
	}
	for (k = 0; r && k < sd->n; k++) {
		col = sd->col[rng_below(r, sd->n)];
		if (col >= 0 && !sd->w[col]++)
			sd->drawn[sd->ndrawn++] = (uint32_t)col;
	}
	sd->total = 0;
	sd->wmin = UINT64_MAX;
	sd->wmax = 0;
	for (j = 0; j < sd->ndrawn; j++) {
		c = sd->drawn[j];
		sd->total += (double)sd->w[c] * sd->cnt[c];
		if (sd->min[c] < sd->wmin)
			sd->wmin = sd->min[c];
		if (sd->max[c] > sd->wmax)
			sd->wmax = sd->max[c];
	}
}

/* The weighted samples at or below local bucket s. */
static double side_at(const struct side *sd, uint32_t s)
{
	const double *row = sd->cum + (size_t)s * sd->ncol;
	double a = 0, b = 0;
	uint32_t j = 0;

	for (; j + 1 < sd->ndrawn; j += 2) {
		a += (double)sd->w[sd->drawn[j]] * row[sd->drawn[j]];
		b += (double)sd->w[sd->drawn[j + 1]] * row[sd->drawn[j + 1]];
	}
	if (j < sd->ndrawn)
		a += (double)sd->w[sd->drawn[j]] * row[sd->drawn[j]];
	return a + b;
}

/*
 * The q-th quantile of the weighted sample (total > 0): the first local bucket whose weighted
 * cumulative count reaches q * total, looked for from *hint and left there. A resample's
 * quantile is rarely more than a bucket or two from the point estimate's.
 */
static double side_quantile(const struct side *sd, double q, uint32_t *hint)
{
	double rank = q * sd->total, at, below = 0;
	uint32_t s = *hint < sd->nslot ? *hint : 0;

	at = side_at(sd, s);
	if (at >= rank) {
		while (s > 0 && (below = side_at(sd, s - 1)) >= rank) {
			at = below;
			s--;
		}
		if (s == 0)
			below = 0;
	} else {
		while (at < rank && s + 1 < sd->nslot) {
			below = at;
			at = side_at(sd, ++s);
		}
	}
	*hint = s;
	return hist_interp(sd->slot[s], below, at - below, rank, sd->wmin, sd->wmax);
}

/* ---- the family: every cell of one comparison, its intervals simultaneous ---- */

struct family {
	int resamples;
	struct cmp_cell **cell;
	size_t n, cap;
	float *reps;		/* cell i's log ratios: resample r at reps[i * resamples + r] */
	/* the same with the events each side lost (drops) placed to lower (lo) or raise (hi)
	 * the ratio most, for the cells whose row lost any (bounded[i]) */
	float *lo, *hi;
	bool *bounded;
};

/*
 * Room for the log ratios of the cells c[k] whose bit k is set in want, in k's order, each
 * resamples long: the index of the first one. -1 when out of memory.
 */
static long family_add_row(struct family *f, struct cmp_cell *c, unsigned want)
{
	size_t n = f->n, k, first = f->n;
	float *rv;

	for (k = 0; k < CMP_NQ; k++)
		n += (want >> k) & 1;
	if (n > f->cap) {
		size_t cap = f->cap ? f->cap : 64;
		struct cmp_cell **cv;

		while (cap < n)
			cap *= 2;
		bool *bv;

		cv = realloc(f->cell, cap * sizeof(*cv));
		if (!cv)
			return -1;
		f->cell = cv;
		bv = realloc(f->bounded, cap * sizeof(*bv));
		if (!bv)
			return -1;
		f->bounded = bv;
		for (k = 0; k < 3; k++) {
			float **pv = k == 0 ? &f->reps : k == 1 ? &f->lo : &f->hi;

			rv = realloc(*pv, cap * (size_t)f->resamples * sizeof(*rv));
			if (!rv)
				return -1;
			*pv = rv;
		}
		f->cap = cap;
	}
	for (k = 0; k < CMP_NQ; k++)
		if (want & (1u << k))
			f->cell[f->n++] = &c[k];
	return (long)first;
}

static void family_free(struct family *f)
{
	free(f->cell);
	free(f->reps);
	free(f->lo);
	free(f->hi);
	free(f->bounded);
	memset(f, 0, sizeof(*f));
}

/* ---- one row, both sides: point estimates, and the bootstrap's log ratios ---- */

static double limit_of(const struct cmp_opts *o)
{
	double bucket2 = 2.0 * HIST_MAX_REL_ERR_PPM / 1e6;

	return o->threshold > bucket2 ? o->threshold : bucket2;
}

/*
 * How many intervals the samples at or above local bucket s come from, in effect (Kish's
 * effective number: (sum t)^2 / sum t^2 over the intervals' counts t there): 30 intervals
 * sharing a tail evenly count 30, a tail that is one interval's burst counts about 1.
 */
static double tail_intervals(const struct side *sd, uint32_t s)
{
	double t, sum = 0, sq = 0;
	uint32_t j, c;

	for (j = 0; j < sd->ndrawn; j++) {
		c = sd->drawn[j];
		t = sd->cnt[c] - (s ? sd->cum[(size_t)(s - 1) * sd->ncol + c] : 0);
		sum += sd->w[c] * t;
		sq += sd->w[c] * t * t;
	}
	return sq > 0 ? sum * sum / sq : 0;
}

/* Has a side (weighed each interval once) enough data for quantile k at local bucket s? */
static bool enough(const char *name, const struct side *sd, int k, uint32_t s, char *why,
		   size_t len)
{
	/*
	 * total - total * q, with a rounding margin: 100 * (1 - 0.9) is 9.999999999999998 in
	 * doubles, which refused exactly the 10 samples above p90 that 100 have.
	 */
	double tail = sd->total - sd->total * cmp_q[k] + 1e-9, eff;

	if (!sd->total) {
		snprintf(why, len, "no samples in %s", name);
		return false;
	}
	if (sd->ndrawn < CMP_MIN_INTERVALS) {
		snprintf(why, len, "%s has samples in %u intervals (%d needed)", name, sd->ndrawn,
			 CMP_MIN_INTERVALS);
		return false;
	}
	if (tail < CMP_MIN_TAIL) {
		snprintf(why, len, "%s has %.0f samples above %s (%d needed)", name, floor(tail),
			 cmp_q_name[k], CMP_MIN_TAIL);
		return false;
	}
	eff = tail_intervals(sd, s);
	if (eff < CMP_MIN_TAIL_INTERVALS) {
		/* rounded down, as the samples above are: 7.99 is not "8.0 ... (8 needed)" */
		snprintf(why, len, "%s's samples from %s up come from %.1f intervals in effect "
			 "(%d needed)", name, cmp_q_name[k], floor(eff * 10) / 10,
			 CMP_MIN_TAIL_INTERVALS);
		return false;
	}
	return true;
}

/* Does q lie in the open-ended bucket (>= 2^36 ns) of a side whose samples there span more
 * than 1/16 of their lower bound? Then it is only bounded below (hist_pct's rule). */
static bool q_bounded_only(const struct side *sd, double q)
{
	double lo = (double)hist_lo(HIST_OVERFLOW);

	if (q < lo)
		return false;
	if ((double)sd->wmin > lo)
		lo = (double)sd->wmin;
	return (double)sd->wmax < lo || (double)sd->wmax - lo > lo / 16;
}

/*
 * Is a side's quantile a value a ratio can be taken of? Not when it is only bounded below (in
 * the open-ended bucket: an estimate spread over [bound, max] would be made up; then withdrawn,
 * NAN, shown as unknown), nor when it is 0 and the other side's is not (B/A is 0 or infinite).
 */
static bool q_known(const char *name, const struct side *sd, double *q, double other, int k,
		    char *why, size_t len)
{
	if (q_bounded_only(sd, *q)) {
		snprintf(why, len, "%s's %s is in the open-ended bucket (>= %.1f s): not known", name,
			 cmp_q_name[k], (double)hist_lo(HIST_OVERFLOW) / 1e9);
		*q = NAN;
		return false;
	}
	if (*q <= 0 && other > 0) {
		snprintf(why, len, "%s's %s is 0 ns: no ratio to it", name, cmp_q_name[k]);
		return false;
	}
	return true;
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
 * Lost events (drops): m samples of unknown value missing from a side's n, a fraction e = m / n.
 * Its q-th quantile over all n + m lies between the observed quantile at q - e (1 - q) (every
 * lost one below every sample) and at q (1 + e) (every one above): at or below 0, the bound is
 * 0; at or above 1, there is none (infinite). side_bound reads a side at such a level.
 */
static double level_below(double q, double e)
{
	return q - e * (1 - q);
}

static double level_above(double q, double e)
{
	return q * (1 + e);
}

static double side_bound(const struct side *sd, double p, bool upper, uint32_t *hint)
{
	double x;

	if (!sd->total)
		return NAN;
	if (p <= 0)
		return 0;
	if (p >= 1)
		return INFINITY;
	x = side_quantile(sd, p, hint);
	if (q_bounded_only(sd, x))	/* in the open-ended bucket: only its floor is sure */
		return upper ? INFINITY : (double)hist_lo(HIST_OVERFLOW);
	return x;
}

/* A bound's log ratio, finite for the float reps: 0 and infinite ratios as -/+1e30 (NAN kept). */
static float log_bound(double b, double a)
{
	double v = log(ratio(b, a));

	if (isnan(v))
		return NAN;
	return (float)fmax(fmin(v, 1e30), -1e30);
}

/*
 * Compare one row's sides: the point estimates into qa, qb and the cells; every cell with
 * enough data joins the family with its bootstrap's log(B/A), resample by resample (NAN when a
 * side drew none of the row's intervals), and the same with each side's lost events (ma, mb)
 * placed to lower the ratio most and to raise it most. The seed is
 * the same for every row, so that resample r draws the same intervals in each: whole intervals
 * are resampled, and the family's resamples line up. 0, or -1 (out of memory).
 */
static int compare_row(struct side *A, struct side *B, const struct cmp_opts *o,
		       uint64_t seed, uint64_t ma, uint64_t mb, double qa[CMP_NQ],
		       double qb[CMP_NQ], struct cmp_cell out[CMP_NQ], struct family *fam)
{
	uint32_t ha[CMP_NQ] = { 0 }, hb[CMP_NQ] = { 0 }, hal[CMP_NQ] = { 0 };
	uint32_t hah[CMP_NQ] = { 0 }, hbl[CMP_NQ] = { 0 }, hbh[CMP_NQ] = { 0 };
	bool lost = ma || mb;
	unsigned want = 0;
	struct rng rng;
	size_t at;
	long first;
	double x, y, ea, eb;
	int k, j, r;

	side_weigh(A, NULL);
	side_weigh(B, NULL);
	/* fractions of each side's samples of the row: a resample keeps them */
	ea = A->total ? (double)ma / A->total : 0;
	eb = B->total ? (double)mb / B->total : 0;
	for (k = 0; k < CMP_NQ; k++) {
		memset(&out[k], 0, sizeof(out[k]));
		qa[k] = A->total ? side_quantile(A, cmp_q[k], &ha[k]) : NAN;
		qb[k] = B->total ? side_quantile(B, cmp_q[k], &hb[k]) : NAN;
		out[k].lo = out[k].hi = NAN;
		out[k].v = CMP_NOT_ENOUGH;
		if (enough("A", A, k, ha[k], out[k].why, sizeof(out[k].why)) &&
		    enough("B", B, k, hb[k], out[k].why, sizeof(out[k].why)) &&
		    q_known("A", A, &qa[k], qb[k], k, out[k].why, sizeof(out[k].why)) &&
		    q_known("B", B, &qb[k], qa[k], k, out[k].why, sizeof(out[k].why)))
			want |= 1u << k;
		if (q_bounded_only(A, qa[k]))	/* whatever else it lacks: not a value */
			qa[k] = NAN;
		if (q_bounded_only(B, qb[k]))
			qb[k] = NAN;
		out[k].ratio = ratio(qb[k], qa[k]);
	}
	if (!want)
		return 0;
	first = family_add_row(fam, out, want);
	if (first < 0)
		return -1;
	for (j = (int)first; (size_t)j < fam->n; j++)
		fam->bounded[j] = lost;
	rng_seed(&rng, seed);
	for (r = 0; r < o->resamples; r++) {
		side_weigh(A, &rng);
		side_weigh(B, &rng);
		for (k = 0, j = 0; k < CMP_NQ; k++) {
			if (!(want & (1u << k)))
				continue;
			at = ((size_t)first + (size_t)j++) * (size_t)o->resamples + (size_t)r;
			x = A->total ? side_quantile(A, cmp_q[k], &ha[k]) : NAN;
			y = B->total ? side_quantile(B, cmp_q[k], &hb[k]) : NAN;
			/* a resample's quantile only bounded is no value either: left out */
			if (q_bounded_only(A, x) || q_bounded_only(B, y))
				x = NAN;
			fam->reps[at] = (float)log(ratio(y, x));
			if (!lost)	/* no bounds: family_decide reads only reps */
				continue;
			if (isnan(x) || isnan(y)) {
				fam->lo[at] = fam->hi[at] = NAN;
				continue;
			}
			/* lowest: B's lost below its samples, A's above; highest: the other way */
			fam->lo[at] = log_bound(side_bound(B, level_below(cmp_q[k], eb), false,
							   &hbl[k]),
						side_bound(A, level_above(cmp_q[k], ea), true,
							   &hah[k]));
			fam->hi[at] = log_bound(side_bound(B, level_above(cmp_q[k], eb), true,
							   &hbh[k]),
						side_bound(A, level_below(cmp_q[k], ea), false,
							   &hal[k]));
		}
	}
	return 0;
}

/* How far log ratio x lies from the cell's centre, in units of its own one-sided spread. */
static double spread_units(double x, double mid, double down, double up)
{
	if (x >= mid)
		return (x - mid) / up;
	return (mid - x) / down;
}

/*
 * The cells' intervals and verdicts, simultaneous over the family (max-T): each cell's
 * bootstrap distribution of log(B/A) has a centre (its median) and one-sided spreads (to its
 * alpha/2 and 1 - alpha/2 quantiles); a resample's distance is the largest over the cells of
 * how many spreads it lies from the centre, and the (1 - alpha) quantile of that distance, the
 * widening, stretches every cell's interval. Alone, a cell's widening is 1 (its percentile
 * interval); in a family, the chance that any interval misses its ratio is about alpha, not
 * alpha per cell (docs/compare.md). *widen: the widening; 0, or -1 (out of memory).
 */
static inline double rep(const struct family *f, size_t i, int r)
{
	return f->reps[i * (size_t)f->resamples + (size_t)r];
}

/* The verdict on an interval of B/A. */
static enum cmp_verdict verdict_of(double lo, double hi, double limit)
{
	if (lo > 1 + limit)
		return CMP_SLOWER;
	if (hi < 1 - limit)
		return CMP_FASTER;
	return CMP_SAME;
}

/*
 * Cell i's interval with the events each side lost placed at their worst (f->lo, f->hi), as
 * wide as its own (widen m): [*lo, *hi], 0 and infinite where a bound has none. v: scratch.
 */
static void lost_interval(const struct family *f, size_t i, double m, double alpha, double *v,
			  double *lo, double *hi)
{
	int R = f->resamples, r, kept;
	double mid, end;

	for (r = 0, kept = 0; r < R; r++)
		if (!isnan(f->lo[i * (size_t)R + (size_t)r]))
			v[kept++] = f->lo[i * (size_t)R + (size_t)r];
	mid = quantile_select(v, (size_t)kept, 0.5);
	end = quantile_select(v, (size_t)kept, alpha / 2);
	*lo = kept && end > -1e29 ? exp(mid - m * fmax(mid - end, 1e-9)) : 0;
	for (r = 0, kept = 0; r < R; r++)
		if (!isnan(f->hi[i * (size_t)R + (size_t)r]))
			v[kept++] = f->hi[i * (size_t)R + (size_t)r];
	mid = quantile_select(v, (size_t)kept, 0.5);
	end = quantile_select(v, (size_t)kept, 1 - alpha / 2);
	*hi = kept && end < 1e29 ? exp(mid + m * fmax(end - mid, 1e-9)) : INFINITY;
}

static int family_decide(struct family *f, const struct cmp_opts *o, double *widen)
{
	int R = o->resamples, r, kept;
	double *v = malloc((size_t)R * sizeof(*v)), *mid = calloc(f->n + 1, sizeof(*mid));
	double *down = calloc(f->n + 1, sizeof(*down)), *up = calloc(f->n + 1, sizeof(*up));
	double *dist = malloc((size_t)R * sizeof(*dist)), limit = limit_of(o), d, m = 1, lo, hi;
	bool *in = calloc(f->n + 1, sizeof(*in));
	size_t i;
	int err = -1;

	if (!v || !mid || !down || !up || !dist || !in)
		goto out;
	for (i = 0; i < f->n; i++) {
		int zero = 0;

		for (r = 0, kept = 0; r < R; r++)
			if (isfinite(rep(f, i, r)))	/* NAN: row not drawn; inf: a 0 quantile */
				v[kept++] = rep(f, i, r);
			else
				zero += !isnan(rep(f, i, r));
		/* a row missing from many resamples: its interval would answer another question */
		if (kept < R * (1 - o->alpha / 4)) {
			if (zero)	/* not missing: B/A is 0 or infinite where one side is 0 */
				snprintf(f->cell[i]->why, sizeof(f->cell[i]->why),
					 "one side's quantile is 0 ns in %d of %d resamples", zero, R);
			else
				snprintf(f->cell[i]->why, sizeof(f->cell[i]->why),
					 "the row is missing from %d of %d resamples", R - kept, R);
			continue;
		}
		mid[i] = quantile_select(v, (size_t)kept, 0.5);
		down[i] = fmax(mid[i] - quantile_select(v, (size_t)kept, o->alpha / 2), 1e-9);
		up[i] = fmax(quantile_select(v, (size_t)kept, 1 - o->alpha / 2) - mid[i], 1e-9);
		in[i] = true;
	}
	for (r = 0, kept = 0; r < R; r++) {
		for (i = 0, d = 0; i < f->n; i++)
			if (in[i] && isfinite(rep(f, i, r)))
				d = fmax(d, spread_units(rep(f, i, r), mid[i], down[i], up[i]));
		dist[kept++] = d;
	}
	if (kept)
		m = fmax(quantile_select(dist, (size_t)kept, 1 - o->alpha), 1);
	for (i = 0; i < f->n; i++) {
		struct cmp_cell *c = f->cell[i];

		if (!in[i])
			continue;
		c->lo = exp(mid[i] - m * down[i]);
		c->hi = exp(mid[i] + m * up[i]);
		c->why[0] = '\0';
		if (!isfinite(c->lo) || !isfinite(c->hi)) {	/* never called a change, nor none */
			snprintf(c->why, sizeof(c->why), "the interval has no finite bounds");
			c->lo = c->hi = NAN;
			c->v = CMP_NOT_ENOUGH;
			continue;
		}
		c->v = verdict_of(c->lo, c->hi, limit);
		if (!f->bounded[i])
			continue;
		/*
		 * Events lost: the interval holds whatever their values were, and the one above
		 * (the bounds' spreads need not cover it when widened); a verdict they could
		 * change is not given.
		 */
		lost_interval(f, i, m, o->alpha, v, &lo, &hi);
		lo = fmin(lo, c->lo);
		hi = fmax(hi, c->hi);
		if (verdict_of(lo, hi, limit) != c->v) {
			char l[16], h[16];

			snprintf(c->why, sizeof(c->why), "events lost (drops) could undo it: %s "
				 "without them, %s-%s with them", cmp_verdict_name(c->v),
				 cmp_ratio_str(l, sizeof(l), lo), cmp_ratio_str(h, sizeof(h), hi));
			c->v = CMP_NOT_ENOUGH;
			c->lost = true;
			lo = hi = NAN;
		}
		c->lo = lo;
		c->hi = hi;
	}
	*widen = m;
	err = 0;
out:
	free(v);
	free(mid);
	free(down);
	free(up);
	free(dist);
	free(in);
	return err;
}

/* ---- results ---- */

const char *cmp_ratio_str(char *buf, size_t len, double v)
{
	/* %#.3g keeps its zeros: 0.09996 is 0.100, as 0.1004 is; 1e300 is not 301 digits */
	snprintf(buf, len, v == 0 || (fabs(v) >= 0.1 && fabs(v) < 1e6) ? "%.3f" : "%#.3g", v);
	return buf;
}

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

/* Each interval of the set -> the row's cell there, -1: none. NULL when out of memory. */
static int32_t *cells_of(const struct srow *row, uint32_t nintervals)
{
	int32_t *v = malloc((nintervals + 1) * sizeof(*v));
	size_t c;

	if (!v)
		return NULL;
	memset(v, 0xff, nintervals * sizeof(*v));
	for (c = 0; c < row->ncells; c++)
		v[row->cells[c].iv] = (int32_t)c;
	return v;
}

/* The row's cells merged, for the CDFs, into d (its arrays allocated). 0, or -1 (memory). */
static int row_dist(const struct srow *row, struct cmp_dist *d)
{
	uint64_t *slots = calloc(HIST_NSLOTS, sizeof(*slots));
	const struct cell *c;
	size_t i, p;
	uint32_t n = 0;

	memset(d, 0, sizeof(*d));
	if (!slots)
		return -1;
	for (i = 0; i < row->ncells; i++) {
		c = &row->cells[i];
		if (!d->count || c->min < d->min_ns)
			d->min_ns = c->min;
		if (c->max > d->max_ns)
			d->max_ns = c->max;
		d->count += c->count;
		for (p = c->off; p < c->off + c->n; p++)
			slots[row->slot[p]] += row->cnt[p];
	}
	for (i = 0; i < HIST_NSLOTS; i++)
		n += !!slots[i];
	d->slot = malloc((n ? n : 1) * sizeof(*d->slot));
	d->cnt = malloc((n ? n : 1) * sizeof(*d->cnt));
	if (!d->slot || !d->cnt) {
		free(slots);
		return -1;
	}
	for (i = 0; i < HIST_NSLOTS; i++)
		if (slots[i]) {
			d->slot[d->n] = (uint16_t)i;
			d->cnt[d->n++] = slots[i];
		}
	free(slots);
	return 0;
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
	v->true_labels = strpool_intern(pool, row->true_labels);
	v->side = side;
	return v->layer && v->stage && v->labels && v->true_labels ? 0 : -1;
}

/* The events set s lost that row's histograms may miss: those of its layer. */
static uint64_t set_lost(const struct cmp_set *s, const struct srow *row)
{
	int id;

	if (!layer_by_name(row->layer, &id))
		return s->drops;	/* a layer this build does not know: every lost event */
	return s->lost[id];
}

/* Row ra of a against row rb of b, into out; its cells with enough data into fam. 0, or -1. */
static int run_row(const struct cmp_set *a, const struct srow *ra, const struct cmp_set *b,
		   const struct srow *rb, const struct cmp_opts *o, struct strpool *pool,
		   struct cmp_row *out, struct family *fam)
{
	int32_t *ca = cells_of(ra, a->nintervals), *cb = cells_of(rb, b->nintervals);
	struct side A, B;
	int err = -1;

	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	memset(out, 0, sizeof(*out));
	if (!ca || !cb || side_build(&A, ra, ca, NULL, a->nintervals) ||
	    side_build(&B, rb, cb, NULL, b->nintervals))
		goto out;
	out->layer = strpool_intern(pool, ra->layer);
	out->stage = strpool_intern(pool, ra->stage);
	out->labels = strpool_intern(pool, ra->labels);
	out->true_labels = strpool_intern(pool, ra->true_labels);
	out->stage_order = ra->stage_order;
	if (!out->layer || !out->stage || !out->labels || !out->true_labels ||
	    compare_row(&A, &B, o, o->seed, set_lost(a, ra), set_lost(b, rb), out->a.q, out->b.q,
			out->c, fam))
		goto out;
	side_weigh(&A, NULL);
	side_weigh(&B, NULL);
	out->a.count = ra->count;	/* A.total, exact */
	out->a.intervals = A.ndrawn;
	out->a.unmeasured = ra->unmeasured;
	out->b.count = rb->count;
	out->b.intervals = B.ndrawn;
	out->b.unmeasured = rb->unmeasured;
	if (row_dist(ra, &out->a.h) || row_dist(rb, &out->b.h)) {
		free(out->a.h.slot);	/* the row is not the result's: freed here */
		free(out->a.h.cnt);
		free(out->b.h.slot);
		free(out->b.h.cnt);
		goto out;
	}
	err = 0;
out:
	side_free(&A);
	side_free(&B);
	free(ca);
	free(cb);
	return err;
}

struct cmp_result *cmp_run(const struct cmp_set *a, const struct cmp_set *b,
			   const struct cmp_opts *o)
{
	struct family fam = { .resamples = o->resamples };
	struct cmp_result *res;
	struct strpool *pool;
	size_t i;
	long j;

	if (opts_check(o))
		return NULL;
	if (!a->nintervals || !b->nintervals) {
		errorf("nothing to compare: %s has no intervals", a->nintervals ? "B" : "A");
		return NULL;
	}
	if (a->scheme && b->scheme && strcmp(a->scheme, b->scheme)) {
		errorf("%s and %s were recorded with different bucket schemes: not comparable",
		       a->scheme_file, b->scheme_file);
		return NULL;
	}
	res = calloc(1, sizeof(*res));
	pool = calloc(1, sizeof(*pool));
	if (res)
		res->pool = pool;
	/* rows never move once made: the family points into them */
	if (!res || !pool || !(res->rows = calloc(a->nrows + 1, sizeof(*res->rows))))
		goto oom;
	res->o = *o;
	res->limit = limit_of(o);
	res->widen = 1;
	res->a_intervals = a->nintervals;
	res->b_intervals = b->nintervals;
	res->a_files = a->nfiles;
	res->b_files = b->nfiles;
	res->a_drops = a->drops;
	res->b_drops = b->drops;
	for (i = 0; i < a->nrows; i++) {
		j = row_find(b, a->rows[i].key);
		if (j < 0) {
			if (lone_add(res, pool, &a->rows[i], 'A'))
				goto oom;
			continue;
		}
		if (run_row(a, &a->rows[i], b, &b->rows[j], o, pool, &res->rows[res->nrows],
			    &fam))
			goto oom;
		res->nrows++;
	}
	for (i = 0; i < b->nrows; i++)
		if (row_find(a, b->rows[i].key) < 0 && lone_add(res, pool, &b->rows[i], 'B'))
			goto oom;
	if (!res->nrows) {
		errorf("A and B have no layer, stage and label set in common (A has %zu, B %zu)",
		       a->nrows, b->nrows);
		goto fail;
	}
	if (family_decide(&fam, o, &res->widen))
		goto oom;
	res->family = (int)fam.n;
	family_free(&fam);
	qsort(res->rows, res->nrows, sizeof(*res->rows), row_cmp);
	if (res->nlone)
		qsort(res->lone, res->nlone, sizeof(*res->lone), lone_cmp);
	return res;
oom:
	errorf("out of memory comparing");
fail:
	family_free(&fam);
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

int cmp_lost(const struct cmp_result *r)
{
	size_t i;
	int k, n = 0;

	for (i = 0; i < r->nrows; i++)
		for (k = 0; k < CMP_NQ; k++)
			n += r->rows[i].c[k].lost;
	return n;
}

bool cmp_stage_lost(const struct cmp_result *r, const char *layer, const char *stage, int qi)
{
	size_t i;

	if (qi < 0 || qi >= CMP_NQ)
		return false;
	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].layer, layer) && !strcmp(r->rows[i].stage, stage) &&
		    r->rows[i].c[qi].lost)
			return true;
	return false;
}

int cmp_stage_compared(const struct cmp_result *r, const char *layer, const char *stage, int qi)
{
	size_t i;
	int n = 0;

	if (qi < 0 || qi >= CMP_NQ)
		return 0;
	for (i = 0; i < r->nrows; i++)
		n += !strcmp(r->rows[i].layer, layer) && !strcmp(r->rows[i].stage, stage) &&
		     r->rows[i].c[qi].v != CMP_NOT_ENOUGH;
	return n;
}

double cmp_stage_hi(const struct cmp_result *r, const char *layer, const char *stage, int qi)
{
	double hi = NAN;
	size_t i;

	if (qi < 0 || qi >= CMP_NQ)
		return NAN;
	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].layer, layer) && !strcmp(r->rows[i].stage, stage) &&
		    r->rows[i].c[qi].v != CMP_NOT_ENOUGH && (isnan(hi) || r->rows[i].c[qi].hi > hi))
			hi = r->rows[i].c[qi].hi;
	return hi;
}

void cmp_result_free(struct cmp_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nrows; i++) {
		free(r->rows[i].a.h.slot);
		free(r->rows[i].a.h.cnt);
		free(r->rows[i].b.h.slot);
		free(r->rows[i].b.h.cnt);
	}
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

/* One split: its halves compared, row by row, as one family. 0, or -1 (out of memory). */
static int aa_split(const struct cmp_set *s, int32_t **cell_of, const uint32_t *ivs,
		    uint32_t half, const struct cmp_opts *o, uint64_t seed, struct cmp_aa *aa,
		    struct cmp_cell *cells, struct family *fam, bool *any, bool *judged)
{
	double qa[CMP_NQ], qb[CMP_NQ], widen;
	struct side A, B;
	size_t i;
	int k, err = 0;

	fam->n = 0;
	for (i = 0; i < s->nrows && !err; i++) {
		err = side_build(&A, &s->rows[i], cell_of[i], ivs, half);
		if (!err && (err = side_build(&B, &s->rows[i], cell_of[i], ivs + half, half)))
			side_free(&A);
		if (err)
			break;
		err = compare_row(&A, &B, o, seed, 0, 0, qa, qb, cells + i * CMP_NQ, fam);
		side_free(&A);
		side_free(&B);
	}
	if (err || family_decide(fam, o, &widen))
		return -1;
	for (i = 0; i < s->nrows; i++) {
		for (k = 0; k < CMP_NQ; k++) {
			const struct cmp_cell *c = &cells[i * CMP_NQ + k];

			if (c->v == CMP_NOT_ENOUGH)
				continue;
			aa->rows[i].compared[k]++;
			*judged = true;
			if (c->v != CMP_SAME) {
				aa->rows[i].changes[k]++;
				*any = true;
			}
		}
	}
	return 0;
}

struct cmp_aa *cmp_aa_run(const struct cmp_set *s, int nsplits, const struct cmp_opts *o)
{
	uint32_t half = s->nintervals / 2, *perm = NULL, i, j, t;
	struct family fam = { .resamples = o->resamples };
	struct cmp_cell *cells = NULL;
	int32_t **cell_of = NULL;
	struct strpool *pool;
	struct cmp_aa *aa;
	struct rng rng;
	size_t r;
	int sp;

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
	    !(cell_of = calloc(s->nrows + 1, sizeof(*cell_of))) ||
	    !(cells = calloc(s->nrows * CMP_NQ + 1, sizeof(*cells))) ||
	    !(perm = malloc(s->nintervals * sizeof(*perm))))
		goto oom;
	aa->o = *o;
	aa->limit = limit_of(o);
	aa->nsplits = nsplits;
	aa->intervals = s->nintervals;
	aa->drops = s->drops;
	for (r = 0; r < s->nrows; r++) {
		struct cmp_aa_row *ar = &aa->rows[r];

		ar->layer = strpool_intern(pool, s->rows[r].layer);
		ar->stage = strpool_intern(pool, s->rows[r].stage);
		ar->labels = strpool_intern(pool, s->rows[r].labels);
		ar->true_labels = strpool_intern(pool, s->rows[r].true_labels);
		ar->stage_order = s->rows[r].stage_order;
		cell_of[r] = cells_of(&s->rows[r], s->nintervals);
		if (!ar->layer || !ar->stage || !ar->labels || !ar->true_labels || !cell_of[r])
			goto oom;
	}
	aa->nrows = s->nrows;
	for (i = 0; i < s->nintervals; i++)
		perm[i] = i;
	rng_seed(&rng, o->seed ^ 0x5eed5eed5eedULL);
	for (sp = 0; sp < nsplits; sp++) {
		bool any = false, judged = false;

		for (i = s->nintervals - 1; i > 0; i--) {	/* Fisher-Yates */
			j = rng_below(&rng, i + 1);
			t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		/* each split its own resamples, the same for every row */
		if (aa_split(s, cell_of, perm, half, o,
			     o->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(sp + 1), aa, cells, &fam,
			     &any, &judged))
			goto oom;
		aa->any += any;
		aa->judged += judged;
	}
	qsort(aa->rows, aa->nrows, sizeof(*aa->rows), aa_row_cmp);
	for (r = 0; r < s->nrows; r++)
		free(cell_of[r]);
	free(cell_of);
	free(cells);
	family_free(&fam);
	free(perm);
	return aa;
oom:
	errorf("out of memory in the A/A check");
	if (cell_of)
		for (r = 0; r < s->nrows; r++)
			free(cell_of[r]);
	free(cell_of);
	free(cells);
	family_free(&fam);
	free(perm);
	if (aa)
		cmp_aa_free(aa);
	else
		free(pool);
	return NULL;
}

bool cmp_aa_rate(const struct cmp_aa *aa, double *rate, char *why, size_t len)
{
	*rate = NAN;
	why[0] = '\0';
	if (!aa->judged)
		snprintf(why, len, "no split had enough data for any quantile (halves of %u "
			 "intervals): the machine's noise is unknown; record longer or with shorter "
			 "intervals", aa->intervals / 2);
	else if (2 * aa->judged < aa->nsplits)
		snprintf(why, len, "only %d of %d splits had enough data for any quantile (halves "
			 "of %u intervals): the machine's noise is unknown; record longer or with "
			 "shorter intervals", aa->judged, aa->nsplits, aa->intervals / 2);
	else
		*rate = (double)aa->any / aa->judged;
	return !why[0];
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
