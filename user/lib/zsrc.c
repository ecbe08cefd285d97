// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "zsrc.h"

#define ZIN (256u * 1024)

struct zsrc {
	int fd;
	z_stream s;
	unsigned char *in;
	uint64_t raw;		/* bytes read from fd; raw - s.avail_in is the offset of s.next_in */
	enum { ZS_NEW, ZS_PLAIN, ZS_GZIP } kind;
	bool in_eof;		/* read() said end of file */
	bool member_end;	/* a member ended; another must begin, or the input end */
	enum zsrc_err err;
	int err_no;
	int64_t trailing;
};

struct zsrc *zsrc_open(int fd)
{
	struct zsrc *z = calloc(1, sizeof(*z));

	if (!z || !(z->in = malloc(ZIN))) {
		free(z);
		return NULL;
	}
	z->fd = fd;
	z->trailing = -1;
	z->s.next_in = z->in;
	return z;
}

/* At least want bytes of input unless the file ends first: 0, or -1 on a read error. */
static int need(struct zsrc *z, unsigned int want)
{
	ssize_t n;

	while (z->s.avail_in < want && !z->in_eof) {
		memmove(z->in, z->s.next_in, z->s.avail_in);
		z->s.next_in = z->in;
		n = read(z->fd, z->in + z->s.avail_in, ZIN - z->s.avail_in);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			z->err = ZSRC_IO;
			z->err_no = errno;
			return -1;
		}
		if (!n)
			z->in_eof = true;
		z->s.avail_in += (unsigned int)n;
		z->raw += (uint64_t)n;
	}
	return 0;
}

static bool gzip_magic(const struct zsrc *z)
{
	return z->s.avail_in >= 2 && z->s.next_in[0] == 0x1f && z->s.next_in[1] == 0x8b;
}

static long read_plain(struct zsrc *z, unsigned char *out, unsigned int len)
{
	unsigned int n = 0, take;

	while (n < len) {
		if (need(z, 1))
			return -1;
		if (!z->s.avail_in)
			break;
		take = z->s.avail_in < len - n ? z->s.avail_in : len - n;
		memcpy(out + n, z->s.next_in, take);
		z->s.next_in += take;
		z->s.avail_in -= take;
		n += take;
	}
	return n;
}

static long read_gzip(struct zsrc *z, unsigned char *out, unsigned int len)
{
	int ret;

	z->s.next_out = out;
	z->s.avail_out = len;
	while (z->s.avail_out) {
		if (z->member_end) {
			if (need(z, 2))
				return -1;
			if (!z->s.avail_in)
				break;				/* the whole stream, and nothing after */
			if (!gzip_magic(z)) {
				z->trailing = (int64_t)(z->raw - z->s.avail_in);
				z->s.avail_in = 0;
				z->in_eof = true;
				break;
			}
			inflateReset(&z->s);			/* a member concatenated: go on */
			z->member_end = false;
		}
		if (need(z, 1))
			return -1;
		if (!z->s.avail_in) {				/* the input ended inside a member */
			if (z->s.avail_out == len) {
				z->err = ZSRC_CUT;
				return -1;
			}
			break;
		}
		ret = inflate(&z->s, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			z->member_end = true;
		else if (ret == Z_MEM_ERROR) {
			z->err = ZSRC_NOMEM;
			return -1;
		} else if (ret != Z_OK && ret != Z_BUF_ERROR) {
			z->err = ZSRC_DAMAGED;
			return -1;
		}
	}
	return (long)(len - z->s.avail_out);
}

long zsrc_read(struct zsrc *z, void *out, unsigned int len)
{
	if (z->err)
		return -1;
	if (z->kind == ZS_NEW) {
		if (need(z, 2))
			return -1;
		bool gz = gzip_magic(z);

		if (gz && inflateInit2(&z->s, 16 + MAX_WBITS) != Z_OK) {
			z->err = ZSRC_NOMEM;
			return -1;
		}
		z->kind = gz ? ZS_GZIP : ZS_PLAIN;	/* GZIP: inflateInit2 done */
	}
	return z->kind == ZS_GZIP ? read_gzip(z, out, len) : read_plain(z, out, len);
}

enum zsrc_err zsrc_error(const struct zsrc *z, int *err_no)
{
	if (err_no)
		*err_no = z->err_no;
	return z->err;
}

int64_t zsrc_trailing(const struct zsrc *z)
{
	return z->trailing;
}

void zsrc_close(struct zsrc *z)
{
	if (!z)
		return;
	if (z->kind == ZS_GZIP)
		inflateEnd(&z->s);
	close(z->fd);
	free(z->in);
	free(z);
}
