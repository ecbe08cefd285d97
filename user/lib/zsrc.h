/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Plain or gzip bytes from a file descriptor, decided by the first two bytes, with every way a
 * gzip stream can end told apart: whole, cut short (inside a member, or its trailer missing),
 * damaged, or followed by bytes that are not gzip. zlib's gzread ignores the last silently
 * ("trailing garbage"), so records written after a recording's gzip data were lost unsaid.
 */
#ifndef IOSTRATA_ZSRC_H
#define IOSTRATA_ZSRC_H

#include <stdbool.h>
#include <stdint.h>

struct zsrc;

enum zsrc_err {
	ZSRC_OK,
	ZSRC_CUT,	/* the input ended inside a gzip member: what it held before was returned */
	ZSRC_DAMAGED,	/* not valid deflate data, or a member's CRC-32 or length is wrong */
	ZSRC_IO,	/* read() failed: errno in err_no */
	ZSRC_NOMEM,
};

struct zsrc *zsrc_open(int fd);		/* takes fd (closed by zsrc_close); NULL: no memory */
/*
 * Up to len bytes into out: the count, 0 at the end, -1 on an error (zsrc_error). Data before a
 * cut is returned first; the read after it says ZSRC_CUT.
 */
long zsrc_read(struct zsrc *z, void *out, unsigned int len);
enum zsrc_err zsrc_error(const struct zsrc *z, int *err_no);
/* After the end: the offset of bytes that follow the gzip data and are not gzip, or -1. */
int64_t zsrc_trailing(const struct zsrc *z);
void zsrc_close(struct zsrc *z);

#endif
