// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The engines: each keeps up to --qd I/Os in flight through one Linux interface, preparing
 * and completing them through job_prep()/job_done(), until job_more() says stop and every
 * I/O in flight has completed.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <aio.h>
#include <libaio.h>
#include <liburing.h>
#include "load.h"

/* A stack of free I/O slots. */
struct slots {
	struct io *io;
	uint32_t *free;
	uint32_t nfree, n;
};

static int slots_init(struct slots *s, struct job *j, uint32_t n)
{
	uint32_t i;

	s->io = calloc(n, sizeof(*s->io));
	s->free = calloc(n, sizeof(*s->free));
	if (!s->io || !s->free) {
		free(s->io);
		free(s->free);
		return job_fail(j, ENOMEM, "out of memory for %u I/O slots", n), -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		s->io[i].idx = i;
		s->io[i].buf = (char *)j->buf_mem + (size_t)i * lo.bs;
		s->free[i] = n - 1 - i;
	}
	s->nfree = s->n = n;
	return 0;
}

static void slots_free(struct slots *s)
{
	free(s->io);
	free(s->free);
}

static struct io *slot_get(struct slots *s)
{
	return s->nfree ? &s->io[s->free[--s->nfree]] : NULL;
}

static void slot_put(struct slots *s, struct io *io)
{
	s->free[s->nfree++] = io->idx;
}

static uint32_t inflight(const struct slots *s)
{
	return s->n - s->nfree;
}

/*
 * Requests per submit call. One call for the whole queue holds its first requests back while
 * the rest are prepared (a single plug); one call per request costs a syscall each. Measured
 * here at qd 32 (io_uring/libaio, medians of 5): batch 8 kept the IOPS of batch 1 (+15 % over
 * batch 32) at the CPU per I/O of batch 32 (-35 % from batch 1). So 8 unless told.
 */
#define SUBMIT_BATCH_DEFAULT 8

static uint32_t submit_batch(const struct slots *s)
{
	uint32_t b = lo.submit_batch ? lo.submit_batch : SUBMIT_BATCH_DEFAULT;

	return b < s->n ? b : s->n;
}

static uint32_t wait_nr(const struct slots *s)
{
	uint32_t want = lo.complete_batch ? lo.complete_batch : 1, in = inflight(s);

	/* once nothing more will be submitted, wait for no more than what is left */
	return want < in ? want : in;
}

/* Until t: sleep while far from it, then spin, so the deadline is not missed by a wake-up. */
static void sleep_until(uint64_t t)
{
	struct timespec ts = ts_of_ns(t > 200000 ? t - 200000 : 0);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	while (now_ns() < t)
		;
}

/* Sleep ns, asleep throughout (a retry's pause: sleep_until spins its last 200 us); a signal
 * cuts it short, so that a stop is seen at once. */
static void nap(uint64_t ns)
{
	struct timespec ts = ts_of_ns(ns);

	nanosleep(&ts, NULL);
}

/* ---- psync: pread/pwrite, one at a time ---- */

int run_psync(struct job *j)
{
	struct io io = { .buf = j->buf_mem };
	long r;

	for (;;) {
		if (!job_more(j)) {
			if (job_idle(j))	/* --rate: the next is not due yet */
				continue;
			break;
		}
		job_prep(j, &io);
		io.t_sub = 0;	/* synchronous: no separate submission */
		r = io.dir == DIR_READ ? pread(j->fd, io.buf, lo.bs, (off_t)io.off)
				       : pwrite(j->fd, io.buf, lo.bs, (off_t)io.off);
		job_done(j, &io, r < 0 ? -errno : r, now_ns());
		if (j->err || job_fsync_due(j))
			break;
	}
	return -j->err;
}

/* ---- libaio: io_submit/io_getevents; also the aio POLL probe ---- */

/* How long to wait before submitting again what the kernel would not take (-EAGAIN) */
#define SUBMIT_RETRY_NS	100000ULL

int run_libaio(struct job *j)
{
	struct io_event *ev = calloc(lo.qd, sizeof(*ev));
	struct iocb *cbs = calloc(lo.qd, sizeof(*cbs));
	struct iocb **batch = calloc(lo.qd, sizeof(*batch));
	int pipefd[2] = { -1, -1 };
	io_context_t ctx = 0;
	struct slots s;
	uint32_t n, i, done, pend = 0;	/* batch[0, pend): refused, to be submitted again */
	struct io *first;		/* the first submitted by the last call (the POLL probe) */
	uint64_t t;
	int r;
	char c;

	if (!ev || !cbs || !batch || slots_init(&s, j, lo.qd)) {
		free(ev), free(cbs), free(batch);
		return job_fail(j, ENOMEM, "out of memory"), -ENOMEM;
	}
	r = io_setup((int)lo.qd, &ctx);
	if (r < 0) {
		job_fail(j, -r, "io_setup(%u): %s%s", lo.qd, strerror(-r),
			 r == -EAGAIN ? " (raise fs.aio-max-nr, or lower --qd/--jobs)" : "");
		goto out;
	}
	if (lo.op == OP_POLL && pipe(pipefd)) {
		job_fail(j, errno, "pipe: %s", strerror(errno));
		goto out;
	}
	for (;;) {
fill:
		/* fill the queue, submitting in batches of --submit-batch; refused ones first */
		n = pend;
		while (n < submit_batch(&s) && s.nfree && job_more(j)) {
			struct io *io = slot_get(&s);
			struct iocb *cb;

			job_prep(j, io);
			cb = &cbs[io->idx];
			if (lo.op == OP_POLL)
				io_prep_poll(cb, pipefd[0], POLLIN);
			else if (io->dir == DIR_READ)
				io_prep_pread(cb, j->fd, io->buf, lo.bs, (long long)io->off);
			else
				io_prep_pwrite(cb, j->fd, io->buf, lo.bs, (long long)io->off);
			cb->data = io;
			batch[n++] = cb;
		}
		for (i = 0; i < n; ) {	/* a partial submit leaves the rest for another call */
			r = io_submit(ctx, (long)(n - i), batch + i);
			t = now_ns();
			if (r == -EINTR)
				continue;
			if (r == -EAGAIN)
				break;
			if (r <= 0) {
				job_fail(j, -r, "io_submit: %s", strerror(r ? -r : EIO));
				goto out;
			}
			for (; r > 0; r--, i++)
				((struct io *)batch[i]->data)->t_sub = t;
		}
		first = i ? batch[0]->data : NULL;
		pend = n - i;
		if (pend) {
			/*
			 * The kernel took none of these (-EAGAIN: no memory for an iocb, or no room
			 * until completions are reaped): they keep their place, submitted again after
			 * what is in flight is reaped, or after a pause when nothing is (once retried
			 * at once, forever, blind to a stop). A stop gives them back unsubmitted.
			 */
			memmove(batch, batch + i, pend * sizeof(*batch));
			if (atomic_load(&load_stop)) {
				for (; pend; pend--)
					slot_put(&s, batch[pend - 1]->data);
			} else if (inflight(&s) == pend) {
				nap(SUBMIT_RETRY_NS);
				continue;
			}
		} else if (n && n == submit_batch(&s) && s.nfree && lo.op != OP_POLL) {
			goto fill;	/* more to submit before waiting */
		}
		if (lo.op == OP_POLL && first) {
			/* the probe: the pipe becomes readable a known time after submission */
			sleep_until(first->t_sub + lo.latency_ns);
			if (write(pipefd[1], "x", 1) != 1) {
				job_fail(j, errno, "pipe write: %s", strerror(errno));
				goto out;
			}
		}
		if (!inflight(&s)) {
			if (job_idle(j))	/* --rate: the next is not due yet */
				continue;
			break;
		}
		if (lo.spin && !atomic_load_explicit(&load_stop, memory_order_relaxed)) {
			/* busy-poll: the completion is seen when it happens; after a stop, what is in
			 * flight is waited for asleep */
			struct timespec zero = { 0, 0 };

			r = io_getevents(ctx, 0, (long)lo.qd, ev, &zero);
			if (r == 0)
				continue;
		} else {
			/* --rate: wait no longer than until the next I/O is due */
			uint64_t pace = job_pace(j);
			struct timespec to = ts_of_ns(pace);
			/* no more than the kernel has: the refused ones are not there */
			uint32_t want = wait_nr(&s), at = inflight(&s) - pend;

			r = io_getevents(ctx, pace ? 1 : want < at ? want : at, (long)lo.qd, ev,
					 pace ? &to : NULL);
		}
		t = now_ns();
		if (r == -EINTR)
			continue;
		if (r < 0) {
			job_fail(j, -r, "io_getevents: %s", strerror(-r));
			goto out;
		}
		for (done = 0; done < (uint32_t)r; done++) {
			struct io *io = ev[done].data;

			job_done(j, io, (long)ev[done].res, t);
			slot_put(&s, io);
			if (lo.op == OP_POLL && read(pipefd[0], &c, 1) != 1)
				job_fail(j, EIO, "pipe read failed");
		}
		if (j->err || job_fsync_due(j))
			break;
	}
	/*
	 * A job that stopped on an error: what it had submitted still completes, and is counted
	 * (it reached the device). The refused ones never left: not issued, not counted. (A poll
	 * probe is one at a time: none is left.)
	 */
	while (j->err && inflight(&s) > pend) {
		r = io_getevents(ctx, 1, (long)lo.qd, ev, NULL);
		t = now_ns();
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		for (done = 0; done < (uint32_t)r; done++) {
			job_done(j, ev[done].data, (long)ev[done].res, t);
			slot_put(&s, ev[done].data);
		}
	}
out:
	if (ctx) {
		/* cancel what a fatal error left in flight; io_destroy waits for the rest */
		io_destroy(ctx);
	}
	if (pipefd[0] >= 0)
		close(pipefd[0]), close(pipefd[1]);
	slots_free(&s);
	free(ev), free(cbs), free(batch);
	return -j->err;
}

/* ---- POSIX aio: glibc's aio_read/aio_write (helper threads), aio_suspend ---- */

#define AIO_SUSPEND_MAX 8

int run_posixaio(struct job *j)
{
	struct aiocb *cbs = calloc(lo.qd, sizeof(*cbs));
	const struct aiocb *wait[AIO_SUSPEND_MAX];
	uint32_t i, n, reaped;
	struct slots s;
	uint64_t t;
	int r;

	if (!cbs || slots_init(&s, j, lo.qd)) {
		free(cbs);
		return job_fail(j, ENOMEM, "out of memory"), -ENOMEM;
	}
	for (;;) {
		while (s.nfree && job_more(j)) {
			struct io *io = slot_get(&s);
			struct aiocb *cb;

			job_prep(j, io);
			cb = &cbs[io->idx];
			memset(cb, 0, sizeof(*cb));
			cb->aio_fildes = j->fd;
			cb->aio_buf = io->buf;
			cb->aio_nbytes = lo.bs;
			cb->aio_offset = (off_t)io->off;
			r = io->dir == DIR_READ ? aio_read(cb) : aio_write(cb);
			io->t_sub = now_ns();
			if (r) {
				job_fail(j, errno, "aio_%s: %s", io->dir == DIR_READ ? "read" : "write",
					 strerror(errno));
				cb->aio_buf = NULL;
				slot_put(&s, io);
			}
		}
		if (!inflight(&s)) {
			if (job_idle(j))	/* --rate: the next is not due yet */
				continue;
			break;
		}
		/*
		 * Reap what has finished (aio_buf marks a request in flight). Only when nothing
		 * has, sleep in aio_suspend on a few of them: glibc registers a waiter for each
		 * listed request under its global aio lock, so a long list costs more than it
		 * saves.
		 */
		t = now_ns();
		for (i = n = reaped = 0; i < s.n; i++) {
			struct aiocb *cb = &cbs[i];

			if (!cb->aio_buf)
				continue;
			r = aio_error(cb);
			if (r == EINPROGRESS) {
				if (n < AIO_SUSPEND_MAX)
					wait[n++] = cb;
				continue;
			}
			job_done(j, &s.io[i], r ? -r : (long)aio_return(cb), t);
			cb->aio_buf = NULL;
			slot_put(&s, &s.io[i]);
			reaped++;
		}
		if (!reaped) {
			/* --rate: wait no longer than until the next I/O is due (EAGAIN then) */
			uint64_t pace = job_pace(j);
			struct timespec to = ts_of_ns(pace);

			if (aio_suspend(wait, (int)n, pace ? &to : NULL) && errno != EINTR &&
			    errno != EAGAIN)
				job_fail(j, errno, "aio_suspend: %s", strerror(errno));
			continue;
		}
		if (job_fsync_due(j))
			continue;	/* job_more() now says stop; drain what is in flight */
	}
	slots_free(&s);
	free(cbs);
	return -j->err;
}

/* ---- io_uring (liburing): read/write, fixed buffers/files, SQPOLL; NOP and TIMEOUT probes ---- */

/*
 * io_uring_submit, or, every --hold-submits'th call (testing), what the kernel answers when it
 * cannot allocate a request: -EAGAIN, every SQE left in the ring for the next call.
 */
static int submit_some(struct io_uring *ring, uint64_t *calls)
{
	if (lo.hold_submits && ++*calls % lo.hold_submits == 0)
		return -EAGAIN;
	return io_uring_submit(ring);
}

int run_uring(struct job *j)
{
	struct io_uring_params p = { 0 };
	struct __kernel_timespec *ts = calloc(lo.qd, sizeof(*ts));
	struct iovec *iov = calloc(lo.qd, sizeof(*iov));
	struct io **batch = calloc(lo.qd, sizeof(*batch));
	/* reaped since the last submit the kernel took an SQE of: their reap_bound ends there */
	struct reaped { enum dir dir; uint64_t t_prep; } *reaped = calloc(lo.qd, sizeof(*reaped));
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	bool ring_ok = false;
	struct slots s;
	unsigned int head, seen;
	uint32_t n, i, took, pend = 0, nreaped = 0;
	bool sq_full;
	uint64_t t, t_enter, pace, due, submits = 0;
	int r, fd = j->fd;

	if (!ts || !iov || !batch || !reaped || slots_init(&s, j, lo.qd)) {
		free(ts), free(iov), free(batch), free(reaped);
		return job_fail(j, ENOMEM, "out of memory"), -ENOMEM;
	}
	if (lo.iopoll)
		p.flags |= IORING_SETUP_IOPOLL;
	if (lo.sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;
		if (lo.sqpoll_cpu >= 0) {
			p.flags |= IORING_SETUP_SQ_AFF;
			p.sq_thread_cpu = (unsigned int)lo.sqpoll_cpu;
		}
	}
	r = io_uring_queue_init_params(lo.qd, &ring, &p);
	if (r < 0) {
		job_fail(j, -r, "io_uring_setup(%u entries%s%s): %s%s", lo.qd,
			 lo.sqpoll ? ", SQPOLL" : "", lo.iopoll ? ", IOPOLL" : "", strerror(-r),
			 r == -EPERM ? " (io_uring disabled? see /proc/sys/kernel/io_uring_disabled)"
			 : r == -EINVAL ? " (an option this kernel does not support)" : "");
		goto out;
	}
	ring_ok = true;
	if (lo.fixed_files && lo.op == OP_RW) {
		r = io_uring_register_files(&ring, &j->fd, 1);
		if (r < 0) {
			job_fail(j, -r, "registering the file: %s", strerror(-r));
			goto out;
		}
		fd = 0;
	}
	if (lo.fixed_bufs && lo.op == OP_RW) {
		for (i = 0; i < lo.qd; i++) {
			iov[i].iov_base = s.io[i].buf;
			iov[i].iov_len = lo.bs;
		}
		r = io_uring_register_buffers(&ring, iov, lo.qd);
		if (r < 0) {
			job_fail(j, -r, "registering %u buffers: %s%s", lo.qd, strerror(-r),
				 r == -ENOMEM ? " (RLIMIT_MEMLOCK too low?)" : "");
			goto out;
		}
	}
	for (;;) {
fill:
		n = pend;	/* SQEs the kernel did not take yet come first */
		sq_full = false;
		while (n < submit_batch(&s) && s.nfree && job_more(j)) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			struct io *io;

			if (!sqe) {	/* the SQ ring is full until the next submit */
				sq_full = true;
				break;
			}
			io = slot_get(&s);
			job_prep(j, io);
			switch (lo.op) {
			case OP_NOP:
				io_uring_prep_nop(sqe);
				break;
			case OP_TIMEOUT:
				ts[io->idx].tv_sec = (long long)(lo.latency_ns / 1000000000ULL);
				ts[io->idx].tv_nsec = (long long)(lo.latency_ns % 1000000000ULL);
				io_uring_prep_timeout(sqe, &ts[io->idx], 0, 0);
				break;
			default:
				if (lo.fixed_bufs) {
					if (io->dir == DIR_READ)
						io_uring_prep_read_fixed(sqe, fd, io->buf, lo.bs,
									 io->off, (int)io->idx);
					else
						io_uring_prep_write_fixed(sqe, fd, io->buf, lo.bs,
									  io->off, (int)io->idx);
				} else if (io->dir == DIR_READ) {
					io_uring_prep_read(sqe, fd, io->buf, lo.bs, io->off);
				} else {
					io_uring_prep_write(sqe, fd, io->buf, lo.bs, io->off);
				}
				if (lo.fixed_files)
					sqe->flags |= IOSQE_FIXED_FILE;
				if (lo.force_async)	/* straight to an io-wq worker */
					sqe->flags |= IOSQE_ASYNC;
			}
			io_uring_sqe_set_data(sqe, io);
			batch[n++] = io;
		}
		if (n) {
			t_enter = now_ns();
			r = submit_some(&ring, &submits);
			t = now_ns();
			if (r < 0 && r != -EINTR && r != -EAGAIN) {
				job_fail(j, -r, "io_uring_enter: %s", strerror(-r));
				break;
			}
			/*
			 * The kernel may take fewer than were flushed to the SQ ring (-EAGAIN: it could
			 * not allocate a request), the rest staying there for the next submit: only
			 * what it took has been submitted, and the rest keep their place in batch.
			 */
			took = r > 0 ? ((uint32_t)r < n ? (uint32_t)r : n) : 0;
			/* SQPOLL: r counts what the poller had not consumed yet; every SQE flushed to
			 * the ring is its to take, and some may be done already */
			if (lo.sqpoll && r >= 0)
				took = n;
			for (i = 0; i < took; i++)
				batch[i]->t_sub = t;
			/* the kernel took an SQE: an event of the ring, which reads the CQ head (under
			 * SQPOLL its thread takes them, whenever) */
			for (i = 0; took && !lo.sqpoll && i < nreaped; i++)
				hist_record(&j->d[reaped[i].dir].reap_bound, t_enter - reaped[i].t_prep);
			if (took)
				nreaped = 0;
			pend = n - took;
			memmove(batch, batch + took, pend * sizeof(*batch));
			if (!pend && n == submit_batch(&s) && s.nfree)
				goto fill;	/* more to submit before waiting */
			if (pend && inflight(&s) == pend) {
				/* nothing of ours at the kernel, so no completion to wait for: try the
				 * submit again shortly (a stop ends the job with them unsubmitted) */
				if (atomic_load(&load_stop))
					break;
				nap(SUBMIT_RETRY_NS);
				continue;
			}
		}
		if (!inflight(&s) && sq_full) {
			/* SQPOLL: completions can be reaped before the poller moves the SQ head past
			 * their SQEs, so the ring looks full with nothing in flight: wait for room,
			 * not take the job for done */
			r = io_uring_sqring_wait(&ring);
			if (r < 0 && r != -EINTR && r != -EAGAIN) {
				job_fail(j, -r, "waiting for room in the SQ ring: %s", strerror(-r));
				break;
			}
			continue;
		}
		if (!inflight(&s)) {
			if (job_idle(j))	/* --rate: the next is not due yet */
				continue;
			break;
		}
		r = -EAGAIN;
		pace = job_pace(j);	/* --rate: wait no longer than until the next is due */
		due = pace ? now_ns() + pace : 0;
		if (lo.spin || lo.poll_ns) {	/* busy-poll the CQ ring: no sleep, no wake-up */
			uint64_t until = lo.spin ? UINT64_MAX : now_ns() + lo.poll_ns;

			if (due && due < until)
				until = due;
			/* a stop ends the spin: what is in flight is then waited for asleep */
			while ((r = io_uring_peek_cqe(&ring, &cqe)) == -EAGAIN && now_ns() < until &&
			       !atomic_load_explicit(&load_stop, memory_order_relaxed))
				;
			if (r == -EAGAIN && due && now_ns() >= due)
				continue;	/* the next I/O is due */
		}
		t = now_ns();
		if (r == -EAGAIN && due) {	/* asleep until a completion or the next is due */
			uint64_t left = due > t ? due - t : 1;
			struct __kernel_timespec kts = { (long long)(left / 1000000000ULL),
							 (long long)(left % 1000000000ULL) };

			r = io_uring_wait_cqes(&ring, &cqe, 1, &kts, NULL);
		} else if (r == -EAGAIN) {
			/* with SQEs held back, the kernel has fewer than wait_nr counts */
			r = io_uring_wait_cqe_nr(&ring, &cqe, pend ? 1 : wait_nr(&s));
		}
		t = now_ns();
		if (r == -EINTR || r == -EAGAIN || r == -ETIME)
			continue;
		if (r < 0) {
			job_fail(j, -r, "waiting for completions: %s", strerror(-r));
			break;
		}
		seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct io *io = io_uring_cqe_get_data(cqe);
			long res = cqe->res;

			if (lo.op == OP_TIMEOUT && res == -ETIME)
				res = 0;	/* a timeout that expired is the probe working */
			job_done(j, io, res, t);
			if (nreaped < lo.qd)
				reaped[nreaped++] = (struct reaped){ io->dir, io->t_prep };
			slot_put(&s, io);
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
		if (!j->err)
			job_fsync_due(j);
		if (j->err) {
			/* let what is in flight finish before the ring goes, counted: it reached the
			 * device (the SQEs never taken did not, and are not) */
			while (inflight(&s) > pend && !io_uring_wait_cqe(&ring, &cqe)) {
				struct io *io = io_uring_cqe_get_data(cqe);
				long res = cqe->res;

				if (lo.op == OP_TIMEOUT && res == -ETIME)
					res = 0;
				job_done(j, io, res, now_ns());
				slot_put(&s, io);
				io_uring_cqe_seen(&ring, cqe);
			}
			break;
		}
	}
out:
	if (ring_ok)
		io_uring_queue_exit(&ring);
	slots_free(&s);
	free(ts), free(iov), free(batch), free(reaped);
	return -j->err;
}

/* ---- threadpool: a submitter hands I/Os to workers that pread/pwrite, and takes them back ---- */

struct tp_queue {
	struct io **v;
	uint32_t head, tail, cap;	/* ring of cap entries */
	pthread_cond_t cond;
};

struct tp {
	struct job *j;
	pthread_mutex_t lock;
	struct tp_queue req, done;
	long *res;		/* per slot */
	uint64_t *t_done;
	bool quit;
};

static void q_push(struct tp_queue *q, struct io *io)
{
	q->v[q->tail++ % q->cap] = io;
	pthread_cond_signal(&q->cond);
}

static struct io *q_pop(struct tp_queue *q)
{
	return q->head == q->tail ? NULL : q->v[q->head++ % q->cap];
}

static void *tp_worker(void *arg)
{
	struct tp *tp = arg;
	struct io *io;
	long r;

	pthread_mutex_lock(&tp->lock);
	for (;;) {
		while (!(io = q_pop(&tp->req)) && !tp->quit)
			pthread_cond_wait(&tp->req.cond, &tp->lock);
		if (!io)
			break;
		pthread_mutex_unlock(&tp->lock);
		r = io->dir == DIR_READ ? pread(tp->j->fd, io->buf, lo.bs, (off_t)io->off)
					: pwrite(tp->j->fd, io->buf, lo.bs, (off_t)io->off);
		tp->res[io->idx] = r < 0 ? -errno : r;
		pthread_mutex_lock(&tp->lock);
		q_push(&tp->done, io);
	}
	pthread_mutex_unlock(&tp->lock);
	return NULL;
}

int run_threadpool(struct job *j)
{
	struct tp tp = { .j = j };
	pthread_t *workers = calloc((size_t)lo.workers, sizeof(*workers));
	struct slots s;
	struct io *io;
	int w, started = 0;
	uint64_t t, pace;

	tp.res = calloc(lo.qd, sizeof(*tp.res));
	tp.req.cap = tp.done.cap = lo.qd;
	tp.req.v = calloc(lo.qd, sizeof(*tp.req.v));
	tp.done.v = calloc(lo.qd, sizeof(*tp.done.v));
	if (!workers || !tp.res || !tp.req.v || !tp.done.v || slots_init(&s, j, lo.qd)) {
		free(workers), free(tp.res), free(tp.req.v), free(tp.done.v);
		return job_fail(j, ENOMEM, "out of memory"), -ENOMEM;
	}
	pthread_mutex_init(&tp.lock, NULL);
	pthread_cond_init(&tp.req.cond, NULL);
	pthread_cond_init(&tp.done.cond, NULL);
	for (w = 0; w < lo.workers; w++, started++)
		if (pthread_create(&workers[w], NULL, tp_worker, &tp)) {
			job_fail(j, EAGAIN, "cannot start worker thread %d", w);
			break;
		}
	while (!j->err) {
		pthread_mutex_lock(&tp.lock);
		while (s.nfree && job_more(j)) {
			io = slot_get(&s);
			pthread_mutex_unlock(&tp.lock);
			job_prep(j, io);
			pthread_mutex_lock(&tp.lock);
			io->t_sub = now_ns();
			q_push(&tp.req, io);
		}
		if (!inflight(&s)) {
			pthread_mutex_unlock(&tp.lock);
			if (job_idle(j))	/* --rate: the next is not due yet */
				continue;
			break;
		}
		pace = job_pace(j);	/* --rate: wait no longer than until the next is due */
		if (pace) {
			/* the condition variable's clock is CLOCK_REALTIME: an absolute time on it */
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until = ts_of_ns((uint64_t)until.tv_sec * 1000000000ULL +
					 (uint64_t)until.tv_nsec + pace);

			while (tp.done.head == tp.done.tail &&
			       pthread_cond_timedwait(&tp.done.cond, &tp.lock, &until) != ETIMEDOUT)
				;
		}
		while (!pace && tp.done.head == tp.done.tail)
			pthread_cond_wait(&tp.done.cond, &tp.lock);
		t = now_ns();
		while ((io = q_pop(&tp.done))) {
			job_done(j, io, tp.res[io->idx], t);
			slot_put(&s, io);
		}
		pthread_mutex_unlock(&tp.lock);
		if (job_fsync_due(j))
			break;
	}
	pthread_mutex_lock(&tp.lock);
	/* after an error: what no worker has taken yet is not issued; what they have is finished
	 * and counted, as it reached the file */
	while ((io = q_pop(&tp.req)))
		slot_put(&s, io);
	while (inflight(&s)) {
		while (!(io = q_pop(&tp.done)))
			pthread_cond_wait(&tp.done.cond, &tp.lock);
		job_done(j, io, tp.res[io->idx], now_ns());
		slot_put(&s, io);
	}
	tp.quit = true;
	pthread_cond_broadcast(&tp.req.cond);
	pthread_mutex_unlock(&tp.lock);
	for (w = 0; w < started; w++)
		pthread_join(workers[w], NULL);
	slots_free(&s);
	free(workers), free(tp.res), free(tp.req.v), free(tp.done.v);
	return -j->err;
}
