/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names iostrata prints come from the traced host: a process names itself (prctl), a cgroup
 * directory may be named with any byte but '/'. What they hold must not break a JSON line or
 * reach a terminal as a control sequence.
 */
#ifndef IOSTRATA_UTF8_H
#define IOSTRATA_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The length (1 to 4) of the well-formed UTF-8 sequence at p, a NUL-terminated string, or 0:
 * a stray continuation byte, a sequence cut short, overlong, a surrogate or beyond U+10FFFF
 * (RFC 3629). Never reads past the NUL: each byte is checked before the next is read.
 */
static inline int utf8_len(const unsigned char *p)
{
	unsigned int c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((p[1] & 0xc0) != 0x80 || (c == 0xe0 && p[1] < 0xa0) ||
		    (c == 0xed && p[1] >= 0xa0) || (p[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((p[1] & 0xc0) != 0x80 || (c == 0xf0 && p[1] < 0x90) ||
		    (c == 0xf4 && p[1] >= 0x90) || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

/*
 * Is the well-formed sequence at p, n bytes, a character XML 1.0 refuses or discourages: a C1
 * control (U+0080..U+009F) or U+FFFE / U+FFFF?
 */
static inline int utf8_xml_bad(const unsigned char *p, int n)
{
	return (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
	       (n == 3 && p[0] == 0xef && p[1] == 0xbf && p[2] >= 0xbe);
}

/* The code point of the well-formed sequence at p, n bytes (utf8_len) */
static inline uint32_t utf8_cp(const unsigned char *p, int n)
{
	switch (n) {
	case 2: return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	case 3: return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	case 4: return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		       (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
	default: return p[0];
	}
}

/*
 * Is cp a character that shows nothing, or changes how the text around it reads, and so lets a
 * name pass for another? Unicode's Default_Ignorable_Code_Point set, what a renderer shows
 * nothing for: the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069) and marks (U+200E, U+200F, U+061C) -- a process named "\u202egpj.exe" reads
 * as "exe.jpg" --, the zero-width space and joiners, the word joiner and invisible operators
 * (U+200B..U+200D, U+2060..U+206F), the soft hyphen, the combining grapheme joiner, the
 * variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF; the Mongolian U+180B..U+180F), the
 * Khmer inherent vowels U+17B4/U+17B5, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0,
 * blanks), U+FEFF, the shorthand and musical format controls, the tag characters and the
 * code points reserved as ignorable (U+FFF0..U+FFF8, U+E0000..U+E0FFF); besides, the
 * interlinear annotation marks (U+FFF9..U+FFFB), which hide the text they enclose, and the
 * line and paragraph separators (U+2028, U+2029), which end a line or a bidirectional
 * paragraph in the middle of a label.
 */
static inline int utf8_hidden(uint32_t cp)
{
	if (cp < 0x2000)
		return cp == 0x00ad || cp == 0x034f || cp == 0x061c || cp == 0x115f ||
		       cp == 0x1160 || cp == 0x17b4 || cp == 0x17b5 || (cp >= 0x180b && cp <= 0x180f);
	return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3164 || (cp >= 0xfe00 && cp <= 0xfe0f) ||
	       cp == 0xfeff || cp == 0xffa0 || (cp >= 0xfff0 && cp <= 0xfffb) ||
	       (cp >= 0x1bca0 && cp <= 0x1bca3) || (cp >= 0x1d173 && cp <= 0x1d17a) ||
	       (cp >= 0xe0000 && cp <= 0xe0fff);
}

/*
 * Can the character at p (a NUL-terminated string) reach a terminal as it is? *n: its bytes
 * (1 for a byte of no well-formed sequence). Not: control characters (C0, DEL, and C1 whether
 * a raw byte or well-formed UTF-8: U+0080..U+009F, which a terminal takes as controls, U+009B
 * as CSI), the characters utf8_hidden names (bidirectional controls, invisible ones) and bytes
 * of no well-formed sequence, each shown as one '?'.
 */
static inline int utf8_term_ok(const unsigned char *p, int *n)
{
	*n = utf8_len(p);
	if (!*n) {
		*n = 1;
		return 0;
	}
	if (*n == 1)
		return *p >= 0x20 && *p != 0x7f;
	return !(*n == 2 && p[0] == 0xc2 && p[1] < 0xa0) && !utf8_hidden(utf8_cp(p, *n));
}

/* A variation selector: U+FE00..U+FE0F, U+E0100..U+E01EF, the Mongolian U+180B..U+180D, U+180F */
static inline int utf8_vs(uint32_t cp)
{
	return (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef) ||
	       (cp >= 0x180b && cp <= 0x180d) || cp == 0x180f;
}

/*
 * utf8_term_ok with what came before: *prev is the code point shown just before p (0 at the
 * start or after a '?'), updated. A variation selector only picks how the character before it
 * is drawn ("\u2764\ufe0f", a red heart, is U+2764 as an emoji): it is shown where it can do
 * that, after a character shown that is not ASCII and takes columns (not a mark, not another
 * selector), or as the U+FE0F of a keycap ("1\ufe0f\u20e3"). Anywhere else it draws nothing
 * and is '?', as utf8_hidden's others are: "fio" and "fio\ufe00" must not look alike.
 * (After a non-ASCII character that has no such sequence it draws nothing too; so may
 * that character's homoglyphs, which no rule here tells apart.)
 */
int utf8_shown(const unsigned char *p, int *n, uint32_t *prev);

/* s as a terminal may show it (utf8_shown), in buf. Returns buf. */
static inline const char *utf8_printable(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t prev = 0;
	size_t o = 0;
	int n;

	if (!len)
		return buf;
	while (*p && o + 1 < len) {
		if (!utf8_shown(p, &n, &prev)) {
			buf[o++] = '?';
		} else if (o + (size_t)n < len) {
			memcpy(buf + o, p, (size_t)n);
			o += (size_t)n;
		} else {
			break;		/* no room for the whole character */
		}
		p += n;
	}
	buf[o] = '\0';
	return buf;
}

/*
 * Display columns (user/lib/utf8.c), with no locale (a static binary): 0 for combining marks
 * and format characters, 2 for East Asian Wide and Fullwidth ones (emoji presentation among
 * them), 1 for the rest; from the table scripts/gen-width.py makes.
 */
int utf8_cp_width(uint32_t cp);
/*
 * The columns s takes as a terminal shows it: each character utf8_shown refuses is one '?'. A
 * U+FE0F shown after a character of 1 column adds one: an emoji presentation sequence takes
 * two, as East Asian Wide characters do (UAX #11, 5; UTS #51); any other selector none.
 */
int utf8_cols(const char *s);

/*
 * The character at p: its length in bytes (a byte of no well-formed sequence: 1, shown as one
 * '?'), and its columns in *width. For cutting text between characters, never inside one.
 */
static inline int utf8_char(const char *p, int *width)
{
	const unsigned char *c = (const unsigned char *)p;
	int len = utf8_len(c);

	*width = len ? utf8_cp_width(utf8_cp(c, len)) : 1;
	return len ? len : 1;
}
/*
 * The printf field width ("%-*s", "%*s") that pads s, as utf8_printable leaves it, to cols
 * display columns: printf counts bytes. Never below 0 (a negative width would flip the side).
 */
int utf8_field(const char *s, int cols);

#endif
