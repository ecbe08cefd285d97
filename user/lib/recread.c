// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <jansson.h>
#include <zlib.h>
#include "layer.h"
#include "log.h"
#include "recread.h"

#define CHUNK (1u << 20)

struct recread {
	char *path;
	gzFile gz;
	char *buf;		/* bytes read and not yet taken as lines */
	size_t len, cap, off;
	bool eof, cut;		/* the stream ended; it ended inside a gzip member (cut short) */
	uint64_t lineno;
	uint64_t nrec[RR_ERROR];
	struct recread_meta meta;
	struct recread_end end;
	char **pool;		/* names of layers, stages and counters this build does not know */
	size_t npool;
	bool warned_type, warned_layer, warned_order;
	uint64_t last_ts;
};

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* A name kept as long as the reader: drop and event names, unknown layers and stages. */
static const char *intern(struct recread *r, const char *s)
{
	char **p;
	size_t i;

	for (i = 0; i < r->npool; i++)
		if (!strcmp(r->pool[i], s))
			return r->pool[i];
	p = realloc(r->pool, (r->npool + 1) * sizeof(*p));
	if (!p)
		return NULL;
	r->pool = p;
	if (!(p[r->npool] = strdup(s)))
		return NULL;
	return p[r->npool++];
}

struct recread *recread_open(const char *path)
{
	struct recread *r;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
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
	if (S_ISREG(st.st_mode) && st.st_size == 0) {
		errorf("%s: empty file, not a recording", path);
		close(fd);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path)) || !(r->gz = gzdopen(fd, "rb"))) {
		errorf("out of memory opening %s", path);
		if (r)
			free(r->path);
		free(r);
		close(fd);
		return NULL;
	}
	gzbuffer(r->gz, 256 * 1024);
	return r;
}

/* More bytes into the buffer: 0, or -1 with one line said. */
static int fill(struct recread *r)
{
	int n, zerr;
	const char *msg;

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
	n = gzread(r->gz, r->buf + r->len, (unsigned int)(r->cap - r->len));
	if (n < 0) {
		msg = gzerror(r->gz, &zerr);
		if (zerr == Z_BUF_ERROR) {	/* "unexpected end of file": a gzip stream cut short */
			r->eof = r->cut = true;
			return 0;
		}
		errorf("%s: %s", r->path, zerr == Z_ERRNO ? strerror(errno) :
		       zerr == Z_DATA_ERROR ? "damaged gzip data" : msg);
		return -1;
	}
	if (n == 0)
		r->eof = true;
	r->len += (size_t)n;
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
		nl = memchr(r->buf + r->off, '\n', r->len - r->off);
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

static bool get_u64(json_t *o, const char *key, uint64_t *v)
{
	json_t *x = json_object_get(o, key);

	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return false;
	*v = (uint64_t)json_integer_value(x);
	return true;
}

static const char *get_str(json_t *o, const char *key)
{
	json_t *x = json_object_get(o, key);

	return json_is_string(x) ? json_string_value(x) : NULL;
}

static void copy_label(char *dst, size_t len, json_t *labels, const char *key)
{
	const char *s = get_str(labels, key);

	snprintf(dst, len, "%s", s ? s : "");
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
		rec->layer = intern(r, layer);
	}
	/* a layer or stage of another build: shown after the ones this build knows */
	rec->stage = intern(r, stage);
	rec->stage_order = MAX_STAGES;
	if (!r->warned_layer) {
		warnf("%s: layer/stage %s/%s is not one this build knows: shown as recorded",
		      r->path, layer, stage);
		r->warned_layer = true;
	}
	return rec->layer && rec->stage ? 0 : -1;
}

static const char *bad_hist(struct recread *r, json_t *h, struct rec *rec)
{
	json_t *labels, *buckets, *b;
	const char *layer = get_str(h, "layer"), *stage = get_str(h, "stage");
	uint64_t v, lo, n, sum = 0;
	size_t i;
	uint32_t idx;

	if (!layer || !stage)
		return "a histogram without its layer or stage";
	if (layer_stage(r, rec, layer, stage))
		return "out of memory";
	labels = json_object_get(h, "labels");
	if (labels && !json_is_object(labels))
		return "labels that are not an object";
	copy_label(rec->disk, sizeof(rec->disk), labels, "disk");
	copy_label(rec->op, sizeof(rec->op), labels, "op");
	copy_label(rec->flags, sizeof(rec->flags), labels, "flags");
	copy_label(rec->syscall, sizeof(rec->syscall), labels, "syscall");
	copy_label(rec->opcode, sizeof(rec->opcode), labels, "opcode");
	copy_label(rec->comm, sizeof(rec->comm), labels, "comm");
	if (get_u64(labels, "pid", &v))
		rec->pid = (uint32_t)v;
	if (!get_u64(h, "count", &v))
		return "a histogram without its count";
	rec->h.count = v;
	if (!get_u64(h, "sum_ns", &v))
		return "a histogram without its sum_ns";
	rec->h.sum_ns = v;
	if (get_u64(h, "unmeasured", &v))
		rec->h.unmeasured = v;
	if (rec->h.count) {
		if (!get_u64(h, "min_ns", &v))
			return "a histogram without its min_ns";
		rec->h.min_ns = v;
		if (!get_u64(h, "max_ns", &v))
			return "a histogram without its max_ns";
		rec->h.max_ns = v;
	}
	buckets = json_object_get(h, "buckets");
	if (!json_is_array(buckets))
		return "a histogram without its buckets";
	json_array_foreach(buckets, i, b) {
		json_t *jlo = json_array_get(b, 0), *jhi = json_array_get(b, 1),
		       *jn = json_array_get(b, 2);

		if (!json_is_array(b) || json_array_size(b) != 3 || !json_is_integer(jlo) ||
		    !json_is_integer(jn) || json_integer_value(jlo) < 0 ||
		    json_integer_value(jn) < 0 || (!json_is_integer(jhi) && !json_is_null(jhi)))
			return "a bucket that is not [lo_ns, hi_ns, count]";
		lo = (uint64_t)json_integer_value(jlo);
		n = (uint64_t)json_integer_value(jn);
		idx = hist_index(lo);
		/* the scheme of bpf/hist.h, the one the kernel side counts with */
		if (hist_lo(idx) != lo ||
		    (json_is_null(jhi) ? idx != HIST_OVERFLOW :
		     (idx == HIST_OVERFLOW || json_integer_value(jhi) < 0 ||
		      hist_hi(idx) != (uint64_t)json_integer_value(jhi))))
			return "a bucket that is not one of this build's (another bucket scheme)";
		rec->h.slots[idx] += n;
		sum += n;
	}
	if (sum != rec->h.count)
		return "a histogram whose buckets do not add up to its count";
	return NULL;
}

static const char *bad_counters(struct recread *r, json_t *o, struct counter *c, int *nc)
{
	const char *key;
	json_t *v;

	if (!o)
		return NULL;
	if (!json_is_object(o))
		return "drops or events that are not an object";
	json_object_foreach(o, key, v) {
		const char *name = intern(r, key);

		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return "a drop or event count that is not a count";
		if (!name || counters_add(c, nc, name, (uint64_t)json_integer_value(v)))
			return "too many drop or event counters";
	}
	return NULL;
}

static const char *bad_interval(struct recread *r, json_t *o, struct interval *iv)
{
	json_t *hists, *h;
	const char *why;
	size_t i;

	if (!get_u64(o, "ts", &iv->ts_ns) || !get_u64(o, "interval_ns", &iv->interval_ns))
		return "an interval record without ts or interval_ns";
	hists = json_object_get(o, "hists");
	if (!json_is_array(hists))
		return "an interval record without hists";
	json_array_foreach(hists, i, h) {
		struct rec *rec;

		if (!json_is_object(h))
			return "a histogram that is not an object";
		rec = recs_add(&iv->recs);
		if (!rec)
			return "out of memory";
		if ((why = bad_hist(r, h, rec)))
			return why;
	}
	recs_sort(&iv->recs);
	if ((why = bad_counters(r, json_object_get(o, "drops"), iv->drops, &iv->ndrops)))
		return why;
	return bad_counters(r, json_object_get(o, "events"), iv->events, &iv->nevents);
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

/* A JSON value as one line of text: strings bare, the rest compact JSON. */
static char *value_text(json_t *v)
{
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void meta_read(struct recread *r, json_t *o)
{
	struct recread_meta *m = &r->meta;
	json_t *k = json_object_get(o, "kernel"), *argv = json_object_get(o, "argv"), *v, *x;
	uint64_t u;
	size_t i, j, used = 0, len = 0;
	char *s, *cmd;
	const char *key;

	m->format = get_u64(o, "format", &u) ? (int)(u > 1000000 ? 1000000 : u) : 1;
	m->host = xstrdup(get_str(o, "host"));
	m->version = xstrdup(get_str(o, "version"));
	if (json_is_object(k) && asprintf(&m->kernel, "%s %s", get_str(k, "release") ?: "",
					   get_str(k, "machine") ?: "") < 0)
		m->kernel = NULL;
	if (!m->kernel)
		m->kernel = xstrdup("");
	m->cpus = get_u64(o, "cpus", &u) ? (long)u : 0;
	get_u64(o, "start_ns", &m->start_ns);
	json_array_foreach(argv, i, v)
		if (json_is_string(v))
			len += strlen(json_string_value(v)) + 1;
	cmd = calloc(1, len + 1);
	json_array_foreach(argv, i, v)
		if (cmd && json_is_string(v))
			used += (size_t)sprintf(cmd + used, "%s%s", used ? " " : "",
						json_string_value(v));
	m->command = cmd ? cmd : xstrdup("");
	/* the rest, as it was recorded */
	json_object_foreach(json_object_get(o, "options"), key, v) {
		s = value_text(v);
		kv_add(m, key, s);
		free(s);
	}
	json_array_foreach(json_object_get(o, "layers"), i, v) {
		char line[2048];
		size_t n = 0;

		line[0] = '\0';
		json_array_foreach(json_object_get(v, "attach"), j, x)
			if (n < sizeof(line))
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s (%s)",
						      n ? ", " : "", get_str(x, "event") ?: "?",
						      get_str(x, "method") ?: "?");
		{
			char key2[96];

			snprintf(key2, sizeof(key2), "layer %s", get_str(v, "name") ?: "?");
			kv_add(m, key2, line);
		}
	}
	{
		char line[4096];
		size_t n = 0;

		line[0] = '\0';
		json_array_foreach(json_object_get(o, "disks"), i, v)
			if (n < sizeof(line))
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %s",
						      n ? ", " : "", get_str(v, "name") ?: "?",
						      get_str(v, "scheduler") ?: "?");
		if (n)
			kv_add(m, "disks (scheduler)", line);
	}
	if ((x = json_object_get(o, "buckets"))) {
		s = value_text(x);
		kv_add(m, "buckets", s);
		free(s);
	}
}

static void end_read(struct recread *r, json_t *o)
{
	free(r->end.reason);
	r->end.reason = xstrdup(get_str(o, "reason"));
	get_u64(o, "intervals", &r->end.intervals);
	get_u64(o, "duration_ns", &r->end.duration_ns);
}

enum recread_kind recread_next(struct recread *r, struct interval *iv)
{
	json_error_t jerr;
	const char *type, *why;
	char *line;
	size_t len;
	bool whole;
	json_t *o;
	int got;

	for (;;) {
		got = next_line(r, &line, &len, &whole);
		if (got < 0)
			return RR_ERROR;
		if (!got) {
			if (r->cut)
				warnf("%s: the gzip stream is cut short after line %" PRIu64
				      ": read up to there", r->path, r->lineno);
			if (!r->nrec[RR_META] && !r->nrec[RR_INTERVAL]) {
				errorf("%s: no iostrata records in it", r->path);
				return RR_ERROR;
			}
			return RR_EOF;
		}
		if (!len || strspn(line, " \t\r") == len)
			continue;
		o = json_loadb(line, len, 0, &jerr);
		if (!o || !json_is_object(o) || !(type = get_str(o, "type"))) {
			json_decref(o);
			if (!whole && (r->nrec[RR_META] || r->nrec[RR_INTERVAL])) {
				warnf("%s:%" PRIu64 ": the last line is cut short: read up to line %"
				      PRIu64, r->path, r->lineno, r->lineno - 1);
				return RR_EOF;
			}
			if (!r->nrec[RR_META] && !r->nrec[RR_INTERVAL])
				errorf("%s: not an iostrata recording (line %" PRIu64 ": %s)", r->path,
				       r->lineno, o ? "not a record" : "not JSON");
			else
				errorf("%s:%" PRIu64 ": %s", r->path, r->lineno,
				       o ? "not an iostrata record" : "not JSON: the file is damaged");
			return RR_ERROR;
		}
		if (!strcmp(type, "meta")) {
			if (r->nrec[RR_META] || r->nrec[RR_INTERVAL]) {
				json_decref(o);
				errorf("%s:%" PRIu64 ": a second meta record: two recordings run "
				       "together? (give them as two files)", r->path, r->lineno);
				return RR_ERROR;
			}
			meta_read(r, o);
			json_decref(o);
			r->nrec[RR_META]++;
			if (r->meta.format > RECREAD_FORMAT)
				warnf("%s: recorded in format %d, newer than this build's %d: "
				      "reading what it knows", r->path, r->meta.format,
				      RECREAD_FORMAT);
			return RR_META;
		}
		if (!strcmp(type, "interval")) {
			interval_clear(iv);
			why = bad_interval(r, o, iv);
			json_decref(o);
			if (why) {
				if (!whole && r->nrec[RR_INTERVAL]) {
					warnf("%s:%" PRIu64 ": the last line is cut short: read up to "
					      "line %" PRIu64, r->path, r->lineno, r->lineno - 1);
					interval_clear(iv);
					return RR_EOF;
				}
				errorf("%s:%" PRIu64 ": %s", r->path, r->lineno, why);
				interval_clear(iv);
				return RR_ERROR;
			}
			if (!r->nrec[RR_META] && !r->nrec[RR_INTERVAL])
				warnf("%s: no meta record (iostrata -j output, or an older "
				      "recording): no host, kernel or options to show", r->path);
			r->nrec[RR_INTERVAL]++;
			return RR_INTERVAL;
		}
		if (!strcmp(type, "end")) {
			end_read(r, o);
			json_decref(o);
			r->nrec[RR_END]++;
			return RR_END;
		}
		/* an error record that went to the same place is no news; another type is */
		if (strcmp(type, "error") && !r->warned_type) {
			warnf("%s:%" PRIu64 ": records of type '%.40s' are not known to this build: "
			      "skipped", r->path, r->lineno, type);
			r->warned_type = true;
		}
		json_decref(o);
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
	gzclose(r->gz);
	for (i = 0; i < r->npool; i++)
		free(r->pool[i]);
	free(r->pool);
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
	free(r->path);
	free(r);
}
