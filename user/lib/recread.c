// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>
#include "strpool.h"
#include "layer.h"
#include "log.h"
#include "histfmt.h"
#include "recread.h"
#include "utf8.h"
#include "zsrc.h"

#define CHUNK (1u << 20)
/* Tokens of one record at most: a record of ours has ~100 a histogram. */
#define MAX_TOKENS (4u << 20)
#define MAX_DEPTH 16			/* arrays and objects in one record, nested */
#define TS_MAX_NS (1ULL << 62)		/* 2116-02-20, in ns since 1970 */

struct inflater;

/* An interval read, by its end and length: no interval of one run ends at the same ns twice. */
struct seen_iv {
	uint64_t ts, len, lineno;	/* lineno 0: an empty slot */
};

struct recread {
	char *path;
	struct zsrc *z;
	char *buf;		/* bytes read and not yet taken as lines */
	size_t len, cap, off;
	bool eof, cut;		/* the stream ended; it ended inside a gzip member (cut short) */
	uint64_t lineno;
	uint64_t nrec[RR_ERROR];
	struct recread_meta meta;
	struct recread_end end;
	struct strpool pool;	/* names of layers, stages and counters this build does not know */
	bool warned_type, warned_layer, warned_mended;
	struct seen_iv *seen;	/* intervals read: a hash set of their ts and interval_ns */
	size_t nseen, seencap;
	struct inflater *inf;	/* the thread that inflates ahead */
	bool inf_tried;
	jsmntok_t *tok;		/* one line's tokens */
	char warnings[4][300];	/* said at the end; an error instead says only itself */
	int nwarnings;
	unsigned int ntok;
};

/* A warning, said once the file has been read whole (not at all if it turns out bad). */
static void rwarn(struct recread *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rwarn(struct recread *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nwarnings == 4)
		return;
	va_start(ap, fmt);
	vsnprintf(r->warnings[r->nwarnings++], sizeof(r->warnings[0]), fmt, ap);
	va_end(ap);
}

static enum recread_kind at_end(struct recread *r)
{
	int i;

	for (i = 0; i < r->nwarnings; i++)
		warnf("%s", r->warnings[i]);
	r->nwarnings = 0;
	return RR_EOF;
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

struct recread *recread_open(const char *path)
{
	struct recread *r;
	struct stat st;
	int fd;

	/* "-": standard input, as a pipe from zcat or ssh gives it (a copy: stdin stays open) */
	if (!strcmp(path, "-")) {
		path = "stdin";
		fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		/* closed, and held by main() with an O_PATH descriptor of "/": not a directory */
		if (fd >= 0 && (fcntl(fd, F_GETFL) & O_PATH)) {
			close(fd);
			fd = -1;
			errno = EBADF;
		}
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		errorf("cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || S_ISDIR(st.st_mode)) {
		errorf("%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory, not a recording" :
		       strerror(errno));
		close(fd);
		return NULL;
	}
	/* a /proc or /sys file says 0 bytes and has some: read one to be sure */
	if (S_ISREG(st.st_mode) && st.st_size == 0 && pread(fd, &(char){ 0 }, 1, 0) == 0) {
		errorf("%s: empty file, not a recording", path);
		close(fd);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path)) || !(r->z = zsrc_open(fd))) {
		errorf("out of memory opening %s", path);
		if (r)
			free(r->path);
		free(r);
		close(fd);
		return NULL;
	}
	return r;
}

/*
 * Inflating is a third of the reading: a thread does it into a few chunks while the caller
 * tokenizes the ones before (one reader, one writer, under a mutex). Without the thread
 * (it could not start) the caller inflates itself.
 */
#define NCHUNKS 4

struct chunk {
	char *data;
	long n;			/* bytes, 0 at the end, -1 on an error (err, err_no) */
	enum zsrc_err err;
	int err_no;
};

struct inflater {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct chunk c[NCHUNKS];
	unsigned int head, tail;	/* filled by the thread up to head, taken up to tail */
	bool stop, started;
};

static void chunk_read(struct zsrc *z, struct chunk *c)
{
	c->n = zsrc_read(z, c->data, CHUNK);
	c->err = c->n < 0 ? zsrc_error(z, &c->err_no) : ZSRC_OK;
}

static void *inflate_thread(void *arg)
{
	struct recread *r = arg;
	struct inflater *f = r->inf;
	struct chunk *c;

	for (;;) {
		pthread_mutex_lock(&f->mu);
		while (!f->stop && f->head - f->tail == NCHUNKS)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop) {
			pthread_mutex_unlock(&f->mu);
			break;
		}
		c = &f->c[f->head % NCHUNKS];
		pthread_mutex_unlock(&f->mu);
		chunk_read(r->z, c);
		pthread_mutex_lock(&f->mu);
		f->head++;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (c->n <= 0)
			break;
	}
	return NULL;
}

static void inflater_start(struct recread *r)
{
	struct inflater *f = calloc(1, sizeof(*f));
	int i;

	if (!f)
		return;
	for (i = 0; i < NCHUNKS; i++)
		if (!(f->c[i].data = malloc(CHUNK)))
			goto fail;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	r->inf = f;
	if (!pthread_create(&f->th, NULL, inflate_thread, r)) {
		f->started = true;
		return;
	}
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	r->inf = NULL;
fail:
	for (i = 0; i < NCHUNKS; i++)
		free(f->c[i].data);
	free(f);
}

static void inflater_stop(struct recread *r)
{
	struct inflater *f = r->inf;
	int i;

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->th, NULL);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	for (i = 0; i < NCHUNKS; i++)
		free(f->c[i].data);
	free(f);
	r->inf = NULL;
}

/* The next chunk: the thread's, or inflated here. */
static void next_chunk(struct recread *r, struct chunk *out, char *dst)
{
	struct inflater *f = r->inf;
	struct chunk *c;

	if (!f) {
		out->data = dst;
		chunk_read(r->z, out);
		return;
	}
	pthread_mutex_lock(&f->mu);
	while (f->head == f->tail)
		pthread_cond_wait(&f->cv, &f->mu);
	c = &f->c[f->tail % NCHUNKS];
	pthread_mutex_unlock(&f->mu);
	*out = *c;
	if (c->n > 0)
		memcpy(dst, c->data, (size_t)c->n);
	out->data = dst;
	pthread_mutex_lock(&f->mu);
	f->tail++;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* More bytes into the buffer: 0, or -1 with one line said. */
static int fill(struct recread *r)
{
	struct chunk c;

	if (r->off) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->cap - r->len < CHUNK) {
		size_t cap = r->cap ? r->cap * 2 : 4 * CHUNK;
		char *b;

		if (cap > RECREAD_MAX_LINE + 2 * CHUNK)
			cap = RECREAD_MAX_LINE + 2 * CHUNK;
		b = realloc(r->buf, cap + 1);
		if (!b) {
			errorf("%s: out of memory", r->path);
			return -1;
		}
		r->buf = b;
		r->cap = cap;
	}
	if (!r->inf_tried) {
		r->inf_tried = true;
		inflater_start(r);
	}
	next_chunk(r, &c, r->buf + r->len);
	if (c.n < 0) {
		if (c.err == ZSRC_CUT) {	/* a gzip stream cut short */
			r->eof = r->cut = true;
			return 0;
		}
		errorf("%s: %s", r->path, c.err == ZSRC_IO ? strerror(c.err_no) :
		       c.err == ZSRC_DAMAGED ? "damaged gzip data" : "out of memory");
		return -1;
	}
	if (c.n == 0)
		r->eof = true;
	r->len += (size_t)c.n;
	return 0;
}

/*
 * The next line (without its newline) in *line, NUL-terminated in place. 1 with a line, 0 at
 * the end, -1 with one line said. *whole is false for a last line without its newline.
 */
static int next_line(struct recread *r, char **line, size_t *len, bool *whole)
{
	char *nl;

	for (;;) {
		nl = r->buf ? memchr(r->buf + r->off, '\n', r->len - r->off) : NULL;
		if (nl)
			break;
		if (r->len - r->off > RECREAD_MAX_LINE) {
			errorf("%s:%" PRIu64 ": a line longer than %u MiB: not an iostrata recording",
			       r->path, r->lineno + 1, RECREAD_MAX_LINE >> 20);
			return -1;
		}
		if (r->eof) {
			if (r->off == r->len)
				return 0;
			*line = r->buf + r->off;
			*len = r->len - r->off;
			(*line)[*len] = '\0';
			r->off = r->len;
			r->lineno++;
			*whole = false;
			return 1;
		}
		if (fill(r))
			return -1;
	}
	*line = r->buf + r->off;
	*len = (size_t)(nl - *line);
	*nl = '\0';
	r->off += *len + 1;
	r->lineno++;
	*whole = true;
	return 1;
}

/* ---- a line's tokens (jsmn: strict, with parent links, no allocation of its own) */

struct jdoc {
	const char *s;
	jsmntok_t *t;
	int n;
};

/*
 * The token after i's whole subtree: tokens are in the order of the text, and the subtree is
 * every token that starts before i ends, so a binary search finds it.
 */
static int jskip(const struct jdoc *d, int i)
{
	int lo = i + 1, hi = d->n, end;

	if (i < 0 || i >= d->n)
		return d->n;
	if (!d->t[i].size)	/* a number, a string, an empty object or array: itself alone */
		return i + 1;
	end = d->t[i].end;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (d->t[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool jis(const struct jdoc *d, int i, jsmntype_t type)
{
	return i >= 0 && i < d->n && d->t[i].type == type;
}

/* Is token i the string key (keys of ours need no unescaping)? */
static inline bool jkey_n(const struct jdoc *d, int i, const char *key, size_t n)
{
	return d->t[i].type == JSMN_STRING && (size_t)(d->t[i].end - d->t[i].start) == n &&
	       !memcmp(d->s + d->t[i].start, key, n);
}
#define jkey(d, i, key) jkey_n(d, i, key, sizeof(key) - 1)

/* The value of key in object obj, or -1. */
static int jget(const struct jdoc *d, int obj, const char *key)
{
	size_t n = strlen(key);
	int i, k;

	if (!jis(d, obj, JSMN_OBJECT))
		return -1;
	for (i = obj + 1, k = 0; k < d->t[obj].size && i + 1 < d->n; k++) {
		if (jkey_n(d, i, key, n))
			return i + 1;
		i = jskip(d, i + 1);
	}
	return -1;
}

static bool jnull(const struct jdoc *d, int i)
{
	return jis(d, i, JSMN_PRIMITIVE) && d->t[i].end - d->t[i].start == 4 &&
	       !memcmp(d->s + d->t[i].start, "null", 4);
}

/* An unsigned integer: digits only, no overflow. */
static inline bool ju64(const struct jdoc *d, int i, uint64_t *v)
{
	const char *p, *e;
	uint64_t x = 0;

	if (!jis(d, i, JSMN_PRIMITIVE))
		return false;
	p = d->s + d->t[i].start;
	e = d->s + d->t[i].end;
	if (p == e || e - p > 20)
		return false;
	if (e - p == 20)	/* only 20-digit numbers can pass 2^64 - 1 */
		return (size_t)(e - p) == 20 && memcmp(p, "18446744073709551615", 20) <= 0 &&
		       strspn(p, "0123456789") >= 20 && (*v = strtoull(p, NULL, 10), true);
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*v = x;
	return true;
}

static bool get_u64(const struct jdoc *d, int obj, const char *key, uint64_t *v)
{
	return ju64(d, jget(d, obj, key), v);
}

/* u (a code point) into buf[*n..] as UTF-8 if it fits before the NUL; false if not */
static bool put_cp(char *buf, size_t *n, size_t len, unsigned int u)
{
	char t[4];
	size_t k;

	if (u < 0x20 || u == 0x7f || (u >= 0x80 && u < 0xa0) || u == 0xfffe || u == 0xffff)
		u = '?';	/* a control (C0, DEL, C1) or a non-character XML refuses */
	if (u < 0x80) {
		t[0] = (char)u;
		k = 1;
	} else if (u < 0x800) {
		t[0] = (char)(0xc0 | u >> 6);
		t[1] = (char)(0x80 | (u & 0x3f));
		k = 2;
	} else if (u < 0x10000) {
		t[0] = (char)(0xe0 | u >> 12);
		t[1] = (char)(0x80 | (u >> 6 & 0x3f));
		t[2] = (char)(0x80 | (u & 0x3f));
		k = 3;
	} else {
		t[0] = (char)(0xf0 | u >> 18);
		t[1] = (char)(0x80 | (u >> 12 & 0x3f));
		t[2] = (char)(0x80 | (u >> 6 & 0x3f));
		t[3] = (char)(0x80 | (u & 0x3f));
		k = 4;
	}
	if (*n + k >= len)
		return false;
	memcpy(buf + *n, t, k);
	*n += k;
	return true;
}

/* The 4 hex digits at p as a number, or -1. */
static long hex4(const char *p)
{
	long u = 0;
	int j, x;

	for (j = 0; j < 4; j++) {
		x = (unsigned char)p[j];
		x = x >= '0' && x <= '9' ? x - '0' :
		    (x | 0x20) >= 'a' && (x | 0x20) <= 'f' ? (x | 0x20) - 'a' + 10 : -1;
		if (x < 0)
			return -1;
		u = u << 4 | x;
	}
	return u;
}

/*
 * String token i decoded into buf (cut to len - 1 bytes, never inside a character): names
 * come from the traced host (a process names itself, a cgroup may hold any byte but '/'), so
 * well-formed UTF-8, raw or escaped, is kept (two processes named in Cyrillic were both
 * '??????', one label set); controls and bytes of no well-formed sequence are '?'.
 */
static const char *jstr(const struct jdoc *d, int i, char *buf, size_t len)
{
	const char *p, *e;
	size_t n = 0;
	long u, lo;
	int k;

	if (!jis(d, i, JSMN_STRING) || !len)
		return NULL;
	p = d->s + d->t[i].start;
	e = d->s + d->t[i].end;	/* the closing '"': no UTF-8 sequence runs past it */
	while (p < e) {
		unsigned char c = (unsigned char)*p++;

		if (c == '\\' && p < e) {
			c = (unsigned char)*p++;
			switch (c) {
			case 'n': u = '\n'; break;
			case 't': u = '\t'; break;
			case 'r': u = '\r'; break;
			case 'b': u = '\b'; break;
			case 'f': u = '\f'; break;
			case 'u':
				u = e - p >= 4 ? hex4(p) : -1;
				if (u < 0) {
					u = '?';
					break;
				}
				p += 4;
				if (u >= 0xd800 && u < 0xdc00 && e - p >= 6 && p[0] == '\\' &&
				    p[1] == 'u' && (lo = hex4(p + 2)) >= 0xdc00 && lo < 0xe000) {
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				} else if (u >= 0xd800 && u < 0xe000) {
					u = '?';	/* a lone surrogate */
				}
				break;
			default: u = c; break;		/* \" \\ \/ */
			}
			if (!put_cp(buf, &n, len, (unsigned int)u))
				break;
			continue;
		}
		k = c < 0x80 ? 1 : utf8_len((const unsigned char *)p - 1);
		if (k > 1 && !utf8_xml_bad((const unsigned char *)p - 1, k)) {
			if (n + (size_t)k >= len)
				break;
			memcpy(buf + n, p - 1, (size_t)k);
			n += (size_t)k;
			p += k - 1;
			continue;
		}
		if (k > 1)
			p += k - 1;	/* a C1 control or U+FFFE/U+FFFF written as UTF-8: one '?' */
		if (!put_cp(buf, &n, len, k == 1 ? c : '?'))
			break;
	}
	buf[n] = '\0';
	return buf;
}

static const char *get_str(const struct jdoc *d, int obj, const char *key, char *buf, size_t len)
{
	return jstr(d, jget(d, obj, key), buf, len);
}

/* The raw text of any value (compact, as our writer made it), or a string's content. */
static char *jtext(const struct jdoc *d, int i)
{
	char *out;
	size_t n;

	if (i < 0 || i >= d->n)
		return xstrdup("");
	n = (size_t)(d->t[i].end - d->t[i].start) + 1;
	out = malloc(n);
	if (!out)
		return NULL;
	if (d->t[i].type == JSMN_STRING)
		return (char *)jstr(d, i, out, n);
	memcpy(out, d->s + d->t[i].start, n - 1);
	out[n - 1] = '\0';
	return out;
}

/* A layer and stage as this build names them (their order from the layer table). */
static int layer_stage(struct recread *r, struct rec *rec, const char *layer, const char *stage)
{
	const struct layer *d = layer_by_name(layer, NULL);
	int k;

	if (d) {
		rec->layer = d->name;
		for (k = 0; k < d->nstages; k++) {
			if (d->stages[k].name && !strcmp(d->stages[k].name, stage)) {
				rec->stage = d->stages[k].name;
				rec->stage_order = k;
				return 0;
			}
		}
	} else {
		rec->layer = strpool_intern(&r->pool, layer);
	}
	/* a layer or stage of another build: shown after the ones this build knows */
	rec->stage = strpool_intern(&r->pool, stage);
	rec->stage_order = MAX_STAGES;
	if (!r->warned_layer) {
		rwarn(r, "%s: layer/stage %s/%s is not one this build knows: shown as recorded",
		      r->path, layer, stage);
		r->warned_layer = true;
	}
	return rec->layer && rec->stage ? 0 : -1;
}

/*
 * The buckets into rec->h.slots. Whether count, min, max and sum agree with them is not checked
 * here: bad_hist mends a histogram that disagrees (hist_mend), as the loader now does before it
 * writes; recordings of earlier builds can hold such torn records (docs/design.md).
 */
static const char *bad_buckets(const struct jdoc *d, int arr, struct rec *rec)
{
	uint64_t lo, hi = 0, n, sum = 0;
	uint32_t idx;
	int i, k;

	if (!jis(d, arr, JSMN_ARRAY))
		return "a histogram without its buckets";
	for (i = arr + 1, k = 0; k < d->t[arr].size; k++, i += 4) {
		bool open;

		if (!jis(d, i, JSMN_ARRAY) || d->t[i].size != 3 || !ju64(d, i + 1, &lo) ||
		    !ju64(d, i + 3, &n) || (!(open = jnull(d, i + 2)) && !ju64(d, i + 2, &hi)))
			return "a bucket that is not [lo_ns, hi_ns, count]";
		idx = hist_index(lo);
		/* the scheme of bpf/hist.h, the one the kernel side counts with */
		if (hist_lo(idx) != lo || (open ? idx != HIST_OVERFLOW :
					   (idx == HIST_OVERFLOW || hist_hi(idx) != hi)))
			return "a bucket that is not one of this build's (another bucket scheme)";
		if (__builtin_add_overflow(sum, n, &sum) ||
		    __builtin_add_overflow(rec->h.slots[idx], n, &rec->h.slots[idx]))
			return "a histogram whose bucket counts overflow 64 bits";
	}
	return NULL;
}

static const char *bad_hist(struct recread *r, const struct jdoc *d, int h, struct rec *rec)
{
	char layer[64], stage[64];
	int i, k, labels = -1, buckets = -1, min = -1, max = -1;
	bool count = false, sum = false;
	const char *err;
	uint64_t v;

	layer[0] = stage[0] = '\0';
	/* one pass over the keys: a record has a dozen, each looked at once */
	for (i = h + 1, k = 0; k < d->t[h].size && i + 1 < d->n; k++, i = jskip(d, i + 1)) {
		int val = i + 1;

		if (jkey(d, i, "layer"))
			jstr(d, val, layer, sizeof(layer));
		else if (jkey(d, i, "stage"))
			jstr(d, val, stage, sizeof(stage));
		else if (jkey(d, i, "labels"))
			labels = val;
		else if (jkey(d, i, "count"))
			count = ju64(d, val, &v) && ((rec->h.count = v), true);
		else if (jkey(d, i, "sum_ns"))
			sum = ju64(d, val, &v) && ((rec->h.sum_ns = v), true);
		else if (jkey(d, i, "unmeasured")) {
			if (!ju64(d, val, &v))
				return "a histogram whose unmeasured is not a count";
			rec->h.unmeasured = v;
		}
		else if (jkey(d, i, "min_ns"))
			min = val;
		else if (jkey(d, i, "max_ns"))
			max = val;
		else if (jkey(d, i, "buckets"))
			buckets = val;
	}
	if (!*layer || !*stage)
		return "a histogram without its layer or stage";
	if (layer_stage(r, rec, layer, stage))
		return "out of memory";
	if (!count || !sum)
		return "a histogram without its count or sum_ns";
	if (rec->h.count) {
		if (!ju64(d, min, &v))
			return "a histogram without its min_ns";
		rec->h.min_ns = v;
		if (!ju64(d, max, &v))
			return "a histogram without its max_ns";
		rec->h.max_ns = v;
	}
	if (labels >= 0) {
		if (!jis(d, labels, JSMN_OBJECT))
			return "labels that are not an object";
		for (i = labels + 1, k = 0; k < d->t[labels].size && i + 1 < d->n;
		     k++, i = jskip(d, i + 1)) {
			if (jkey(d, i, "disk"))
				jstr(d, i + 1, rec->disk, sizeof(rec->disk));
			else if (jkey(d, i, "op"))
				jstr(d, i + 1, rec->op, sizeof(rec->op));
			else if (jkey(d, i, "flags"))
				jstr(d, i + 1, rec->flags, sizeof(rec->flags));
			else if (jkey(d, i, "syscall"))
				jstr(d, i + 1, rec->syscall, sizeof(rec->syscall));
			else if (jkey(d, i, "opcode"))
				jstr(d, i + 1, rec->opcode, sizeof(rec->opcode));
			else if (jkey(d, i, "comm"))
				jstr(d, i + 1, rec->comm, sizeof(rec->comm));
			else if (jkey(d, i, "cgroup"))
				jstr(d, i + 1, rec->cgroup, sizeof(rec->cgroup));
			else if (jkey(d, i, "pid") && ju64(d, i + 1, &v) && v <= UINT32_MAX)
				rec->pid = (uint32_t)v;
		}
	}
	err = bad_buckets(d, buckets, rec);
	if (err)
		return err;
	/* count, min, max and sum as its buckets say: readers rely on it */
	if (hist_mend(&rec->h) && !r->warned_mended) {
		rwarn(r, "%s:%" PRIu64 ": a histogram whose count, min, max or sum disagree with its "
		      "buckets (a write torn by the loader's read, in recordings of builds before "
		      "it mended them; or damage): taken from its buckets, here and after",
		      r->path, r->lineno);
		r->warned_mended = true;
	}
	return NULL;
}

static const char *bad_counters(struct recread *r, const struct jdoc *d, int o,
				struct counter *c, int *nc)
{
	char key[64];
	uint64_t v;
	int i, k;

	if (o < 0)
		return NULL;
	if (!jis(d, o, JSMN_OBJECT))
		return "drops or events that are not an object";
	for (i = o + 1, k = 0; k < d->t[o].size && i + 1 < d->n; k++, i = jskip(d, i + 1)) {
		const char *name = jstr(d, i, key, sizeof(key)) ? strpool_intern(&r->pool, key) : NULL;

		if (!ju64(d, i + 1, &v))
			return "a drop or event count that is not a count";
		if (!name || counters_add(c, nc, name, v))
			return "too many drop or event counters";
	}
	return NULL;
}

static const char *bad_interval(struct recread *r, const struct jdoc *d, struct interval *iv)
{
	int hists = jget(d, 0, "hists"), i, k;
	const char *why;

	if (!get_u64(d, 0, "ts", &iv->ts_ns) || !get_u64(d, 0, "interval_ns", &iv->interval_ns))
		return "an interval record without ts or interval_ns";
	/* ns since 1970 (wall clock): before 2116, and no interval starts before 1970 */
	if (iv->ts_ns >= TS_MAX_NS || iv->interval_ns > iv->ts_ns)
		return "an interval record whose ts or interval_ns is out of range";
	if (!jis(d, hists, JSMN_ARRAY))
		return "an interval record without hists";
	for (i = hists + 1, k = 0; k < d->t[hists].size; k++, i = jskip(d, i)) {
		struct rec *rec;

		if (!jis(d, i, JSMN_OBJECT))
			return "a histogram that is not an object";
		rec = recs_add(&iv->recs);
		if (!rec)
			return "out of memory";
		if ((why = bad_hist(r, d, i, rec)))
			return why;
	}
	/* as written: sorted by the writer (recs_sort would move 4 KiB records about) */
	if ((why = bad_counters(r, d, jget(d, 0, "drops"), iv->drops, &iv->ndrops)))
		return why;
	return bad_counters(r, d, jget(d, 0, "events"), iv->events, &iv->nevents);
}

static void kv_add(struct recread_meta *m, const char *key, const char *val)
{
	struct recread_kv *kv = realloc(m->kv, (m->nkv + 1) * sizeof(*kv));

	if (!kv)
		return;
	m->kv = kv;
	kv[m->nkv].key = xstrdup(key);
	kv[m->nkv].val = xstrdup(val);
	m->nkv++;
}

static void meta_read(struct recread *r, const struct jdoc *d)
{
	struct recread_meta *m = &r->meta;
	int k = jget(d, 0, "kernel"), argv = jget(d, 0, "argv"), o, i, j, n, e;
	char s1[256], s2[256], key[96], line[4096];
	uint64_t u;
	size_t used;
	char *cmd, *v;

	/* 0 is this struct's "no meta record": a meta record saying 0 is read as the first */
	m->format = get_u64(d, 0, "format", &u) ? (int)(u > 1000000 ? 1000000 : u ? u : 1) : 1;
	m->host = xstrdup(get_str(d, 0, "host", s1, sizeof(s1)));
	m->version = xstrdup(get_str(d, 0, "version", s1, sizeof(s1)));
	snprintf(line, sizeof(line), "%s %s", get_str(d, k, "release", s1, sizeof(s1)) ?: "",
		 get_str(d, k, "machine", s2, sizeof(s2)) ?: "");
	m->kernel = xstrdup(line);
	m->cpus = get_u64(d, 0, "cpus", &u) ? (long)u : 0;
	if (get_u64(d, 0, "start_ns", &m->start_ns) && m->start_ns >= TS_MAX_NS)
		m->start_ns = 0;	/* not a time of this world: not shown */
	used = 0;
	line[0] = '\0';
	if (jis(d, argv, JSMN_ARRAY))
		for (i = argv + 1, n = 0; n < d->t[argv].size; n++, i = jskip(d, i))
			if (jstr(d, i, s1, sizeof(s1)) && used < sizeof(line))
				used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s",
							 used ? " " : "", s1);
	cmd = xstrdup(line);
	m->command = cmd ? cmd : xstrdup("");
	/* the rest, as it was recorded */
	o = jget(d, 0, "options");
	if (jis(d, o, JSMN_OBJECT))
		for (i = o + 1, n = 0; n < d->t[o].size; n++, i = jskip(d, i + 1)) {
			v = jtext(d, i + 1);
			if (jstr(d, i, key, sizeof(key)) && v)
				kv_add(m, key, v);
			free(v);
		}
	o = jget(d, 0, "layers");
	if (jis(d, o, JSMN_ARRAY))
		for (i = o + 1, n = 0; n < d->t[o].size; n++, i = jskip(d, i)) {
			int at = jget(d, i, "attach");

			used = 0;
			line[0] = '\0';
			if (jis(d, at, JSMN_ARRAY))
				for (j = at + 1, e = 0; e < d->t[at].size; e++, j = jskip(d, j))
					if (used < sizeof(line))
						used += (size_t)snprintf(line + used, sizeof(line) - used,
							"%s%s (%s)", used ? ", " : "",
							get_str(d, j, "event", s1, sizeof(s1)) ?: "?",
							get_str(d, j, "method", s2, sizeof(s2)) ?: "?");
			snprintf(key, sizeof(key), "layer %s",
				 get_str(d, i, "name", s1, sizeof(s1)) ?: "?");
			kv_add(m, key, line);
		}
	o = jget(d, 0, "disks");
	used = 0;
	line[0] = '\0';
	if (jis(d, o, JSMN_ARRAY))
		for (i = o + 1, n = 0; n < d->t[o].size; n++, i = jskip(d, i))
			if (used < sizeof(line))
				used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s %s",
							 used ? ", " : "",
							 get_str(d, i, "name", s1, sizeof(s1)) ?: "?",
							 get_str(d, i, "scheduler", s2, sizeof(s2)) ?: "?");
	if (used)
		kv_add(m, "disks (scheduler)", line);
	if ((o = jget(d, 0, "buckets")) >= 0) {
		v = jtext(d, o);
		if (v)
			kv_add(m, "buckets", v);
		free(v);
	}
}

static void end_read(struct recread *r, const struct jdoc *d)
{
	char s[128];

	free(r->end.reason);
	r->end.reason = xstrdup(get_str(d, 0, "reason", s, sizeof(s)));
	get_u64(d, 0, "intervals", &r->end.intervals);
	get_u64(d, 0, "duration_ns", &r->end.duration_ns);
}

/* Does the line nest arrays and objects deeper than max (outside strings)? */
static bool too_deep(const char *s, size_t len, int max)
{
	bool str = false;
	int depth = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				str = false;
		} else if (s[i] == '"') {
			str = true;
		} else if (s[i] == '[' || s[i] == '{') {
			if (++depth > max)
				return true;
		} else if (s[i] == ']' || s[i] == '}') {
			depth--;
		}
	}
	return false;
}

/*
 * Strict JSON (RFC 8259) over one line, depth already bounded by too_deep(). jsmn, even in its
 * strict mode, takes an object key without a value ({"disk"}, whose next token then passed for
 * it), stray or missing commas ([,1], {"a":1,}) and numbers with leading zeros: a damaged line
 * must be refused, not read into something else.
 */
struct jcheck {
	const char *s, *e;
};

static void jc_ws(struct jcheck *c)
{
	while (c->s < c->e && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
		c->s++;
}

static bool jc_lit(struct jcheck *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->e - c->s) < n || memcmp(c->s, lit, n))
		return false;
	c->s += n;
	return true;
}

static bool jc_digits(struct jcheck *c)
{
	const char *from = c->s;

	while (c->s < c->e && *c->s >= '0' && *c->s <= '9')
		c->s++;
	return c->s > from;
}

static bool jc_number(struct jcheck *c)
{
	if (c->s < c->e && *c->s == '-')
		c->s++;
	if (c->s < c->e && *c->s == '0')
		c->s++;
	else if (!(c->s < c->e && *c->s >= '1' && *c->s <= '9') || !jc_digits(c))
		return false;
	if (c->s < c->e && *c->s == '.' && (c->s++, !jc_digits(c)))
		return false;
	if (c->s < c->e && (*c->s == 'e' || *c->s == 'E')) {
		c->s++;
		if (c->s < c->e && (*c->s == '+' || *c->s == '-'))
			c->s++;
		if (!jc_digits(c))
			return false;
	}
	return true;
}

static bool jc_string(struct jcheck *c)
{
	unsigned char ch;
	int i;

	if (c->s >= c->e || *c->s != '"')
		return false;
	for (c->s++; c->s < c->e;) {
		ch = (unsigned char)*c->s++;
		if (ch == '"')
			return true;
		if (ch < 0x20)
			return false;
		if (ch != '\\')
			continue;
		if (c->s >= c->e)
			return false;
		ch = (unsigned char)*c->s++;
		if (ch == 'u') {
			for (i = 0; i < 4; i++, c->s++)
				if (c->s >= c->e || !((*c->s >= '0' && *c->s <= '9') ||
						      ((*c->s | 0x20) >= 'a' && (*c->s | 0x20) <= 'f')))
					return false;
		} else if (!ch || !strchr("\"\\/bfnrt", ch)) {
			return false;
		}
	}
	return false;
}

static bool jc_value(struct jcheck *c)
{
	char open, close;

	jc_ws(c);
	if (c->s >= c->e)
		return false;
	switch (*c->s) {
	case '"':
		return jc_string(c);
	case 't':
		return jc_lit(c, "true");
	case 'f':
		return jc_lit(c, "false");
	case 'n':
		return jc_lit(c, "null");
	case '{':
	case '[':
		break;
	default:
		return jc_number(c);
	}
	open = *c->s++;
	close = open == '{' ? '}' : ']';
	jc_ws(c);
	if (c->s < c->e && *c->s == close) {
		c->s++;
		return true;
	}
	for (;;) {
		if (open == '{') {
			jc_ws(c);
			if (!jc_string(c))
				return false;
			jc_ws(c);
			if (c->s >= c->e || *c->s++ != ':')
				return false;
		}
		if (!jc_value(c))
			return false;
		jc_ws(c);
		if (c->s >= c->e)
			return false;
		if (*c->s == close) {
			c->s++;
			return true;
		}
		if (*c->s++ != ',')
			return false;
	}
}

static bool json_strict(const char *s, size_t len)
{
	struct jcheck c = { s, s + len };

	if (!jc_value(&c))
		return false;
	jc_ws(&c);
	return c.s == c.e;
}

/* Tokens of one line into r->tok: 0, or the problem. */
static const char *tokenize(struct recread *r, const char *line, size_t len, struct jdoc *d)
{
	jsmn_parser p;
	int n;

	/* jsmn stops at a NUL: the rest of the line would go unread, unsaid (JSON has none raw) */
	if (memchr(line, '\0', len))
		return "a NUL byte in the line";
	/* ours nest 4 deep (interval, hists, a histogram, its buckets, a bucket) */
	if (too_deep(line, len, MAX_DEPTH))
		return "nested deeper than any iostrata record";
	if (!json_strict(line, len))
		return "not JSON";
	jsmn_init(&p);
	for (n = JSMN_ERROR_NOMEM;;) {
		if (r->tok)	/* (without tokens jsmn only counts) */
			n = jsmn_parse(&p, line, len, r->tok, r->ntok);
		if (n != JSMN_ERROR_NOMEM)
			break;
		if (r->ntok >= MAX_TOKENS)
			return "too many values in one record";
		{
			unsigned int cap = r->ntok ? r->ntok * 4 : 16384;
			jsmntok_t *t = realloc(r->tok, (cap > MAX_TOKENS ? MAX_TOKENS : cap) *
						       sizeof(*t));

			if (!t)
				return "out of memory";
			r->tok = t;
			r->ntok = cap > MAX_TOKENS ? MAX_TOKENS : cap;
		}
		/* jsmn goes on from where it ran out */
	}
	if (n < 1)
		return "not JSON";
	d->s = line;
	d->t = r->tok;
	d->n = n;
	/* one object, the whole line */
	if (r->tok[0].type != JSMN_OBJECT || jskip(d, 0) != n)
		return "not JSON";
	return NULL;
}

/*
 * iv's end and length into the set of those read: 0; the line that read them first when they
 * were read before (a file repeated: `cat a a` of output without a meta record, whose second
 * meta record would have said so); -1 out of memory.
 */
static size_t seen_home(uint64_t ts, uint64_t len, size_t cap)
{
	return (size_t)(((ts ^ len * 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL) >> 32) &
	       (cap - 1);
}

static int64_t seen_before(struct recread *r, const struct interval *iv)
{
	struct seen_iv *e;
	size_t i;

	if (r->nseen * 2 >= r->seencap) {	/* at most half full */
		size_t cap = r->seencap ? r->seencap * 2 : 1024, k;
		struct seen_iv *t = calloc(cap, sizeof(*t));

		if (!t)
			return -1;
		for (k = 0; k < r->seencap; k++) {
			if (!r->seen[k].lineno)
				continue;
			e = &r->seen[k];
			for (i = seen_home(e->ts, e->len, cap); t[i].lineno; i = (i + 1) & (cap - 1))
				;
			t[i] = *e;
		}
		free(r->seen);
		r->seen = t;
		r->seencap = cap;
	}
	for (i = seen_home(iv->ts_ns, iv->interval_ns, r->seencap); r->seen[i].lineno;
	     i = (i + 1) & (r->seencap - 1))
		if (r->seen[i].ts == iv->ts_ns && r->seen[i].len == iv->interval_ns)
			return (int64_t)r->seen[i].lineno;
	r->seen[i] = (struct seen_iv){ iv->ts_ns, iv->interval_ns, r->lineno };
	r->nseen++;
	return 0;
}

enum recread_kind recread_next(struct recread *r, struct interval *iv)
{
	const char *why;
	char *line, type[32];
	size_t len;
	bool whole, first;
	struct jdoc d;
	int64_t seen;
	int got;

	for (;;) {
		got = next_line(r, &line, &len, &whole);
		if (got < 0)
			return RR_ERROR;
		if (!got) {
			if (r->cut)
				rwarn(r, "%s: the gzip stream is cut short after line %" PRIu64
				      ": read up to there", r->path, r->lineno);
			if (zsrc_trailing(r->z) >= 0)
				rwarn(r, "%s: what follows the gzip data, from byte %" PRId64
				      ", is not gzip: read up to there", r->path,
				      zsrc_trailing(r->z));
			if (!r->nrec[RR_META] && !r->nrec[RR_INTERVAL]) {
				errorf("%s: no iostrata records in it", r->path);
				return RR_ERROR;
			}
			return at_end(r);
		}
		if (!len || strspn(line, " \t\r") == len)
			continue;
		first = !r->nrec[RR_META] && !r->nrec[RR_INTERVAL];
		why = tokenize(r, line, len, &d);
		if (!why && !get_str(&d, 0, "type", type, sizeof(type)))
			why = "not a record";
		if (why) {
			if (!whole && !first) {
				rwarn(r, "%s:%" PRIu64 ": the last line is cut short: read up to line %"
				      PRIu64, r->path, r->lineno, r->lineno - 1);
				return at_end(r);
			}
			if (first)
				errorf("%s: not an iostrata recording (line %" PRIu64 ": %s)", r->path,
				       r->lineno, why);
			else
				errorf("%s:%" PRIu64 ": %s: the file is damaged", r->path, r->lineno,
				       why);
			return RR_ERROR;
		}
		if (!strcmp(type, "meta")) {
			if (!first) {
				errorf("%s:%" PRIu64 ": a second meta record: two recordings run "
				       "together? (give them as two files)", r->path, r->lineno);
				return RR_ERROR;
			}
			meta_read(r, &d);
			r->nrec[RR_META]++;
			if (r->meta.format > RECREAD_FORMAT)
				rwarn(r, "%s: recorded in format %d, newer than this build's %d: "
				      "reading what it knows", r->path, r->meta.format,
				      RECREAD_FORMAT);
			return RR_META;
		}
		if (r->nrec[RR_END] && (!strcmp(type, "interval") || !strcmp(type, "end"))) {
			errorf("%s:%" PRIu64 ": a record after the end record: two recordings run "
			       "together? (give them as two files)", r->path, r->lineno);
			return RR_ERROR;
		}
		if (!strcmp(type, "interval")) {
			struct recs keep = iv->recs;

			/* the records' memory is kept from one interval to the next */
			keep.n = 0;
			memset(iv, 0, sizeof(*iv));
			iv->recs = keep;
			why = bad_interval(r, &d, iv);
			if (why) {
				interval_clear(iv);
				if (!whole && !first) {
					rwarn(r, "%s:%" PRIu64 ": the last line is cut short: read up "
					      "to line %" PRIu64, r->path, r->lineno, r->lineno - 1);
					return at_end(r);
				}
				errorf("%s:%" PRIu64 ": %s", r->path, r->lineno, why);
				return RR_ERROR;
			}
			seen = seen_before(r, iv);
			if (seen) {
				interval_clear(iv);
				if (seen < 0)
					errorf("%s: out of memory", r->path);
				else
					errorf("%s:%" PRIu64 ": the interval of line %" PRId64 " again "
					       "(the same ts and interval_ns): the recording repeated? "
					       "(its I/O would be counted twice)", r->path, r->lineno,
					       seen);
				return RR_ERROR;
			}
			if (first)
				rwarn(r, "%s: no meta record (iostrata -j output, or an older "
				      "recording): no host, kernel or options to show", r->path);
			r->nrec[RR_INTERVAL]++;
			return RR_INTERVAL;
		}
		if (!strcmp(type, "end")) {
			end_read(r, &d);
			r->nrec[RR_END]++;
			return RR_END;
		}
		/* an error record that went to the same place is no news; another type is */
		if (strcmp(type, "error") && !r->warned_type) {
			rwarn(r, "%s:%" PRIu64 ": records of type '%s' are not known to this build: "
			      "skipped", r->path, r->lineno, type);
			r->warned_type = true;
		}
	}
}

const struct recread_meta *recread_meta(const struct recread *r)
{
	return &r->meta;
}

const struct recread_end *recread_end(const struct recread *r)
{
	return &r->end;
}

uint64_t recread_intervals(const struct recread *r)
{
	return r->nrec[RR_INTERVAL];
}

void recread_close(struct recread *r)
{
	size_t i;

	if (!r)
		return;
	inflater_stop(r);
	zsrc_close(r->z);
	strpool_free(&r->pool);
	for (i = 0; i < r->meta.nkv; i++) {
		free(r->meta.kv[i].key);
		free(r->meta.kv[i].val);
	}
	free(r->meta.kv);
	free(r->meta.host);
	free(r->meta.kernel);
	free(r->meta.version);
	free(r->meta.command);
	free(r->end.reason);
	free(r->buf);
	free(r->tok);
	free(r->seen);
	free(r->path);
	free(r);
}

/*
 * A run as one file tells it: by its meta record (first false: host and start), or by its first
 * interval (first: its end and length, with the host when a meta record named it).
 */
struct recread_run {
	char *host, *file;
	uint64_t start_ns, len;
	bool first;
};

static void utc_time(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, n, "%" PRIu64 " ns", ns);
}

/*
 * Two files tell one run: the same host and start; or the same first interval, unless both
 * name their hosts and those differ (hosts recording the same seconds may end an interval at
 * the same ns; one host does not, twice).
 */
static bool same_run(const struct recread_run *a, const struct recread_run *b)
{
	if (a->first != b->first || a->start_ns != b->start_ns || a->len != b->len)
		return false;
	return !a->host || !b->host || !strcmp(a->host, b->host);
}

int recread_runs_add(struct recread_runs *rs, const char *file, const struct recread_meta *m,
		     const struct interval *iv)
{
	struct recread_run k = {
		.host = m->format > 0 && m->host && *m->host ? m->host : NULL,
		.start_ns = iv ? iv->ts_ns : m->start_ns,
		.len = iv ? iv->interval_ns : 0,
		.first = iv != NULL,
	};
	struct recread_run *v;
	char when[64];
	size_t i;

	if (!k.start_ns || (!iv && !k.host))
		return 0;	/* nothing to tell the run by */
	for (i = 0; i < rs->n; i++) {
		v = &rs->v[i];
		if (!same_run(v, &k))
			continue;
		utc_time(k.start_ns, when, sizeof(when));
		if (!iv)
			errorf("%s and %s hold the same recording (host %s, started %s): its I/O "
			       "would be counted twice", v->file, file, k.host, when);
		else
			errorf("%s and %s begin with the same interval (ended %s, ts %" PRIu64 "): "
			       "one recording twice? its I/O would be counted twice", v->file, file,
			       when, k.start_ns);
		return -1;
	}
	v = realloc(rs->v, (rs->n + 1) * sizeof(*v));
	if (!v)
		goto oom;
	rs->v = v;
	v = &v[rs->n];
	*v = k;
	v->host = k.host ? strdup(k.host) : NULL;
	v->file = strdup(file);
	if ((k.host && !v->host) || !v->file) {
		free(v->host);
		free(v->file);
		goto oom;
	}
	rs->n++;
	return 0;
oom:
	errorf("out of memory");
	return -1;
}

void recread_runs_free(struct recread_runs *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		free(rs->v[i].host);
		free(rs->v[i].file);
	}
	free(rs->v);
	rs->v = NULL;
	rs->n = 0;
}
