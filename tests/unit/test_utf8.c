// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the display width of names (user/lib/utf8.c): code points, strings as a
 * terminal shows them, and the printf field that pads them to a number of columns. No root
 * needed. With "dump", prints instead the width of every code point but the surrogates, one
 * "XXXXXX W" line each, for tests/test_unit.py to check against Python's unicodedata.
 * Exits non-zero on any failed check; the last line is "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>
#include "utf8.h"

#include "check.h"

static void cols_is(const char *s, int want)
{
	int got = utf8_cols(s);

	CHECK(got == want, "utf8_cols(\"%s\") = %d, want %d", s, got, want);
}

/* s through utf8_printable: want, in cols columns */
static void printable_is(const char *s, const char *want, int cols)
{
	char out[64];

	utf8_printable(s, out, sizeof(out));
	CHECK(!strcmp(out, want), "printable(\"%s\") = \"%s\", want \"%s\"", s, out, want);
	cols_is(s, cols);
}

/* s padded to w columns by "%-*s" then "|": the bar must land at column w */
static void pads_to(const char *s, int w, const char *want)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%-*s|", utf8_field(s, w), s);
	CHECK(!strcmp(buf, want), "pad(\"%s\", %d) = \"%s\", want \"%s\"", s, w, buf, want);
}

/* cp in UTF-8, between "a" and "b", through utf8_printable: "a?b" or the character kept */
static void shown_as(unsigned int cp, int hidden)
{
	char in[8], out[16], want[8];
	int n;

	if (cp < 0x800)
		n = snprintf(in, sizeof(in), "a%c%cb", 0xc0 | cp >> 6, 0x80 | (cp & 0x3f));
	else if (cp < 0x10000)
		n = snprintf(in, sizeof(in), "a%c%c%cb", 0xe0 | cp >> 12, 0x80 | (cp >> 6 & 0x3f),
			     0x80 | (cp & 0x3f));
	else
		n = snprintf(in, sizeof(in), "a%c%c%c%cb", 0xf0 | cp >> 18,
			     0x80 | (cp >> 12 & 0x3f), 0x80 | (cp >> 6 & 0x3f), 0x80 | (cp & 0x3f));
	snprintf(want, sizeof(want), "%s", hidden ? "a?b" : in);
	utf8_printable(in, out, sizeof(out));
	CHECK(n > 0 && !strcmp(out, want), "U+%04X shown as \"%s\", want \"%s\"", cp, out, want);
	CHECK(utf8_cols(in) == (hidden ? 3 : 2 + utf8_cp_width(cp)), "U+%04X: %d columns", cp,
	      utf8_cols(in));
}

int main(int argc, char **argv)
{
	/* bidirectional controls and invisible characters: '?'; their neighbours kept */
	static const unsigned int hidden[] = {
		0x061c, 0x180e, 0x200b, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202e,
		0x2060, 0x2064, 0x2066, 0x2069, 0x206f, 0xfeff, 0xfff9, 0xfffb, 0xe0000, 0xe0041,
		0xe007f,
		/* the rest of Default_Ignorable_Code_Point: soft hyphen, grapheme joiner, Hangul
		 * fillers, Khmer inherent vowels, variation selectors, format controls, reserved */
		0x00ad, 0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x180b, 0x180d, 0x180f, 0x3164,
		0xfe00, 0xfe0f, 0xffa0, 0xfff0, 0xfff8, 0x1bca0, 0x1bca3, 0x1d173, 0x1d17a,
		0xe0080, 0xe0100, 0xe01ef, 0xe0fff,
	}, kept[] = {
		0x061b, 0x061d, 0x180a, 0x200a, 0x2010, 0x2027, 0x202f, 0x205f, 0x2070, 0xfefe,
		0xffef, 0xfffc, 0xe1000, 0x05d0, 0x0627, 0x0301, 0x00ac, 0x00ae, 0x034e, 0x0350,
		0x115e, 0x1161, 0x17b3, 0x17b6, 0x1810, 0x3163, 0x3165, 0xfdff, 0xfe10, 0xff9f,
		0xffa1, 0x1bc9f, 0x1bca4, 0x1d172, 0x1d17b,
	};
	static const struct { unsigned int cp; int w; } cps[] = {
		{ 'a', 1 }, { 0xe9, 1 }, { 0xad, 1 },			/* é, soft hyphen */
		{ 0x0442, 1 },						/* т */
		{ 0x0301, 0 }, { 0x20dd, 0 }, { 0xfe0f, 0 },		/* Mn, Me, VS16 */
		{ 0x200b, 0 }, { 0x202e, 0 }, { 0xfeff, 0 },		/* format: Cf */
		{ 0x1160, 0 }, { 0x11ff, 0 }, { 0x1100, 2 },		/* Hangul jamo */
		{ 0x4e00, 2 }, { 0x6d4b, 2 }, { 0xac00, 2 },		/* 一 测 가 */
		{ 0x3000, 2 }, { 0xff21, 2 }, { 0xff61, 1 },		/* fullwidth, halfwidth */
		{ 0x1f600, 2 }, { 0x1f4be, 2 }, { 0x231a, 2 },		/* emoji presentation */
		{ 0x2764, 1 }, { 0x263a, 1 },				/* text presentation */
		{ 0x20000, 2 }, { 0x3134a, 2 },				/* CJK ext. B, G */
		{ 0x0378, 1 }, { 0x10ffff, 1 }, { 0xe0001, 0 },		/* unassigned; tag */
	};
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "dump")) {
		for (i = 0; i < 0x110000; i++)
			if (i < 0xd800 || i > 0xdfff)
				printf("%06zx %d\n", i, utf8_cp_width((uint32_t)i));
		return 0;
	}
	for (i = 0; i < sizeof(cps) / sizeof(cps[0]); i++)
		CHECK(utf8_cp_width(cps[i].cp) == cps[i].w, "U+%04X: width %d, want %d",
		      cps[i].cp, utf8_cp_width(cps[i].cp), cps[i].w);

	for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		shown_as(hidden[i], 1);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		shown_as(kept[i], 0);

	/* strings as shown: what utf8_term_ok refuses is one '?' */
	cols_is("", 0);
	cols_is("fio", 3);
	cols_is("тест", 4);			/* 8 bytes */
	cols_is("测试", 4);			/* 6 bytes */
	cols_is("\U0001f600x", 3);		/* 5 bytes */
	cols_is("e\u0301", 1);			/* e + combining acute: 3 bytes */
	cols_is("\u1100\u1161\u11a8", 2);	/* 각 in conjoining jamo: 9 bytes */
	cols_is("a\x1b[31m", 6);		/* ESC: '?' */
	cols_is("\xc2\x9b", 1);			/* C1 (CSI) as UTF-8: '?' */
	cols_is("\xff\xfe", 2);			/* no UTF-8: '?' each */
	cols_is("\xe6\xb5", 2);			/* 测 cut short: two stray bytes */
	cols_is("vda read pid 42 тест /a/测试", 28);
	cols_is("\u202egpj.exe", 8);		/* RLO: '?' */

	/*
	 * Variation selectors: kept where they pick how the character before is drawn (the
	 * heart was "\u2764?"), '?' where they draw nothing; U+FE0F after a character of one
	 * column makes it an emoji of two (UAX #11, 5), any other selector takes none.
	 */
	printable_is("\u2764\ufe0f", "\u2764\ufe0f", 2);		/* red heart */
	printable_is("\u2764\ufe0e", "\u2764\ufe0e", 1);		/* text presentation */
	printable_is("\u2764", "\u2764", 1);
	printable_is("\U0001f600\ufe0f", "\U0001f600\ufe0f", 2);	/* wide already */
	printable_is("\u231a\ufe0e", "\u231a\ufe0e", 2);
	printable_is("\u845b\U000e0100", "\u845b\U000e0100", 2);	/* an ideographic variant */
	printable_is("\u1820\u180b", "\u1820\u180b", 1);		/* Mongolian FVS1 */
	printable_is("I\u2764\ufe0fNY", "I\u2764\ufe0fNY", 5);
	printable_is("1\ufe0f\u20e3", "1\ufe0f\u20e3", 2);		/* a keycap */
	printable_is("#\ufe0f\u20e3x", "#\ufe0f\u20e3x", 3);
	printable_is("1\ufe0f", "1?", 2);				/* no keycap: nothing drawn */
	printable_is("fio\ufe0f", "fio?", 4);			/* after ASCII */
	printable_is("fio\ufe00", "fio?", 4);
	printable_is("\ufe0ffio", "?fio", 4);			/* at the start */
	printable_is("\u2764\ufe0f\ufe0f", "\u2764\ufe0f?", 3);	/* after a selector */
	printable_is("e\u0301\ufe00", "e\u0301?", 2);		/* after a mark */
	printable_is("\xff\ufe0f", "??", 2);			/* after a '?' */
	printable_is("\u202e\ufe0f", "??", 2);
	printable_is("\u2764\u200b\ufe0f", "\u2764??", 3);
	pads_to("\u2764\ufe0f", 3, "\u2764\ufe0f |");

	pads_to("abc", 5, "abc  |");
	pads_to("тест", 6, "тест  |");
	pads_to("测试", 6, "测试  |");
	pads_to("\U0001f600", 3, "\U0001f600 |");
	pads_to("e\u0301", 2, "e\u0301 |");
	pads_to("测试测试", 4, "测试测试|");	/* wider than the field: all of it, no pad */
	pads_to("测试测试", 2, "测试测试|");
	pads_to("", 3, "   |");
	/* never a negative width, which printf would take as the left flag */
	CHECK(utf8_field("测试测试", 2) == 6 && utf8_field("x", -3) == 0, "utf8_field: %d %d",
	      utf8_field("测试测试", 2), utf8_field("x", -3));
	{
		char buf[64];

		snprintf(buf, sizeof(buf), "%*s|", utf8_field("тест", 6), "тест");
		CHECK(!strcmp(buf, "  тест|"), "right-aligned: \"%s\"", buf);
	}

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
