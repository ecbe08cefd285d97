// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The metrics endpoint's HTTP server (http.h): one thread, poll(), non-blocking sockets. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "http.h"
#include "log.h"

#define DRAIN_MS 1000	/* after the response: the client's unread request, then close */
/* Every slot taken and a client waiting: a connection that has made no progress in this long
 * (not sent its request, or, its response sent, not closed) gives its slot up, so that stalled
 * connections cannot keep a scraper out for their whole deadline: 160 idle ones once held a
 * scrape off for 15 s. */
#define EVICT_MS 250
/* ... and one amid its response that has taken none of it in this long, when no connection of
 * the kinds above can give its slot up: 40 that asked for a 16 MB body and never read it once
 * held a scrape off for 10 s. Longer, and last: a scraper pausing 250 ms (a GC, a long round
 * trip) was cut off mid-body once idle connections, always newer, kept every slot taken. */
#define EVICT_WRITE_MS 2000

enum cstate { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct conn {
	int fd;
	enum cstate st;
	uint64_t deadline;		/* CLOCK_MONOTONIC, ms */
	uint64_t progress;		/* accepted, or its response last moved (ms) */
	int empties;			/* empty lines ignored before the request line */
	/* the handler's reply's, for its head; before req, so that an accept clears them (a
	 * slot's last connection's gzip once labelled the next one's error reply) */
	const char *encoding;
	bool vary;
	char req[HTTP_MAX_REQUEST + 1];
	size_t rlen;
	char head[512];			/* status line and headers (and an error's text) */
	size_t hlen, off;		/* off: bytes of head + bodies sent */
	struct http_blob *body[2];
};

/* After an accept that failed for want of resources (out of fds, memory): wait this long. */
#define ACCEPT_PAUSE_MS	100

struct http_server {
	int lfd, wake[2];
	int nconns;
	uint64_t accept_after;	/* ms: the listening socket is not polled before */
	struct http_stats st;
	struct conn c[HTTP_MAX_CONNS];
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

struct http_blob *http_blob_new(struct sbuf *b)
{
	struct http_blob *h;

	if (b->oom || !(h = malloc(sizeof(*h))))
		return NULL;
	h->data = b->p;
	h->len = b->len;
	h->refs = 1;
	memset(b, 0, sizeof(*b));
	return h;
}

struct http_blob *http_blob_get(struct http_blob *b)
{
	if (b)
		b->refs++;
	return b;
}

void http_blob_put(struct http_blob *b)
{
	if (!b || --b->refs)
		return;
	free(b->data);
	free(b);
}

static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	char host[64], *end;
	const char *colon;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (addr[0] == '[') {
		colon = strstr(addr, "]:");
		if (!colon || (size_t)(colon - addr - 1) >= sizeof(host))
			return -1;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 1), addr + 1);
		colon++;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -1;
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= sizeof(host))
			return -1;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -1;
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || !isdigit((unsigned char)colon[1]) || *end || port < 1 || port > 65535)
		return -1;
	if (ss->ss_family == AF_INET6)
		s6->sin6_port = htons((uint16_t)port);
	else
		s4->sin_port = htons((uint16_t)port);
	return 0;
}

int http_addr_check(const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (!parse_addr(addr, &ss, &len))
		return 0;
	errorf("bad --listen '%s': expected ADDR:PORT, ADDR a numeric IPv4 address or an IPv6 "
	       "one in brackets ([::1]:9750)", addr);
	return -1;
}

int http_listen(const char *addr, struct http_server **out)
{
	struct http_server *s;
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, i;

	*out = NULL;
	if (http_addr_check(addr) || parse_addr(addr, &ss, &len))
		return -1;
	s = calloc(1, sizeof(*s));
	if (!s) {
		errorf("out of memory");
		return -1;
	}
	s->wake[0] = s->wake[1] = -1;
	for (i = 0; i < HTTP_MAX_CONNS; i++)
		s->c[i].fd = -1;
	s->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(s->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(s->lfd, (struct sockaddr *)&ss, len) || listen(s->lfd, 128)) {
		errorf("cannot listen on %s: %s", addr, strerror(errno));
		http_close(s);
		return -1;
	}
	if (pipe2(s->wake, O_NONBLOCK | O_CLOEXEC)) {
		errorf("pipe: %s", strerror(errno));
		http_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

void http_stop(struct http_server *s)
{
	ssize_t r = write(s->wake[1], "x", 1);

	(void)r;	/* full: a stop is already pending */
}

const struct http_stats *http_stats(const struct http_server *s)
{
	return &s->st;
}

static void conn_close(struct http_server *s, struct conn *c)
{
	close(c->fd);
	http_blob_put(c->body[0]);
	http_blob_put(c->body[1]);
	c->body[0] = c->body[1] = NULL;
	c->fd = -1;
	c->st = C_FREE;
	s->nconns--;
}

void http_close(struct http_server *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < HTTP_MAX_CONNS; i++)
		if (s->c[i].st != C_FREE)
			conn_close(s, &s->c[i]);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	free(s);
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

static size_t total_len(const struct conn *c)
{
	return c->hlen + (c->body[0] ? c->body[0]->len : 0) + (c->body[1] ? c->body[1]->len : 0);
}

/* Send what the socket takes now; the response whole: half-close and drain. */
static void on_write(struct http_server *s, struct conn *c, uint64_t now)
{
	struct iovec iov[3];
	struct msghdr m = { .msg_iov = iov };
	const char *part[3] = { c->head, NULL, NULL };
	size_t len[3] = { c->hlen, 0, 0 }, skip = c->off, total = total_len(c);
	ssize_t n;
	int i;

	for (i = 0; i < 2; i++) {
		if (c->body[i]) {
			part[i + 1] = c->body[i]->data;
			len[i + 1] = c->body[i]->len;
		}
	}
	for (i = 0; i < 3; i++) {
		if (skip >= len[i]) {
			skip -= len[i];
			continue;
		}
		iov[m.msg_iovlen].iov_base = (char *)part[i] + skip;
		iov[m.msg_iovlen++].iov_len = len[i] - skip;
		skip = 0;
	}
	if (m.msg_iovlen) {
		n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				conn_close(s, c);
			return;
		}
		c->off += (size_t)n;
		if (n > 0)
			c->progress = now;
	}
	if (c->off < total)
		return;
	shutdown(c->fd, SHUT_WR);
	c->st = C_DRAIN;
	c->deadline = now + DRAIN_MS;
	c->progress = now;
}

/* The response head; an error's short text goes in it too (not after a HEAD). */
static void reply(struct http_server *s, struct conn *c, int status, const char *type,
		  bool head_only, uint64_t now)
{
	char text[64] = "";
	size_t body = 0;
	int i;

	if (status != 200 && !c->body[0]) {
		snprintf(text, sizeof(text), "%d %s\n", status, reason(status));
		type = "text/plain; charset=utf-8";
	}
	for (i = 0; i < 2; i++)
		body += c->body[i] ? c->body[i]->len : 0;
	body += strlen(text);
	c->hlen = (size_t)snprintf(c->head, sizeof(c->head),
		"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%s%s"
		"Connection: close\r\nCache-Control: no-store\r\n"
		"X-Content-Type-Options: nosniff\r\n%s\r\n%s", status, reason(status), type, body,
		c->encoding ? "Content-Encoding: " : "", c->encoding ? c->encoding : "",
		c->encoding ? "\r\n" : "", c->vary ? "Vary: Accept-Encoding\r\n" : "",
		status == 405 ? "Allow: GET, HEAD\r\n" : "", head_only ? "" : text);
	if (c->hlen >= sizeof(c->head)) {	/* a type too long for the head: not sent cut */
		http_blob_put(c->body[0]);
		http_blob_put(c->body[1]);
		c->body[0] = c->body[1] = NULL;
		c->encoding = NULL;
		status = 500;
		c->hlen = (size_t)snprintf(c->head, sizeof(c->head), "HTTP/1.1 500 %s\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n", reason(500));
	}
	if (head_only) {
		for (i = 0; i < 2; i++) {
			http_blob_put(c->body[i]);
			c->body[i] = NULL;
		}
	}
	s->st.status[status / 100 < 6 ? status / 100 : 5]++;
	c->st = C_WRITE;
	c->off = 0;
	c->deadline = now + HTTP_WRITE_TIMEOUT_MS;
	on_write(s, c, now);
}

static bool is_token(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] <= 0x20 || p[i] >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", p[i]))
			return false;
	return n > 0;
}

/* Case-insensitive: do the n bytes at p spell `word`? */
static bool same_word(const char *p, size_t n, const char *word)
{
	return n == strlen(word) && !strncasecmp(p, word, n);
}

/* An RFC 3986 unreserved or sub-delims character. */
static bool host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("-._~!$&'()*+,;=", ch));
}

static bool hex_digit(char ch)
{
	return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

/*
 * A Host value (RFC 9112, 3.2; RFC 3986, 3.2.2-3), spaces and tabs around it (OWS) aside:
 * empty, or uri-host [":" port]: an IP literal in brackets, or a reg-name (IPv4 addresses are
 * one) of unreserved, sub-delims and %HH; the port digits.
 */
static bool host_valid(const char *v, size_t n)
{
	const char *end;

	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	end = v + n;
	if (v < end && *v == '[') {
		for (v++; v < end && *v != ']'; v++)
			if (!host_char(*v) && *v != ':')
				return false;
		if (v++ == end)
			return false;	/* no ']' */
	} else {
		for (; v < end && *v != ':'; v++)
			if (*v == '%' ? end - v < 3 || !hex_digit(v[1]) || !hex_digit(v[2]) :
			    !host_char(*v))
				return false;
			else if (*v == '%')
				v += 2;
	}
	if (v < end && *v++ != ':')
		return false;
	for (; v < end; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

/* What the Accept-Encoding lines said so far: gzip named (and taken), "*" named (and taken). */
struct accept_enc {
	bool named, gzip, star, any;
};

/* One Accept-Encoding line's value: several lines are one list, joined (RFC 9110, 5.3). */
static void accept_feed(struct accept_enc *a, const char *v, size_t len)
{
	const char *stop = v + len;

	/* codings, comma separated, each with optional parameters: gzip;q=0.5, *;q=0 (RFC 9110) */
	while (v < stop) {
		const char *end = memchr(v, ',', (size_t)(stop - v)), *p = v, *name, *q;
		size_t n;
		bool ok = true;

		if (!end)
			end = stop;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		name = p;
		while (p < end && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		n = (size_t)(p - name);
		/* q=0 (or 0.000) refuses it; any other q takes it */
		for (q = p; q < end && (q = memchr(q, ';', (size_t)(end - q))); q++) {
			const char *w = q + 1;

			while (w < end && (*w == ' ' || *w == '\t'))
				w++;
			if (end - w >= 2 && (w[0] == 'q' || w[0] == 'Q') && w[1] == '=') {
				w += 2;
				ok = false;
				while (w < end && (*w == '0' || *w == '.'))
					w++;
				if (w < end && *w >= '1' && *w <= '9')
					ok = true;
				break;
			}
		}
		if (same_word(name, n, "gzip") || same_word(name, n, "x-gzip")) {
			a->named = true;
			a->gzip = ok;
		} else if (same_word(name, n, "*")) {
			a->star = true;
			a->any = ok;
		}
		if (end == stop)
			break;
		v = end + 1;
	}
}

/* A coding named beats "*"; neither named: no gzip. */
static bool accept_gzip(const struct accept_enc *a)
{
	return a->named ? a->gzip : a->star && a->any;
}

bool http_accepts_gzip(const char *v, size_t len)
{
	struct accept_enc a = { 0 };

	accept_feed(&a, v, len);
	return accept_gzip(&a);
}

/*
 * An absolute-form target (RFC 9112, 3.2.2: "http://host:port/path?query", which a server must
 * take): its path, or "/" for none. Anything else: NULL.
 */
static char *absolute_path(char *t, char *end)
{
	char *p;

	if (end - t < 7 || strncasecmp(t, "http://", 7))
		return NULL;
	for (p = t + 7; p < end && *p != '/' && *p != '?'; p++)
		;
	if (p == t + 7)
		return NULL;	/* no authority */
	if (p == end || *p == '?') {	/* "http://host" or "http://host?q": the path is "/" */
		*--p = '/';
		return p;
	}
	return p;
}

/* The request is whole: every line of it ends in '\n', the last one's before `end`. */
static void on_request(struct http_server *s, struct conn *c, char *end, http_handler h,
		       void *arg, uint64_t now)
{
	char *line = c->req, *eol, *sp1, *sp2, *q, *path;
	struct http_reply r = { 0 };
	struct accept_enc ae = { 0 };
	bool head_only, http11;
	int headers = 0, hosts = 0;
	size_t n;

	*end = '\0';
	/* a CR is only ever a line's end, before its LF (RFC 9112, 2.2: a bare CR is invalid) */
	for (q = c->req; (q = strchr(q, '\r')); q++)
		if (q[1] != '\n')
			return reply(s, c, 400, NULL, false, now);
	eol = strchr(line, '\n');
	*eol = '\0';
	if (eol > line && eol[-1] == '\r')
		eol[-1] = '\0';	/* the request line alone, as a string */
	/* METHOD SP TARGET SP HTTP/1.x */
	sp1 = strchr(line, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') || !is_token(line, (size_t)(sp1 - line)) ||
	    (strcmp(sp2 + 1, "HTTP/1.1") && strcmp(sp2 + 1, "HTTP/1.0")))
		return reply(s, c, 400, NULL, false, now);
	for (q = sp1 + 1; q < sp2; q++)
		if (*q <= 0x20 || *q >= 0x7f)
			return reply(s, c, 400, NULL, false, now);
	path = sp1[1] == '/' ? sp1 + 1 : absolute_path(sp1 + 1, sp2);
	if (!path)
		return reply(s, c, 400, NULL, false, now);
	/* header lines: NAME ":" VALUE, no continuation lines */
	for (line = eol + 1; *line; line = eol + 1) {
		eol = strchr(line, '\n');
		q = strchr(line, ':');
		if (!q || q > eol || !is_token(line, (size_t)(q - line)))
			return reply(s, c, 400, NULL, false, now);
		if (++headers > HTTP_MAX_HEADERS)
			return reply(s, c, 431, NULL, false, now);
		if (same_word(line, (size_t)(q - line), "Accept-Encoding"))	/* without CR LF */
			accept_feed(&ae, q + 1, (size_t)(eol - q - 1 - (eol[-1] == '\r')));
		if (same_word(line, (size_t)(q - line), "Host") && (hosts++ ||
		    !host_valid(q + 1, (size_t)(eol - q - 1 - (eol[-1] == '\r')))))
			return reply(s, c, 400, NULL, false, now);
	}
	/* RFC 9112, 3.2: a 400 for an HTTP/1.1 request without a Host line, and for any request
	 * with more than one, or with one whose value is not a host (the absolute form's authority
	 * is used, the Host line still due) */
	http11 = !strcmp(sp2 + 1, "HTTP/1.1");
	if (http11 && !hosts)
		return reply(s, c, 400, NULL, false, now);
	r.gzip_ok = accept_gzip(&ae);
	n = (size_t)(sp1 - c->req);
	head_only = n == 4 && !memcmp(c->req, "HEAD", 4);
	if (!head_only && !(n == 3 && !memcmp(c->req, "GET", 3)))
		return reply(s, c, 405, NULL, false, now);
	*sp2 = '\0';
	if ((q = strchr(path, '?')))
		*q = '\0';
	r.status = 404;
	h(path, &r, arg);
	c->body[0] = r.body[0];
	c->body[1] = r.body[1];
	c->encoding = r.body[0] ? r.encoding : NULL;
	c->vary = r.vary;
	reply(s, c, r.status, r.type, head_only, now);
}

static void on_read(struct http_server *s, struct conn *c, http_handler h, void *arg,
		    uint64_t now)
{
	ssize_t n = recv(c->fd, c->req + c->rlen, HTTP_MAX_REQUEST - c->rlen, MSG_DONTWAIT);
	char *end, *lf;
	size_t i, lines = 0;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(s, c);	/* gone before its request was whole */
		return;
	}
	if (n < 0)
		return;
	c->rlen += (size_t)n;
	c->req[c->rlen] = '\0';
	if (memchr(c->req, '\0', c->rlen)) {
		reply(s, c, 400, NULL, false, now);	/* NUL bytes */
		return;
	}
	/* empty lines before the request line are ignored (RFC 9112, 2.2), 4 in all reads */
	while (c->empties < 4 && (c->req[0] == '\n' || (c->req[0] == '\r' && c->req[1] == '\n'))) {
		n = c->req[0] == '\n' ? 1 : 2;
		memmove(c->req, c->req + n, c->rlen - (size_t)n + 1);
		c->rlen -= (size_t)n;
		c->empties++;
	}
	if (c->req[0] == '\n' || (c->req[0] == '\r' && c->req[1] != '\0')) {
		reply(s, c, 400, NULL, false, now);	/* no request line */
		return;
	}
	/* the headers end at an empty line, the lines ended by CRLF or a bare LF (RFC 9112, 2.2) */
	end = strstr(c->req, "\n\r\n");
	lf = strstr(c->req, "\n\n");
	if (end && (!lf || end < lf)) {
		on_request(s, c, end + 1, h, arg, now);
		return;
	}
	if (lf) {
		on_request(s, c, lf + 1, h, arg, now);
		return;
	}
	for (i = 0; i < c->rlen; i++)
		lines += c->req[i] == '\n';
	if (c->rlen >= HTTP_MAX_REQUEST || lines > HTTP_MAX_HEADERS + 1)
		reply(s, c, 431, NULL, false, now);
}

/* Reads a draining connection takes per wakeup: a peer that sends as fast as they read holds
 * the thread no longer than this, and its drain deadline is then checked. */
#define DRAIN_READS 16

static void on_drain(struct http_server *s, struct conn *c)
{
	char buf[4096];
	ssize_t n;
	int i;

	for (i = 0; i < DRAIN_READS; i++) {
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(s, c);
		return;
	}
}

/* A deadline passed: a request not sent in time gets 408, then every state closes. */
static void on_deadline(struct http_server *s, struct conn *c)
{
	char msg[160];
	int n;

	if (c->st == C_READ) {
		n = snprintf(msg, sizeof(msg), "HTTP/1.1 408 %s\r\nContent-Length: 0\r\n"
			     "Connection: close\r\n\r\n", reason(408));
		if (send(c->fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			n = 0;
		s->st.status[4]++;
	}
	if (c->st != C_DRAIN)
		s->st.timeouts++;
	conn_close(s, c);
}

/* When c may give its slot up, every slot being taken: its last progress and its kind's wait */
static uint64_t evict_at(const struct conn *c)
{
	return c->progress + (c->st == C_WRITE ? EVICT_WRITE_MS : EVICT_MS);
}

/* With every slot taken, the connection to give its slot up, else NULL: of those not amid a
 * response (a request not sent since its accept, a close not made) that has been EVICT_MS
 * without progress, the one longest so; only when there is none, of those amid a response, the
 * one longest without taking any, if EVICT_WRITE_MS. */
static struct conn *evictable(struct http_server *s, uint64_t now)
{
	struct conn *o = NULL, *w = NULL;
	int i;

	if (s->nconns < HTTP_MAX_CONNS)
		return NULL;
	for (i = 0; i < HTTP_MAX_CONNS; i++) {
		struct conn *c = &s->c[i];
		struct conn **best = c->st == C_WRITE ? &w : &o;

		if (c->st != C_FREE && evict_at(c) <= now &&
		    (!*best || c->progress < (*best)->progress))
			*best = c;
	}
	return o ? o : w;
}

static void accept_all(struct http_server *s, uint64_t now)
{
	struct conn *c, *old;
	int i, fd;

	for (;;) {
		for (c = NULL, i = 0; i < HTTP_MAX_CONNS && !c; i++)
			if (s->c[i].st == C_FREE)
				c = &s->c[i];
		old = c ? NULL : evictable(s, now);
		if (!c && !old)
			return;
		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/*
			 * None waiting; or out of fds or memory: the client stays queued and the
			 * socket readable, so it is left alone a while (polled, it would spin).
			 */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				s->accept_after = now + ACCEPT_PAUSE_MS;
				s->st.accept_paused++;
			}
			return;
		}
		if (old) {		/* 408 and closed, as at its deadline: its slot is c's */
			on_deadline(s, old);
			c = old;
		}
		memset(c, 0, offsetof(struct conn, req));
		c->fd = fd;
		c->rlen = 0;
		c->st = C_READ;
		c->deadline = now + HTTP_READ_TIMEOUT_MS;
		c->progress = now;
		s->nconns++;
		s->st.accepted++;
	}
}

int http_run(struct http_server *s, http_handler h, void *arg)
{
	struct pollfd pf[HTTP_MAX_CONNS + 2];
	int map[HTTP_MAX_CONNS + 2];

	for (;;) {
		uint64_t now = now_ms(), next = UINT64_MAX;
		int n = 0, i, r, timeout;

		pf[n++] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = now >= s->accept_after &&
						 (s->nconns < HTTP_MAX_CONNS || evictable(s, now)) ?
						 s->lfd : -1, .events = POLLIN };
		if (now < s->accept_after)
			next = s->accept_after;
		for (i = 0; i < HTTP_MAX_CONNS; i++) {
			struct conn *c = &s->c[i];

			if (c->st == C_FREE)
				continue;
			map[n] = i;
			pf[n++] = (struct pollfd){ .fd = c->fd,
				.events = c->st == C_WRITE ? POLLOUT : POLLIN };
			if (c->deadline < next)
				next = c->deadline;
			/* full: wake when this one could give its slot up to a waiting client */
			if (s->nconns == HTTP_MAX_CONNS && evict_at(c) > now && evict_at(c) < next)
				next = evict_at(c);
		}
		timeout = next == UINT64_MAX ? 1000 : next <= now ? 0 : (int)(next - now);
		if (timeout > 1000)
			timeout = 1000;
		r = poll(pf, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR) {
			errorf("poll: %s", strerror(errno));
			return -1;
		}
		if (r > 0 && pf[0].revents)
			return 0;
		now = now_ms();
		for (i = 2; r > 0 && i < n; i++) {
			struct conn *c = &s->c[map[i]];

			if (!pf[i].revents || c->st == C_FREE)
				continue;
			if (c->st == C_READ)
				on_read(s, c, h, arg, now);
			else if (c->st == C_WRITE)
				on_write(s, c, now);
			else
				on_drain(s, c);
		}
		for (i = 0; i < HTTP_MAX_CONNS; i++)
			if (s->c[i].st != C_FREE && s->c[i].deadline <= now)
				on_deadline(s, &s->c[i]);
		if (r > 0 && pf[1].revents)
			accept_all(s, now);
	}
}
