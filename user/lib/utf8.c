// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* How many columns a name takes on a terminal, so that tables of names line up. */
#include "utf8.h"

struct utf8_range {
	uint32_t lo, hi;
};

#include "utf8_width.h"

static int in_table(const struct utf8_range *t, size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp > t[mid].hi)
			lo = mid + 1;
		else if (cp < t[mid].lo)
			hi = mid;
		else
			return 1;
	}
	return 0;
}

int utf8_cp_width(uint32_t cp)
{
	if (cp < 0x300)		/* Latin: the common case, and nothing in either table */
		return 1;
	if (in_table(utf8_zero, sizeof(utf8_zero) / sizeof(utf8_zero[0]), cp))
		return 0;
	return in_table(utf8_wide, sizeof(utf8_wide) / sizeof(utf8_wide[0]), cp) ? 2 : 1;
}

int utf8_shown(const unsigned char *p, int *n, uint32_t *prev)
{
	uint32_t before = *prev, cp;

	*prev = 0;
	if (utf8_term_ok(p, n)) {
		*prev = utf8_cp(p, *n);
		return 1;
	}
	if (*n == 1 || !utf8_vs(cp = utf8_cp(p, *n)))
		return 0;
	if (before >= 0x80 ? utf8_vs(before) || !utf8_cp_width(before) :
	    !(cp == 0xfe0f && before && strchr("0123456789#*", (int)before) &&
	      p[3] == 0xe2 && p[4] == 0x83 && p[5] == 0xa3))	/* a keycap: U+20E3 next */
		return 0;
	*prev = cp;
	return 1;
}

int utf8_cols(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t prev = 0, before;
	int cols = 0, n;

	for (; *p; p += n) {
		before = prev;
		if (!utf8_shown(p, &n, &prev))
			cols++;
		else if (utf8_vs(prev))
			cols += prev == 0xfe0f && utf8_cp_width(before) == 1;
		else
			cols += utf8_cp_width(prev);
	}
	return cols;
}

int utf8_field(const char *s, int cols)
{
	int w = cols + (int)strlen(s) - utf8_cols(s);

	return w > 0 ? w : 0;
}
