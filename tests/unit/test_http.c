// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * serve's HTTP server (user/lib/http.c) under clients that stall with every slot taken: 40
 * clients ask for a 16 MB body and never read it (their receive buffers tiny), so the server
 * cannot finish writing to any of them; a scraper connecting after them must still get the
 * whole body well before the stalled ones' write deadline (HTTP_WRITE_TIMEOUT_MS), because a
 * connection that has made no progress for a while gives its slot up to a waiting client.
 * Before, only connections that had not sent their request could: the scrape waited the full
 * 10 s. Those go first, though: a scraper pausing amid its body beside idle connections that
 * keep every slot taken is not the one cut off. Then, out of fds: a client waits in the listen queue while every accept fails
 * (EMFILE); the server must not spin on the readable socket meanwhile (it once polled and
 * failed to accept thousands of times a second), and must take the client once fds are free.
 * No root needed; loopback only. Exits non-zero on any failed check; the last line is
 * "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "http.h"
#include "log.h"

#include "check.h"

#define BODY (16u << 20)
#define STALLED 40
#define PORT_ADDR "127.0.0.1:0"

void errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static char *body;
static char long_type[1024];	/* a Content-Type that cannot fit the response head */

static void handler(const char *path, struct http_reply *r, void *arg)
{
	struct sbuf b = { 0 };

	(void)arg;
	sbuf_put(&b, body, BODY);
	r->status = 200;
	r->type = strcmp(path, "/long-type") ? "text/plain" : long_type;
	r->body[0] = http_blob_new(&b);
}

static void *serve(void *arg)
{
	http_run(arg, handler, NULL);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int dial(int port, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";

/*
 * A scraper that pauses amid its response keeps its slot while idle connections, all newer than
 * its pause, take every other slot and more wait: theirs go first. (The connection longest
 * without progress used to go, whatever it was doing: such a scraper was cut off mid-body.)
 */
static void paused_reader_keeps_its_slot(int port)
{
	struct timeval tv = { .tv_sec = 5 };
	int idle[HTTP_MAX_CONNS + 8], i, fd;
	char buf[65536];
	size_t got = 0;
	ssize_t n;

	usleep(200 * 1000);	/* the last part's connections are closed and freed */
	fd = dial(port, 4096);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1 ||
	    (n = recv(fd, buf, sizeof(buf), 0)) <= 0) {
		perror("paused reader");
		exit(2);
	}
	got = (size_t)n;
	usleep(100 * 1000);	/* the server's socket buffer is full: its writes stop moving */
	for (i = 0; i < HTTP_MAX_CONNS + 8; i++)
		idle[i] = dial(port, 0);	/* never a byte sent; 9 of them wait to be taken */
	/* past EVICT_MS for every connection, the reader's the oldest; within EVICT_WRITE_MS */
	usleep(1000 * 1000);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	CHECK(got > BODY && got < BODY + 512, "a scraper that paused 1 s amid its response "
	      "beside idle connections got %zu bytes of a %u-byte body (recv: %s)", got, BODY,
	      n < 0 ? strerror(errno) : "end");
	close(fd);
	for (i = 0; i < HTTP_MAX_CONNS + 8; i++)
		close(idle[i]);
}

/*
 * A reply whose head cannot fit its buffer (a handler's Content-Type of 1,000 bytes) is a whole
 * 500 with no body: it was sent cut at the buffer's end, and the body after it, the head never
 * ended by its empty line.
 */
static void head_too_long_is_500(int port)
{
	static const char ask[] = "GET /long-type HTTP/1.1\r\nHost: t\r\n\r\n";
	struct timeval tv = { .tv_sec = 5 };
	int fd = dial(port, 0);
	char resp[4096];
	size_t got = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, ask, sizeof(ask) - 1, 0) != (ssize_t)sizeof(ask) - 1)
		exit(2);
	while (got < sizeof(resp) - 1 && (n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	close(fd);
	CHECK(!strncmp(resp, "HTTP/1.1 500 ", 13) && strstr(resp, "\r\nContent-Length: 0\r\n") &&
	      got >= 4 && !strcmp(resp + got - 4, "\r\n\r\n"),
	      "a head too long for its buffer: %zu bytes, starting '%.40s'", got, resp);
}

/* Accepts fail while every fd is taken; then the client is served. */
static void out_of_fds(struct http_server *s, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int c = socket(AF_INET, SOCK_STREAM, 0), fill[4096], nfill = 0, i;
	const struct http_stats *st = http_stats(s);
	struct rlimit old, low;
	uint64_t paused0;
	char buf[4096];
	double t0, waited;
	ssize_t n;

	usleep(200 * 1000);	/* the first part's connections are closed and freed */
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = 512 < old.rlim_cur ? 512 : old.rlim_cur;
	setrlimit(RLIMIT_NOFILE, &low);
	while (nfill < (int)(sizeof(fill) / sizeof(fill[0])) && (fill[nfill] = dup(0)) >= 0)
		nfill++;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	paused0 = st->accept_paused;
	t0 = now_s();
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) ||
	    send(c, req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1) {
		perror("out of fds: client");
		exit(2);
	}
	usleep(1000 * 1000);
	waited = now_s() - t0;
	/* an upper bound no machine's speed can exceed: one accept per pause (100 ms) */
	CHECK(st->accept_paused > paused0, "no accept failed with every fd taken");
	CHECK(st->accept_paused - paused0 <= (uint64_t)(waited * 10) + 2, "%llu accepts failed "
	      "in %.2f s out of fds: the server spins", (unsigned long long)(st->accept_paused -
	      paused0), waited);
	printf("out of fds for %.2f s: %llu accepts tried\n", waited,
	       (unsigned long long)(st->accept_paused - paused0));
	for (i = 0; i < nfill; i++)
		close(fill[i]);
	setrlimit(RLIMIT_NOFILE, &old);
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 5 },
		   sizeof(struct timeval));
	n = recv(c, buf, sizeof(buf), 0);	/* served once an fd is free */
	CHECK(n > 12 && !memcmp(buf, "HTTP/1.1 200", 12), "the queued client was not served "
	      "once fds were free (recv %zd)", n);
	close(c);
}

/* Accept-Encoding values, as clients send them (RFC 9110, 12.5.3) */
static void accept_encoding(void)
{
	static const struct { const char *v; bool gzip; } cases[] = {
		{ "gzip", true },			/* Prometheus */
		{ "gzip, deflate, br", true },		/* browsers, curl --compressed */
		{ "deflate, gzip;q=0.5", true },
		{ " GZIP ", true },			/* case-insensitive, spaces around */
		{ "x-gzip", true },
		{ "*", true },
		{ "identity", false },
		{ "", false },
		{ "gzip;q=0", false },
		{ "gzip; q=0.000", false },
		{ "gzip;q=0.001", true },
		{ "*;q=0", false },
		{ "*, gzip;q=0", false },		/* named beats the wildcard */
		{ "gzipx, br", false },			/* a whole name, not a prefix */
		{ "deflate;q=1,gzip;q=0", false },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(http_accepts_gzip(cases[i].v, strlen(cases[i].v)) == cases[i].gzip,
		      "Accept-Encoding: '%s' taken as %s gzip", cases[i].v,
		      cases[i].gzip ? "refusing" : "taking");
}

int main(int argc, char **argv)
{
	struct timeval tv = { .tv_sec = HTTP_WRITE_TIMEOUT_MS / 1000 - 2 };
	const struct http_stats *st;
	struct http_server *s;
	int fds[STALLED], i, fd, port;
	char addr[64], buf[65536];
	size_t got = 0, want;
	double t0, took;
	pthread_t t;
	ssize_t n;

	if (argc != 2 || (port = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: test_http PORT (a free TCP port on 127.0.0.1)\n");
		return 2;
	}
	accept_encoding();
	body = malloc(BODY);
	if (!body)
		return 2;
	memset(body, 'x', BODY);
	memset(long_type, 't', sizeof(long_type) - 1);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (http_listen(addr, &s))
		return 2;
	pthread_create(&t, NULL, serve, s);
	/* every slot taken, and more waiting, by clients that ask and never read */
	for (i = 0; i < STALLED; i++) {
		fds[i] = dial(port, 4096);
		if (send(fds[i], req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1)
			return 2;
	}
	usleep(500 * 1000);	/* the server has taken them and filled its socket buffers */
	t0 = now_s();
	fd = dial(port, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1)
		return 2;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	took = now_s() - t0;
	close(fd);
	want = BODY;	/* and the head, whose length varies: at least the body */
	CHECK(got > want && got < want + 512, "the scrape got %zu bytes of a %u-byte body "
	      "(recv: %s)", got, BODY, n < 0 ? strerror(errno) : "end");
	/* the order, not a speed: whole before the stalled ones' write deadline could free a slot */
	CHECK(took < HTTP_WRITE_TIMEOUT_MS / 1000.0 - 2, "the scrape took %.2f s", took);
	st = http_stats(s);
	CHECK(st->timeouts >= 1, "no stalled connection gave its slot up (timeouts %llu)",
	      (unsigned long long)st->timeouts);
	printf("scrape of %zu bytes beside %d stalled clients: %.3f s; %llu connections gave "
	       "their slot up\n", got, STALLED, took, (unsigned long long)st->timeouts);
	for (i = 0; i < STALLED; i++)
		close(fds[i]);
	head_too_long_is_500(port);
	paused_reader_keeps_its_slot(port);
	out_of_fds(s, port);
	http_stop(s);
	pthread_join(t, NULL);
	http_close(s);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
