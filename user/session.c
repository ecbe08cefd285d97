// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgroups.h"
#include "log.h"
#include "session.h"
#include "stopout.h"
#include "stopsig.h"
#include "sysinfo.h"

/*
 * Tracing programs run to completion in microseconds with migration disabled: after the flip,
 * this long is given to any still writing into the retired generation. One delayed past it
 * (preempted where completions run in a kworker) is reported an interval late, never lost.
 */
#define GRACE_NS (5 * 1000 * 1000)

struct session {
	struct trace_config cfg;	/* a copy: read only */
	struct session_shared sh;
	struct layer_inst *inst[NLAYERS];
	volatile uint32_t *gen;		/* the generation map, mmapped */
	size_t gen_len;
	bool tracefs_mounted;
	uint64_t last_ns;		/* CLOCK_MONOTONIC: the last interval's end */
	uint64_t prev_misses;
	bool finished;
	bool begun;			/* session_begin: the first interval has started */
	bool fd_ended;		/* the last session_run ended because its stop_fd became readable */
	bool unsettled;		/* and the disk did not go quiet after it (disk_settle) */
	/* snoop */
	struct ring_buffer *rb;
	session_req_sink req_sink;
	void *req_arg;
	int req_out;			/* the sink's last non-zero answer: stop */
};

static volatile sig_atomic_t stopping;

void session_stop(int sig)
{
	stopping = sig;
	stopout_stop();
}

void session_signals(void)
{
	/*
	 * SA_RESTART: a signal must not cut a write() to stdout short. Without it, a write blocked
	 * on a full pipe (a slow reader) that a signal interrupts before it moved a byte fails with
	 * EINTR, and stdio drops that part of the record: a torn JSON line. The interval sleep,
	 * clock_nanosleep, is never restarted, so a signal still ends it at once. Nor would a
	 * write to a full pipe nobody reads ever end: stdout goes through stopout, whose write
	 * waits for room beside the stop, and after one only so long (stopout.h).
	 */
	struct sigaction sa = { .sa_handler = session_stop, .sa_flags = SA_RESTART };

	if (stopout_init())
		warnf("stdout cannot be made stoppable (%s): a stop waits for a full stdout",
		      strerror(errno));

	/*
	 * Every signal whose default ends the process stops the run as Ctrl-C does, so that what
	 * it attached, mounted or switched is undone (stopsig.h): SIGUSR1 or SIGALRM left to the
	 * default ended sched-ab with the disk's scheduler switched; a closed terminal (SIGHUP) and
	 * SIGQUIT (Ctrl-\, whose default is a core dump) alike. Unless started ignoring them (nohup
	 * iostrata serve &: a logout must not stop it; a shell's background job ignores SIGQUIT),
	 * which then cannot end the run at all; SIGINT and SIGTERM always stop it.
	 */
	stop_signals_catch(&sa);
	signal(SIGPIPE, SIG_IGN);
}

bool session_stopping(void)
{
	return stopping;
}

int session_stop_signal(void)
{
	return stopping;
}

/* Checked once here, so that no layer fails on it (each would say so, then retry raw_tp). */
static bool is_cgroup2(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == 0x63677270 /* CGROUP2_SUPER_MAGIC */;
}

static bool wanted(const struct trace_config *cfg, int id, bool *named)
{
	*named = cfg->layers != 0;
	if (cfg->layers)
		return cfg->layers & (1u << id);
	return !cfg->dev || id == LAYER_BLOCK;
}

static bool has_syscall_events(const struct layer *d)
{
	int i;

	for (i = 0; i < d->nevents; i++)
		if (d->events[i].kind == EV_SYSCALL)
			return true;
	return false;
}

/* The maps every layer shares: the generation, and the request table when one is needed. */
static int shared_maps(struct session *s, bool requests)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	void *p;

	s->sh.reqs_fd = s->sh.comm_fd = -1;
	s->sh.gen_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gens", sizeof(uint32_t),
				      sizeof(uint32_t), 1, &o);
	if (s->sh.gen_fd < 0) {
		errorf("cannot create the generation map: %s", strerror(errno));
		return -1;
	}
	s->gen_len = (size_t)sysconf(_SC_PAGESIZE);
	p = mmap(NULL, s->gen_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->sh.gen_fd, 0);
	if (p == MAP_FAILED) {
		errorf("cannot map the generation map: %s", strerror(errno));
		return -1;
	}
	s->gen = p;
	if (s->cfg.snoop) {
		s->sh.snoop_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "snoop_rb", 0, 0,
						s->cfg.snoop_rb_bytes, NULL);
		if (s->sh.snoop_fd < 0) {
			errorf("cannot create snoop's ring buffer (%u bytes): %s",
			       s->cfg.snoop_rb_bytes, strerror(errno));
			return -1;
		}
	}
	/*
	 * One map of names for every layer: a name the io_uring or aio layer noted at a submission
	 * names the block requests of its bios too (bio_queue copies a linked request's owner
	 * and does not note the name again).
	 */
	s->sh.comm_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "req_comm", sizeof(uint32_t), 16,
				       REQ_COMM_SLOTS, NULL);
	if (s->sh.comm_fd < 0) {
		errorf("cannot create the process name map: %s", strerror(errno));
		return -1;
	}
	if (requests) {
		LIBBPF_OPTS(bpf_map_create_opts, line, .map_flags = ENTRY_MAP_FLAGS);

		s->sh.reqs_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "reqs", sizeof(uint32_t),
					       sizeof(struct ioreq), s->cfg.inflight_slots, &line);
		if (s->sh.reqs_fd < 0) {
			errorf("cannot create the request table: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

int session_open(const struct trace_config *cfg, bool probe, struct session **out,
		 struct layer_report *reps, bool *tried)
{
	struct session *s = calloc(1, sizeof(*s));
	bool named, requests = false, syscalls = false;
	int i, started = 0;

	*out = NULL;
	if (!s) {
		errorf("out of memory");
		return -1;
	}
	s->cfg = *cfg;
	s->sh.gen_fd = s->sh.reqs_fd = s->sh.snoop_fd = s->sh.comm_fd = -1;
	s->sh.self_tgid = (uint32_t)getpid();
	if (!vmlinux_btf()) {
		errorf("kernel BTF not found (/sys/kernel/btf/vmlinux): this kernel needs "
		       "CONFIG_DEBUG_INFO_BTF");
		goto fail;
	}
	if (cfg->cgroup && !is_cgroup2(cfg->cgroup)) {
		errorf("-c %s: not a cgroup v2 directory", cfg->cgroup);
		goto fail;
	}
	for (i = 0; i < NLAYERS; i++) {
		if (!probe && !wanted(cfg, i, &named))
			continue;
		requests |= layers[i]->requests;
		syscalls |= has_syscall_events(layers[i]);
	}
	if (shared_maps(s, requests))
		goto fail;
	/* ids seen from now on are named from the tree as it is now, and as it changes */
	if ((cfg->per_cgroup || cfg->snoop) && !(s->sh.cgroups = cgroup_names_new())) {
		errorf("out of memory");
		goto fail;
	}
	if (syscalls)
		s->sh.tracefs = tracefs_ready(&s->tracefs_mounted);

	for (i = 0; i < NLAYERS; i++) {
		bool must;

		if (tried)
			tried[i] = false;
		if (!probe && !wanted(cfg, i, &named))
			continue;
		if (tried)
			tried[i] = true;
		/* a layer asked for by name must start; one that is merely available may not */
		must = !probe && named;
		log_mute(!must);
		if (layer_start(layers[i], &s->cfg, &s->sh, &s->inst[i], reps ? &reps[i] : NULL) &&
		    must) {
			log_mute(false);
			goto fail;
		}
		started += s->inst[i] != NULL;
	}
	log_mute(false);
	/* attached: back in the host's mount namespace, where paths and mounts are the host's */
	tracefs_release(s->tracefs_mounted);
	s->tracefs_mounted = false;
	if (!started && !probe) {
		errorf("%s", *log_muted_error() ? log_muted_error() : "no layer could start");
		goto fail;
	}
	s->last_ns = clock_ns(CLOCK_MONOTONIC);
	disks_note();	/* the disks there now keep their names if they go before they print */
	*out = s;
	return 0;
fail:
	session_close(s);
	return -1;
}

bool session_has(const struct session *s, int id)
{
	return s->inst[id] != NULL;
}

/* Every layer's counters, and the programs' recursion misses (their events went unseen). */
static int read_counters(struct session *s, struct interval *iv)
{
	uint64_t misses = 0;
	int i, err = 0;

	for (i = 0; i < NLAYERS && !err; i++) {
		if (!s->inst[i])
			continue;
		err = layer_counters(s->inst[i], iv);
		if (err)
			errorf("reading the %s layer's counters: %s", layers[i]->name,
			       strerror(-err));
		misses += layer_recursion_misses(s->inst[i]);
	}
	/* totals only grow: a smaller one is a read that failed, counted the next time */
	counters_add(iv->drops, &iv->ndrops, "prog_recursion",
		     misses > s->prev_misses ? misses - s->prev_misses : 0);
	if (misses > s->prev_misses)
		s->prev_misses = misses;
	return err;
}

static void grace(void)
{
	struct timespec t = { 0, GRACE_NS };

	while (nanosleep(&t, &t) && errno == EINTR)	/* a signal does not shorten it */
		;
}

/* The interval's end at `end` (monotonic): its length grows from the last end to this one. */
static void mark_end(struct session *s, struct interval *iv, uint64_t end)
{
	iv->interval_ns += end - s->last_ns;
	iv->end_mono_ns = end;
	iv->ts_ns = clock_ns(CLOCK_REALTIME) - (clock_ns(CLOCK_MONOTONIC) - end);
	s->last_ns = end;
}

static int drain(struct session *s, int gen, struct interval *iv)
{
	int i, err = 0;

	for (i = 0; i < NLAYERS && !err; i++) {
		if (!s->inst[i])
			continue;
		err = layer_drain(s->inst[i], (uint32_t)gen, iv);
		if (err)
			errorf("reading the %s layer's histograms: %s", layers[i]->name,
			       strerror(-err));
	}
	return err;
}

/* Requests no event will end any more: unmeasured, so every stage's count + unmeasured is
 * the number of requests seen starting it. */
static int pending(struct session *s, bool final, struct interval *iv)
{
	int i, err = 0;

	for (i = 0; i < NLAYERS && !err; i++) {
		if (s->inst[i] && final)
			layer_log_keys(s->inst[i]);
		if (!s->inst[i] || !layers[i]->pending)
			continue;
		err = layers[i]->pending(s->inst[i], final, iv);
		if (err)
			errorf("reading the %s layer's requests in flight: %s", layers[i]->name,
			       strerror(-err));
	}
	if (!err && final && s->sh.reqs_fd >= 0) {
		int bad = table_spill_check(s->sh.reqs_fd, "request", s->cfg.inflight_slots,
					    sizeof(struct ioreq), offsetof(struct ioreq, spill));

		err = bad < 0 ? bad : 0;
		if (err)
			errorf("reading the request table: %s", strerror(-err));
	}
	return err;
}

/*
 * The interval's records: generation gen's histograms (-1: both, once detached), the requests
 * no event will end any more, and the counters.
 */
static int collect(struct session *s, int gen, struct interval *iv)
{
	int err = gen >= 0 ? drain(s, gen, iv) : drain(s, 0, iv) ?: drain(s, 1, iv);

	if (!err)
		err = pending(s, gen < 0, iv);
	if (!err)
		err = read_counters(s, iv);
	recs_sort(&iv->recs);
	return err ? 1 : 0;
}

static void detach_all(struct session *s)
{
	layers_detach(s->inst, NLAYERS);
	s->finished = true;
}

int session_interval(struct session *s, struct interval *iv)
{
	uint32_t old = *s->gen & 1;

	mark_end(s, iv, clock_ns(CLOCK_MONOTONIC));
	__atomic_store_n(s->gen, old ^ 1, __ATOMIC_SEQ_CST);
	grace();
	return collect(s, (int)old, iv);
}

/* Every record the ring buffer holds now, to the sink. */
static void snoop_drain(struct session *s)
{
	if (s->rb && !s->req_out)
		ring_buffer__consume(s->rb);
}

int session_finish(struct session *s, struct interval *iv)
{
	mark_end(s, iv, clock_ns(CLOCK_MONOTONIC));
	detach_all(s);
	grace();
	/* detached: the last records, before the interval that counts the ones lost */
	snoop_drain(s);
	/* detached: whatever either generation holds belongs to this last interval */
	return collect(s, -1, iv);
}

void session_close(struct session *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < NLAYERS; i++)
		layer_free(s->inst[i]);
	if (s->gen)
		munmap((void *)s->gen, s->gen_len);
	if (s->sh.gen_fd >= 0)
		close(s->sh.gen_fd);
	if (s->sh.reqs_fd >= 0)
		close(s->sh.reqs_fd);
	if (s->sh.comm_fd >= 0)
		close(s->sh.comm_fd);
	ring_buffer__free(s->rb);
	if (s->sh.snoop_fd >= 0)
		close(s->sh.snoop_fd);
	cgroup_names_free(s->sh.cgroups);
	tracefs_release(s->tracefs_mounted);
	free(s);
}

int session_readable(const struct session *s)
{
	uint32_t zero = 0, v;

	return bpf_map_lookup_elem(s->sh.gen_fd, &zero, &v) ? -errno : 0;
}

void session_run_time(const struct session *s, uint64_t ns[NLAYERS])
{
	int i;

	for (i = 0; i < NLAYERS; i++)
		ns[i] = s->inst[i] ? layer_run_time_ns(s->inst[i]) : 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	struct snoop_rec raw;
	struct layer_inst *l;
	struct req_rec r;

	if (size < sizeof(raw))
		return 0;
	memcpy(&raw, data, sizeof(raw));
	/* the submitter's name, noted by the programs where it submitted: known once it is gone */
	l = raw.layer < NLAYERS ? s->inst[raw.layer] : NULL;
	if (!raw.comm[0] && l && l->desc->comm_map &&
	    bpf_map__lookup_elem(layer_map(l, l->desc->comm_map), &raw.tgid, sizeof(raw.tgid),
				 raw.comm, sizeof(raw.comm), 0))
		raw.comm[0] = '\0';
	raw.comm[sizeof(raw.comm) - 1] = '\0';
	req_rec_decode(&raw, s->sh.cgroups, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME),
		       &r);
	s->req_out = s->req_sink(&r, s->req_arg);
	return s->req_out ? -ECANCELED : 0;	/* stops ring_buffer__poll/consume */
}

int session_snoop(struct session *s, session_req_sink fn, void *arg)
{
	if (s->sh.snoop_fd < 0)
		return 0;
	s->req_sink = fn;
	s->req_arg = arg;
	s->rb = ring_buffer__new(s->sh.snoop_fd, on_record, s, NULL);
	if (!s->rb) {
		errorf("cannot read snoop's ring buffer: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The longest snoop's records wait in the ring buffer: the programs wake the reader only once
 * it is half full, so that a record costs no wakeup; the reader reads it at least this often. */
#define SNOOP_POLL_MS 100

/*
 * Wait until stop_fd (> 0; else none) is readable, a stop signal comes, or timeout_ns pass;
 * true: stop_fd is readable (the process it stands for has ended). A stop signal that comes
 * after the caller last saw `stopping` clear ends the wait at once: the stop signals are blocked
 * from that look on, and ppoll unblocks them only as it waits. Checked, then slept on, a signal
 * that came in between held the stop until the interval's end (up to INTERVAL seconds).
 */
static bool wait_stop(int stop_fd, uint64_t timeout_ns, const sigset_t *unblocked)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ULL),
			       (long)(timeout_ns % 1000000000ULL) };

	return ppoll(&p, stop_fd > 0 ? 1 : 0, &ts, unblocked) > 0;
}

/* Has stop_fd (> 0) become readable, now? */
static bool stop_fd_ready(int stop_fd)
{
	return stop_fd > 0 && wait_stop(stop_fd, 0, NULL);
}

/* Sleep until deadline (monotonic ns), a signal, stop_fd readable, or a stop the record sink
 * asks for; with snoop, reading the ring buffer meanwhile. */
static void wait_until(struct session *s, uint64_t deadline, int stop_fd)
{
	sigset_t stops, unblocked;
	uint64_t now;

	if (!s->rb) {
		stop_signals_set(&stops);
		pthread_sigmask(SIG_BLOCK, &stops, &unblocked);
		while (!stopping && (now = clock_ns(CLOCK_MONOTONIC)) < deadline)
			if (wait_stop(stop_fd, deadline - now, &unblocked))
				break;
		pthread_sigmask(SIG_SETMASK, &unblocked, NULL);
		return;
	}
	while (!stopping && !s->req_out && (now = clock_ns(CLOCK_MONOTONIC)) < deadline) {
		uint64_t ms = (deadline - now + 999999) / 1000000;
		int wait = ms < SNOOP_POLL_MS ? (int)ms : SNOOP_POLL_MS;

		/*
		 * poll consumes only when the ring buffer woke it, which the programs do once it
		 * is half full: read it anyway each time, then let the sink flush what it wrote.
		 */
		ring_buffer__poll(s->rb, wait);
		if (!s->req_out)
			ring_buffer__consume(s->rb);
		if (!s->req_out)
			s->req_out = s->req_sink(NULL, s->req_arg);
		if (stop_fd_ready(stop_fd))
			return;
	}
}

/*
 * The process stop_fd stands for has ended, but requests it queued on the disk traced may still
 * be in flight (io_uring tears a ring down after its process is gone) or held by the scheduler,
 * which inflight does not count: wait until the disk has none in flight and has completed none
 * for QUIET_NS (longer than a scheduler idles for a queue: bfq's slice_idle is 8 ms), so that
 * they are in the last interval; for at most SETTLE_NS.
 */
#define QUIET_NS (100ULL * 1000 * 1000)
#define SETTLE_NS (SESSION_SETTLE_S * 1000ULL * 1000 * 1000)

static void disk_settle(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), end = now + SETTLE_NS, since = now;
	struct timespec ms = { 0, 1000 * 1000 };
	int64_t done = disk_completed(s->cfg.dev), d;

	s->unsettled = false;
	while (s->cfg.dev && !stopping && (now = clock_ns(CLOCK_MONOTONIC)) < end) {
		d = disk_completed(s->cfg.dev);
		if (d != done || disk_inflight(s->cfg.dev) > 0) {
			done = d;
			since = now;
		} else if (now - since >= QUIET_NS) {
			return;
		}
		nanosleep(&ms, NULL);
	}
	s->unsettled = s->cfg.dev && !stopping;
}

/*
 * The layers attach one after another, each loaded and verified in turn: the first can record
 * for a second before the last starts. What it recorded then would fall in the first interval,
 * whose length starts when every layer is attached, so that interval showed more I/O for the
 * first layers than for the later ones (block 149,959 requests against io_uring's 121,359 in
 * one run), and a rate above the true one. The records made before are put aside here: every
 * layer's first interval starts now. A request started before and ended after is measured in
 * it, as at any interval's edge.
 */
static int session_baseline(struct session *s)
{
	struct interval iv;
	int err, i;

	memset(&iv, 0, sizeof(iv));
	err = session_interval(s, &iv);	/* an interval read and dropped; session_run restarts
					 * the clock (last_ns) after it */
	interval_clear(&iv);
	/*
	 * snoop's records made before now stay in the ring buffer and are printed: the records
	 * that found it full then are counted in the first interval with them, not dropped here
	 * (20,000 requests during the attach window were 30 printed, 0 lost). Nothing was read
	 * before this, so the first interval counts them from 0.
	 */
	for (i = 0; i < NLAYERS && s->cfg.snoop; i++)
		if (s->inst[i])
			s->inst[i]->prev_drops[DROP_SNOOP_LOST] = 0;
	return err;
}

int session_begin(struct session *s)
{
	if (s->begun)
		return 0;
	if (session_baseline(s)) {
		detach_all(s);
		return 1;
	}
	s->last_ns = clock_ns(CLOCK_MONOTONIC);
	s->begun = true;
	return 0;
}

int session_run(struct session *s, const struct run_limits *lim, session_sink sink, void *arg)
{
	uint64_t step = (uint64_t)(lim->interval_s * 1e9), next, end = 0;
	struct interval iv;
	long n = 0;
	int rc = 0, out;

	if (session_begin(s))
		return 1;
	vlog("tracing; interval %.3fs, count %ld, duration %.3fs", lim->interval_s, lim->count,
	     lim->duration_s);
	next = s->last_ns;
	if (lim->duration_s)
		end = next + (uint64_t)(lim->duration_s * 1e9);
	memset(&iv, 0, sizeof(iv));
	for (;;) {
		bool final, ended;

		next += step;
		if (end && next > end)
			next = end;
		wait_until(s, next, lim->stop_fd);
		ended = stop_fd_ready(lim->stop_fd);
		if (ended && lim->fd_ended)
			lim->fd_ended(lim->fd_ended_arg);
		if (ended)
			disk_settle(s);
		/* the record sink said stop (a closed pipe, an error): this interval is the last */
		final = stopping || s->req_out || (lim->count && n + 1 >= lim->count) ||
			(end && next >= end) || ended;
		s->fd_ended = ended && !stopping && !s->req_out;
		if (final) {
			rc = session_finish(s, &iv);
		} else {
			rc = session_interval(s, &iv);
			/* a stop asked for while this one drained: it becomes the last, whole */
			if (!rc && stopping) {
				final = true;
				rc = session_finish(s, &iv);
			}
		}
		out = rc ? 0 : sink(&iv, arg);
		interval_clear(&iv);
		if (!out && s->req_out)
			out = s->req_out;
		if (out) {
			rc = out < 0 ? 0 : 1;
			break;
		}
		if (rc || final)
			break;
		n++;
	}
	/* ended early (an error, a closed pipe): nothing may stay attached */
	if (!s->finished)
		detach_all(s);
	if (!rc && s->fd_ended && lim->stop_pid > 0)
		warnf("process %d exited: tracing stopped with it (its last interval is the one "
		      "it ended in)", (int)lim->stop_pid);
	return rc;
}

bool session_ended_by_fd(const struct session *s)
{
	return s->fd_ended;
}

bool session_disk_settled(const struct session *s)
{
	return !s->unsettled;
}

void session_shared_maps(const struct session *s, struct layer_report *rep)
{
	struct map_mem *m;

	memset(rep, 0, sizeof(*rep));
	m = &rep->maps[rep->nmaps++];
	snprintf(m->name, sizeof(m->name), "gens");
	m->bytes = map_memlock(s->sh.gen_fd);
	snprintf(m->note, sizeof(m->note), "the generation every layer's histograms carry");
	if (s->sh.comm_fd >= 0) {
		m = &rep->maps[rep->nmaps++];
		snprintf(m->name, sizeof(m->name), "req_comm");
		m->bytes = map_memlock(s->sh.comm_fd);
		snprintf(m->note, sizeof(m->note), "%u process names (-P, snoop), every layer's",
			 REQ_COMM_SLOTS);
	}
	if (s->sh.snoop_fd >= 0) {
		m = &rep->maps[rep->nmaps++];
		snprintf(m->name, sizeof(m->name), "snoop_rb");
		m->bytes = map_memlock(s->sh.snoop_fd);
		snprintf(m->note, sizeof(m->note), "snoop's ring buffer, every layer's");
	}
	if (s->sh.reqs_fd < 0)
		return;
	m = &rep->maps[rep->nmaps++];
	snprintf(m->name, sizeof(m->name), "reqs");
	m->bytes = map_memlock(s->sh.reqs_fd);
	snprintf(m->note, sizeof(m->note), "%u slots x %zu B: io_uring/aio requests in flight",
		 s->cfg.inflight_slots, sizeof(struct ioreq));
}
