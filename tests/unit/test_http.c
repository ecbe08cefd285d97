// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * serve's HTTP server (user/lib/http.c) under clients that stall with every slot taken: 40
 * clients ask for a 16 MB body and never read it (their receive buffers tiny), so the server
 * cannot finish writing to any of them; a scraper connecting after them must still get the
 * whole body well before the stalled ones' write deadline (HTTP_WRITE_TIMEOUT_MS), because a
 * connection that has made no progress for a while gives its slot up to a waiting client.
 * Before, only connections that had not sent their request could: the scrape waited the full
 * 10 s. No root needed; loopback only. Exits non-zero on any failed check; the last line is
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

static void handler(const char *path, struct http_reply *r, void *arg)
{
	struct sbuf b = { 0 };

	(void)path;
	(void)arg;
	sbuf_put(&b, body, BODY);
	r->status = 200;
	r->type = "text/plain";
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
	body = malloc(BODY);
	if (!body)
		return 2;
	memset(body, 'x', BODY);
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
	http_stop(s);
	pthread_join(t, NULL);
	http_close(s);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
