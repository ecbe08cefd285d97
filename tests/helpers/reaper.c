// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test helper: applications that reap completions in ways a tracer must not misreport.
 *
 *   reaper uring-lazy N DELAY_MS   submit N NOPs, leave their CQEs in the ring for DELAY_MS,
 *                                  consume them, then submit and reap one more NOP (the ring
 *                                  event that lets the tracer see the CQ head move)
 *   reaper uring-paths N           N IOSQE_IO_LINK chains of two NOPs, N reads of an empty pipe
 *                                  (io_uring arms a poll for each), and 2N
 *                                  NOPs into a ring whose CQ holds N (N of them overflow)
 *   reaper uring-rings N           N rings open at once: on each 4 NOPs submitted and reaped,
 *                                  twice (the second round's events find the first's CQEs
 *                                  reaped), then all N closed
 *   reaper uring-skip N            N rounds of a NOP with IOSQE_CQE_SKIP_SUCCESS (no CQE), then
 *                                  an SQE of an unknown opcode (fails before its submission
 *                                  event, in the request the NOP left), reaped; then N NOPs
 *   reaper aio-partial FILE        io_submit of 4 reads whose third has a bad fd (the kernel
 *                                  takes 2), reaped; then the 2 it refused, fixed, submitted
 *                                  and reaped: 4 reads, none reaped without io_getevents
 *   reaper aio-unreadable N FILE   N O_DIRECT 4 KiB reads of FILE through io_submit, each with
 *                                  its iocbpp array in a fresh file mapping the process never
 *                                  touched (the kernel faults it in, a BPF program cannot), then
 *                                  N with an ordinary array; each reaped through io_getevents
 *   reaper aio-unread-tail N FILE  N io_submit calls of 10 O_DIRECT 4 KiB reads of FILE whose
 *                                  iocbpp array straddles two fresh file mappings: the first
 *                                  two iocbs at the end of one, the other 8 in the next; the
 *                                  second iocb has a bad fd, so the kernel takes only the first
 *                                  and never touches the second mapping; each reaped
 *   reaper aio-ring N FILE         N O_DIRECT 4 KiB reads of FILE through io_submit, one at a
 *                                  time with the same iocb, each reaped from the aio ring in
 *                                  user memory, never through io_getevents
 *   reaper aio-reuse N FILE        N O_DIRECT 4 KiB reads of FILE through io_submit, one at a
 *                                  time with the same struct iocb, aio_data 1..N, none reaped
 *                                  before the last is submitted; then all N reaped through
 *                                  io_getevents (each obj the same address, each data once)
 *   reaper aio-leftover MS FILE    an O_DIRECT 4 KiB read of FILE reaped from the aio ring in
 *                                  user memory; MS ms later the same iocb submitted again
 *                                  through an iocbpp array in a fresh file mapping (unreadable
 *                                  to a BPF program), and reaped through io_getevents
 *   reaper uring-zc N                N rounds of 2 NOPs with IOSQE_CQE_SKIP_SUCCESS (no CQE:
 *                                    their entries stay), then a zero-copy send over a TCP
 *                                    loopback connection, its result CQE and notification CQE
 *                                    reaped; exit status 3 if SEND_ZC is not supported
 *   reaper aio-waiting N           a thread waits in io_getevents before anything is submitted;
 *                                  once a byte is read from stdin (the tracer attached), N POLL
 *                                  iocbs on a pipe, one at a time with the same iocb, each made
 *                                  ready at once and reaped by that thread (its first
 *                                  io_getevents entered before the byte came)
 *   reaper aio-leftover MS FILE IN OUT
 *                                  the same, in cgroup IN (a cgroup v2 directory), but the
 *                                  second submission made from cgroup OUT through an ordinary
 *                                  array, and reaped back in IN
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct aio_ring {	/* the kernel's aio completion ring header, at the context's address */
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
	struct io_event events[];
};

static int die(const char *what)
{
	perror(what);
	return 1;
}

static int uring_lazy(int n, int delay_ms)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
	int i;

	if (io_uring_queue_init(n + 1, &ring, 0))
		return die("io_uring_queue_init");
	for (i = 0; i < n; i++)
		io_uring_prep_nop(io_uring_get_sqe(&ring));
	if (io_uring_submit(&ring) != n)
		return die("io_uring_submit");
	/* wait until all n CQEs are posted, without consuming any */
	while (io_uring_cq_ready(&ring) < (unsigned)n)
		if (io_uring_wait_cqe_nr(&ring, &cqe, (unsigned)n))
			return die("io_uring_wait_cqe_nr");
	nanosleep(&ts, NULL);
	io_uring_cq_advance(&ring, (unsigned)n);
	io_uring_prep_nop(io_uring_get_sqe(&ring));
	if (io_uring_submit_and_wait(&ring, 1) != 1 || io_uring_wait_cqe(&ring, &cqe))
		return die("io_uring_submit_and_wait");
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return 0;
}

static int reap(struct io_uring *ring, int n)
{
	struct io_uring_cqe *cqe;

	while (n-- > 0) {
		if (io_uring_wait_cqe(ring, &cqe))
			return -1;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

static int uring_rings(int n)
{
	struct rlimit fds = { (rlim_t)n + 64, (rlim_t)n + 64 };
	struct io_uring *rings = calloc((size_t)n, sizeof(*rings));
	int i, j, round;

	if (!rings)
		return die("calloc");
	if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < (rlim_t)n + 64) {
		fds.rlim_cur = (rlim_t)n + 64;
		if (fds.rlim_max < fds.rlim_cur)
			fds.rlim_max = fds.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &fds))
			return die("setrlimit");
	}
	for (i = 0; i < n; i++)
		if (io_uring_queue_init(4, &rings[i], 0))
			return die("io_uring_queue_init");
	for (round = 0; round < 2; round++)
		for (i = 0; i < n; i++) {
			for (j = 0; j < 4; j++)
				io_uring_prep_nop(io_uring_get_sqe(&rings[i]));
			if (io_uring_submit(&rings[i]) != 4 || reap(&rings[i], 4))
				return die("io_uring_submit");
		}
	for (i = 0; i < n; i++)
		io_uring_queue_exit(&rings[i]);
	free(rings);
	return 0;
}

/* A connected TCP pair on the loopback: sv[0] to sv[1]. 0, or -1. */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return -1;
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof(a)))
		return -1;
	sv[1] = accept(l, NULL, NULL);
	close(l);
	return sv[1] < 0 ? -1 : 0;
}

static int uring_zc(int n)
{
	char buf[64] = { 0 }, rb[4096];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int i, k, want, sv[2];

	if (io_uring_queue_init(16, &ring, 0) || tcp_pair(sv))
		return die("setup");
	for (i = 0; i < n; i++) {
		for (k = 0; k < 2; k++) {
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		}
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_send_zc(sqe, sv[0], buf, sizeof(buf), 0, 0);
		if (io_uring_submit(&ring) != 3)
			return die("io_uring_submit");
		for (want = 1; want; want--) {	/* the result (F_MORE), then the notification */
			if (io_uring_wait_cqe(&ring, &cqe))
				return die("io_uring_wait_cqe");
			if (cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP) {
				fprintf(stderr, "SEND_ZC: %s\n", strerror(-cqe->res));
				return 3;
			}
			if (cqe->flags & IORING_CQE_F_MORE)
				want++;
			io_uring_cqe_seen(&ring, cqe);
		}
		if (read(sv[1], rb, sizeof(rb)) != (ssize_t)sizeof(buf))
			return die("read");
	}
	io_uring_queue_exit(&ring);
	return 0;
}

static int uring_skip(int n)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int i;

	if (io_uring_queue_init(4, &ring, 0))
		return die("io_uring_queue_init");
	for (i = 0; i < n; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		if (io_uring_submit(&ring) != 1)
			return die("skipped NOP");
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->opcode = 0xff;
		if (io_uring_submit(&ring) != 1 || io_uring_wait_cqe(&ring, &cqe))
			return die("unknown opcode");
		if (cqe->res != -EINVAL) {
			fprintf(stderr, "unknown opcode: result %d, not -EINVAL\n", cqe->res);
			return 1;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	for (i = 0; i < n; i++) {
		io_uring_prep_nop(io_uring_get_sqe(&ring));
		if (io_uring_submit(&ring) != 1 || reap(&ring, 1))
			return die("NOP");
	}
	io_uring_queue_exit(&ring);
	return 0;
}

static int uring_paths(int n)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = (unsigned)n };
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	static char buf[4096];
	int pfd[2], i;

	if (io_uring_queue_init(2 * n, &ring, 0) || pipe(pfd))
		return die("io_uring_queue_init");
	for (i = 0; i < n; i++) {	/* chains: the head carries IOSQE_IO_LINK */
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->flags |= IOSQE_IO_LINK;
		io_uring_prep_nop(io_uring_get_sqe(&ring));
	}
	if (io_uring_submit(&ring) != 2 * n || reap(&ring, 2 * n))
		return die("chains");
	/* reads of an empty pipe: io_uring arms a poll for each, then the data comes */
	for (i = 0; i < n; i++)
		io_uring_prep_read(io_uring_get_sqe(&ring), pfd[0], buf + i, 1, 0);
	if (io_uring_submit(&ring) != n)
		return die("polled reads");
	usleep(100000);
	if (write(pfd[1], buf, (size_t)n) != n || reap(&ring, n))
		return die("polled reads");
	io_uring_queue_exit(&ring);

	/* a CQ of n entries and 2n NOPs left unreaped: n CQEs overflow (kept by the kernel) */
	if (io_uring_queue_init_params((unsigned)n, &ring, &p))
		return die("io_uring_queue_init_params");
	for (i = 0; i < 2 * n; i++) {
		io_uring_prep_nop(io_uring_get_sqe(&ring));
		if (io_uring_submit(&ring) != 1)
			return die("overflow submit");
	}
	if (reap(&ring, 2 * n))
		return die("overflow reap");
	io_uring_queue_exit(&ring);
	return 0;
}

static int aio_ring(int n, const char *path)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct aio_ring *r;
	void *buf;
	int fd, i;

	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return die(path);
	if (posix_memalign(&buf, 4096, 4096))
		return die("posix_memalign");
	if (syscall(SYS_io_setup, 8, &ctx))
		return die("io_setup");
	r = (struct aio_ring *)ctx;
	for (i = 0; i < n; i++) {
		memset(&cb, 0, sizeof(cb));
		cb.aio_lio_opcode = IOCB_CMD_PREAD;
		cb.aio_fildes = (unsigned)fd;
		cb.aio_buf = (unsigned long)buf;
		cb.aio_nbytes = 4096;
		cb.aio_offset = (long long)(i % 16) * 4096;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
			return die("io_submit");
		while (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == r->head)
			;
		if (r->events[r->head].res != 4096) {
			fprintf(stderr, "read returned %lld\n", (long long)r->events[r->head].res);
			return 1;
		}
		__atomic_store_n(&r->head, (r->head + 1) % r->nr, __ATOMIC_RELEASE);
	}
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

static int aio_reuse(int n, const char *path)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev[64];
	char seen[64] = { 0 };
	void *buf;
	int fd, i, got = 0;
	long r;

	if (n < 1 || n > 64) {
		fprintf(stderr, "aio-reuse: N must be 1 to 64\n");
		return 2;
	}
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return die(path);
	if (posix_memalign(&buf, 4096, (size_t)n * 4096))
		return die("posix_memalign");
	if (syscall(SYS_io_setup, n, &ctx))
		return die("io_setup");
	for (i = 0; i < n; i++) {
		memset(&cb, 0, sizeof(cb));
		cb.aio_data = (__u64)i + 1;
		cb.aio_lio_opcode = IOCB_CMD_PREAD;
		cb.aio_fildes = (unsigned)fd;
		cb.aio_buf = (unsigned long)buf + (unsigned long)i * 4096;
		cb.aio_nbytes = 4096;
		cb.aio_offset = (long long)i * 4096;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
			return die("io_submit");
	}
	while (got < n) {
		r = syscall(SYS_io_getevents, ctx, 1, n - got, ev, NULL);
		if (r < 0)
			return die("io_getevents");
		for (i = 0; i < r; i++) {
			if (ev[i].obj != (__u64)(unsigned long)&cb || ev[i].data < 1 ||
			    ev[i].data > (__u64)n || seen[ev[i].data - 1]++ || ev[i].res != 4096) {
				fprintf(stderr, "unexpected event: data %llu res %lld\n",
					(unsigned long long)ev[i].data, (long long)ev[i].res);
				return 1;
			}
		}
		got += (int)r;
	}
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

struct waiter {
	aio_context_t ctx;
	int n, done_fd;
};

static void *aio_waiter(void *arg)
{
	struct waiter *w = arg;
	struct io_event ev;
	int i;

	for (i = 0; i < w->n; i++) {
		if (syscall(SYS_io_getevents, w->ctx, 1, 1, &ev, NULL) != 1 || !(ev.res & POLLIN)) {
			perror("io_getevents");
			exit(1);
		}
		if (write(w->done_fd, "x", 1) != 1)
			exit(1);
	}
	return NULL;
}

static int aio_waiting(int n)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct waiter w = { .n = n };
	int p[2], done[2], i;
	pthread_t t;
	char c;

	if (pipe(p) || pipe(done) || syscall(SYS_io_setup, 8, &w.ctx))
		return die("setup");
	w.done_fd = done[1];
	if (pthread_create(&t, NULL, aio_waiter, &w))
		return die("pthread_create");
	if (read(0, &c, 1) != 1)
		return die("stdin");
	for (i = 0; i < n; i++) {
		memset(&cb, 0, sizeof(cb));
		cb.aio_lio_opcode = IOCB_CMD_POLL;
		cb.aio_fildes = (unsigned)p[0];
		cb.aio_buf = POLLIN;
		if (syscall(SYS_io_submit, w.ctx, 1, cbs) != 1)
			return die("io_submit");
		/* ready: the waiter reaps it; then the pipe is emptied for the next */
		if (write(p[1], "x", 1) != 1 || read(done[0], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			return die("pipe");
	}
	pthread_join(t, NULL);
	syscall(SYS_io_destroy, w.ctx);
	return 0;
}

static int aio_partial(const char *path)
{
	aio_context_t ctx = 0;
	struct iocb cb[4], *cbs[4];
	struct io_event ev[4];
	void *buf;
	int fd, i;
	long n;

	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return die(path);
	if (posix_memalign(&buf, 4096, 4 * 4096) || syscall(SYS_io_setup, 8, &ctx))
		return die("io_setup");
	for (i = 0; i < 4; i++) {
		memset(&cb[i], 0, sizeof(cb[i]));
		cb[i].aio_lio_opcode = IOCB_CMD_PREAD;
		cb[i].aio_fildes = (unsigned)(i == 2 ? 9999 : fd);	/* the third: EBADF */
		cb[i].aio_buf = (unsigned long)buf + (unsigned long)i * 4096;
		cb[i].aio_nbytes = 4096;
		cb[i].aio_offset = (long long)i * 4096;
		cbs[i] = &cb[i];
	}
	n = syscall(SYS_io_submit, ctx, 4, cbs);
	if (n != 2) {
		fprintf(stderr, "io_submit took %ld, expected 2\n", n);
		return 1;
	}
	if (syscall(SYS_io_getevents, ctx, 2, 2, ev, NULL) != 2)
		return die("io_getevents");
	cb[2].aio_fildes = (unsigned)fd;
	if (syscall(SYS_io_submit, ctx, 2, cbs + 2) != 2)
		return die("io_submit");
	if (syscall(SYS_io_getevents, ctx, 2, 2, ev, NULL) != 2)
		return die("io_getevents");
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

/* One read of fd through io_submit, cbs the iocbpp array it reads, reaped. */
static int aio_read_one(aio_context_t ctx, struct iocb *cb, struct iocb **cbs)
{
	struct io_event ev;

	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
		return die("io_submit");
	if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
		return die("io_getevents");
	if (ev.obj != (unsigned long)cb || ev.res != 4096) {
		fprintf(stderr, "aio read: result %lld\n", (long long)ev.res);
		return 1;
	}
	return 0;
}

/* An aio context and one O_DIRECT 4 KiB read of path at offset 0 in *cb; 1 (said) on error. */
static int aio_read_setup(const char *path, aio_context_t *ctx, struct iocb *cb, int *fd)
{
	void *buf;

	*fd = open(path, O_RDONLY | O_DIRECT);
	if (*fd < 0)
		return die(path);
	if (posix_memalign(&buf, 4096, 4096) || syscall(SYS_io_setup, 8, ctx))
		return die("io_setup");
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = IOCB_CMD_PREAD;
	cb->aio_fildes = (unsigned)*fd;
	cb->aio_buf = (unsigned long)buf;
	cb->aio_nbytes = 4096;
	return 0;
}

/*
 * A file, unlinked, holding the iocbpp array cbs (one pointer): each mmap of it is a mapping
 * whose page table entry is empty until the kernel reads it, so no BPF program can. -1 (said).
 */
static int unreadable_array_file(struct iocb **cbs)
{
	char map_path[] = "/tmp/reaper-iocbpp-XXXXXX";
	int mfd = mkstemp(map_path);

	if (mfd < 0) {
		die("mkstemp");
		return -1;
	}
	unlink(map_path);
	if (pwrite(mfd, cbs, sizeof(*cbs), 0) != (ssize_t)sizeof(*cbs)) {
		die("pwrite");
		return -1;
	}
	return mfd;
}

static int aio_unreadable(int n, const char *path)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	int fd, mfd, i;

	if (aio_read_setup(path, &ctx, &cb, &fd) || (mfd = unreadable_array_file(cbs)) < 0)
		return 1;
	for (i = 0; i < n; i++) {
		/* a new mapping each time: its page table entry is empty until the kernel reads it */
		struct iocb **far = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);

		if (far == MAP_FAILED)
			return die("mmap");
		if (aio_read_one(ctx, &cb, far))
			return 1;
		munmap(far, 4096);
	}
	for (i = 0; i < n; i++)
		if (aio_read_one(ctx, &cb, cbs))
			return 1;
	close(mfd);
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

static int aio_unread_tail(int n, const char *path)
{
	char map_path[] = "/tmp/reaper-iocbpp-XXXXXX";
	struct iocb cb[10], *cbs[10];
	aio_context_t ctx = 0;
	struct io_event ev;
	int fd, mfd, i;
	void *buf;
	long got;

	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return die(path);
	if (posix_memalign(&buf, 4096, 4096) || syscall(SYS_io_setup, 16, &ctx))
		return die("io_setup");
	for (i = 0; i < 10; i++) {
		memset(&cb[i], 0, sizeof(cb[i]));
		cb[i].aio_lio_opcode = IOCB_CMD_PREAD;
		cb[i].aio_fildes = (unsigned)(i == 1 ? 9999 : fd);	/* the second: EBADF */
		cb[i].aio_buf = (unsigned long)buf;
		cb[i].aio_nbytes = 4096;
		cbs[i] = &cb[i];
	}
	mfd = mkstemp(map_path);
	if (mfd < 0)
		return die("mkstemp");
	unlink(map_path);
	/* file page 0 ends with cbs[0..1]; page 2 starts with cbs[2..9] (pages not adjacent in
	 * the file, so the two mappings stay two: the kernel's fault-around never crosses one) */
	if (pwrite(mfd, cbs, 2 * sizeof(cbs[0]), 4096 - 2 * sizeof(cbs[0])) != 2 * sizeof(cbs[0]) ||
	    pwrite(mfd, cbs + 2, 8 * sizeof(cbs[0]), 8192) != 8 * sizeof(cbs[0]) ||
	    ftruncate(mfd, 12288))
		return die("pwrite");
	for (i = 0; i < n; i++) {
		char *area = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (area == MAP_FAILED ||
		    mmap(area, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, mfd, 0) == MAP_FAILED ||
		    mmap(area + 4096, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, mfd, 8192) ==
		    MAP_FAILED)
			return die("mmap");
		got = syscall(SYS_io_submit, ctx, 10, (struct iocb **)(area + 4096) - 2);
		if (got != 1) {
			fprintf(stderr, "io_submit took %ld, expected 1\n", got);
			return 1;
		}
		if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
			return die("io_getevents");
		if (ev.obj != (unsigned long)&cb[0] || ev.res != 4096) {
			fprintf(stderr, "aio read: result %lld\n", (long long)ev.res);
			return 1;
		}
		munmap(area, 8192);
	}
	close(mfd);
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

/* Move this process into the cgroup v2 directory dir; 1 (said) on error. */
static int cgroup_enter(const char *dir)
{
	char procs[4096];
	FILE *f;
	int bad;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	f = fopen(procs, "w");
	if (!f)
		return die(procs);
	bad = fprintf(f, "%d\n", (int)getpid()) < 0;
	bad |= fclose(f) != 0;
	if (bad)
		return die(procs);
	return 0;
}

/*
 * The same iocb read twice: first reaped from the ring in user memory (its entry stays), then,
 * delay_ms later, submitted where no program follows it (an unreadable array, or from cgroup
 * out when in and out are given) and reaped through io_getevents (back in cgroup in).
 */
static int aio_leftover(int delay_ms, const char *path, const char *in, const char *out)
{
	struct timespec pause = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };
	struct iocb cb, *cbs[1] = { &cb }, **far;
	aio_context_t ctx = 0;
	struct io_event ev;
	struct aio_ring *r;
	int fd, mfd;

	if (in && cgroup_enter(in))
		return 1;
	if (aio_read_setup(path, &ctx, &cb, &fd))
		return 1;
	r = (struct aio_ring *)ctx;
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
		return die("io_submit");
	while (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == r->head)
		;
	__atomic_store_n(&r->head, (r->head + 1) % r->nr, __ATOMIC_RELEASE);
	nanosleep(&pause, NULL);
	if (out) {
		if (cgroup_enter(out))
			return 1;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
			return die("io_submit");
		if (cgroup_enter(in))
			return 1;
		if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
			return die("io_getevents");
		if (ev.obj != (unsigned long)&cb || ev.res != 4096) {
			fprintf(stderr, "aio read: result %lld\n", (long long)ev.res);
			return 1;
		}
		goto done;
	}
	if ((mfd = unreadable_array_file(cbs)) < 0)
		return 1;
	far = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);
	if (far == MAP_FAILED)
		return die("mmap");
	if (aio_read_one(ctx, &cb, far))
		return 1;
	munmap(far, 4096);
	close(mfd);
done:
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "uring-lazy"))
		return uring_lazy(atoi(argv[2]), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "uring-rings"))
		return uring_rings(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "uring-skip"))
		return uring_skip(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "uring-zc"))
		return uring_zc(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "uring-paths"))
		return uring_paths(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "aio-partial"))
		return aio_partial(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "aio-unreadable"))
		return aio_unreadable(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "aio-unread-tail"))
		return aio_unread_tail(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "aio-waiting"))
		return aio_waiting(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "aio-ring"))
		return aio_ring(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "aio-reuse"))
		return aio_reuse(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "aio-leftover"))
		return aio_leftover(atoi(argv[2]), argv[3], NULL, NULL);
	if (argc == 6 && !strcmp(argv[1], "aio-leftover"))
		return aio_leftover(atoi(argv[2]), argv[3], argv[4], argv[5]);
	fprintf(stderr, "usage: reaper uring-lazy N DELAY_MS | uring-rings N | uring-paths N |"
		" uring-skip N | uring-zc N | aio-partial FILE | aio-unreadable N FILE |"
		" aio-unread-tail N FILE | aio-ring N FILE | aio-reuse N FILE |"
		" aio-leftover MS FILE [IN OUT] |"
		" aio-waiting N\n");
	return 2;
}
