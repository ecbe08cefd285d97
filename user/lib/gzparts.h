/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One gzip member made of two parts compressed apart: a head compressed once and sent many
 * times (serve's /metrics counts, rendered once an interval), then a tail compressed at each
 * use (the live figures). The head is the gzip header and a raw deflate stream flushed to a
 * byte boundary without its final block; the tail is a raw deflate stream that ends, and the
 * trailer, whose CRC-32 is the two parts' combined. Their concatenation is one ordinary gzip
 * member (RFC 1952): deflate blocks never refer back across the flush.
 */
#ifndef IOSTRATA_GZPARTS_H
#define IOSTRATA_GZPARTS_H

#include <stddef.h>
#include <stdint.h>
#include "sbuf.h"

struct gz_head {
	uint32_t crc;		/* CRC-32 of the head's data */
	size_t len;		/* the head's uncompressed length */
};

/* The head's bytes for data[0..len) appended to out, its figures in *h. 0, or -1 (memory). */
int gz_head(const char *data, size_t len, struct sbuf *out, struct gz_head *h);
/* The tail's bytes for data[0..len) after head h appended to out. 0, or -1 (memory). */
int gz_tail(const struct gz_head *h, const char *data, size_t len, struct sbuf *out);

#endif
