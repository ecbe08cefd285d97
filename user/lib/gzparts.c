// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* gzip members in two parts (gzparts.h). */
#include <string.h>
#include <zlib.h>
#include "gzparts.h"

#define GZ_LEVEL 6	/* zlib's default: /metrics text shrinks ~15-20x */

/* data deflated raw into out, ended by `flush` (Z_SYNC_FLUSH: byte-aligned, more may follow;
 * Z_FINISH: the last block). 0, or -1. */
static int deflate_raw(const char *data, size_t len, int flush, struct sbuf *out)
{
	unsigned char buf[16384];
	z_stream z;
	int r, f;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	z.next_in = (unsigned char *)data;
	do {
		if (!z.avail_in && len) {	/* avail_in is an unsigned int: fed in slices */
			z.avail_in = len > (1u << 30) ? 1u << 30 : (unsigned)len;
			len -= z.avail_in;
		}
		f = len ? Z_NO_FLUSH : flush;	/* flushed once the last slice is in */
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		r = deflate(&z, f);
		if (r == Z_STREAM_ERROR) {
			deflateEnd(&z);
			return -1;
		}
		sbuf_put(out, (const char *)buf, sizeof(buf) - z.avail_out);
	} while (f == Z_NO_FLUSH || z.avail_out == 0 || (f == Z_FINISH && r != Z_STREAM_END));
	deflateEnd(&z);
	return out->oom ? -1 : 0;
}

int gz_head(const char *data, size_t len, struct sbuf *out, struct gz_head *h)
{
	/* magic, deflate, no flags, no time, no extra flags, OS unknown */
	static const char hdr[10] = { 0x1f, (char)0x8b, 8, 0, 0, 0, 0, 0, 0, (char)0xff };

	sbuf_put(out, hdr, sizeof(hdr));
	h->crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), (const unsigned char *)data, len);
	h->len = len;
	return deflate_raw(data, len, Z_SYNC_FLUSH, out);
}

int gz_tail(const struct gz_head *h, const char *data, size_t len, struct sbuf *out)
{
	uint32_t crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), (const unsigned char *)data, len);
	uint32_t isize = (uint32_t)(h->len + len);	/* the length mod 2^32 */
	unsigned char t[8];
	int i;

	if (deflate_raw(data, len, Z_FINISH, out))
		return -1;
	crc = (uint32_t)crc32_combine(h->crc, crc, (z_off_t)len);
	for (i = 0; i < 4; i++) {
		t[i] = (unsigned char)(crc >> (8 * i));
		t[4 + i] = (unsigned char)(isize >> (8 * i));
	}
	sbuf_put(out, (const char *)t, sizeof(t));
	return out->oom ? -1 : 0;
}
