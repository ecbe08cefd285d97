/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small HTTP/1.x server for a metrics endpoint, safe to leave listening: one socket, GET and
 * HEAD only (405 otherwise), a bounded request (size and header lines: 431), a deadline to send
 * the request (408) and one to take the response, a cap on connections served at once (the
 * rest wait in the listen backlog), one request per connection (Connection: close). It runs in
 * one thread, with poll(); the handler runs there too.
 */
#ifndef IOSTRATA_HTTP_H
#define IOSTRATA_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sbuf.h"

#define HTTP_MAX_CONNS		32
#define HTTP_MAX_REQUEST	8192	/* request line and headers */
#define HTTP_MAX_HEADERS	64
#define HTTP_READ_TIMEOUT_MS	5000	/* from accept to the end of the headers */
#define HTTP_WRITE_TIMEOUT_MS	10000	/* to take the whole response */

/* A response body shared by the connections sending it; freed with its last reference. */
struct http_blob {
	char *data;
	size_t len;
	int refs;
};

/* The blob takes b's memory (b is left empty); NULL when out of memory. */
struct http_blob *http_blob_new(struct sbuf *b);
struct http_blob *http_blob_get(struct http_blob *b);
void http_blob_put(struct http_blob *b);

struct http_reply {
	bool gzip_ok;			/* in: the request's Accept-Encoding takes gzip */
	int status;			/* 200, 404, ... */
	const char *type;		/* Content-Type */
	const char *encoding;		/* Content-Encoding ("gzip"), NULL: none */
	bool vary;			/* the body depends on Accept-Encoding (said in Vary) */
	struct http_blob *body[2];	/* sent in turn; the server takes these references */
};

/* Does an Accept-Encoding value take gzip (named, or "*", with a q above 0)? */
bool http_accepts_gzip(const char *value, size_t len);

/*
 * A GET or HEAD of path (the query string cut off; an absolute-form target, as a proxy sends,
 * reduced to its path): fill r. Runs in the server's thread.
 */
typedef void (*http_handler)(const char *path, struct http_reply *r, void *arg);

/* What the server did, for its own metrics: read in the handler's thread. */
struct http_stats {
	uint64_t status[6];		/* responses by class: [2] 2xx, [4] 4xx, [5] 5xx */
	uint64_t timeouts;		/* connections closed at a deadline */
	uint64_t accepted;
	uint64_t accept_paused;		/* accepts failed for want of fds or memory, each a pause */
};

struct http_server;

/* Is addr an ADDR:PORT http_listen() takes (a numeric IPv4 address, or IPv6 in brackets)?
 * -1 with one line said. */
int http_addr_check(const char *addr);
/* ADDR:PORT, bound and listening; -1 with one line said. */
int http_listen(const char *addr, struct http_server **out);
/* Serve until http_stop(); 0, or -1 on an error said. */
int http_run(struct http_server *s, http_handler h, void *arg);
/* From any thread or a signal handler. */
void http_stop(struct http_server *s);
const struct http_stats *http_stats(const struct http_server *s);
void http_close(struct http_server *s);

#endif
