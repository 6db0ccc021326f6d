/* kx-marker.h: the line markers and #line directives of preprocessor output,
 * read the same way by kx-analyze and kx-macros.
 *
 * A line (without its '\n') is a directive when it has one of the shapes
 *     #[ \t]*N([ \t]*"NAME"([ \t]*F)*)?[ \t]*\r?       gcc's line marker
 *     #[ \t]*line[ \t]+N([ \t]*"NAME")?[ \t]*\r?        C's #line
 * where N is a decimal number from 0 to 2147483647 (C11 6.10.4; gcc writes
 * "# 0"), F a decimal flag (gcc's 1 2 3 4; any digits make a flag), and
 * NAME a string literal body: any bytes but '"', and '\' with the byte after
 * it. Of the flags, the two a reader may want are reported (in flags): a
 * flag written "1" (gcc and clang: entering NAME, an #include) and one
 * written "2" (returning to NAME); "3", "4", "01", "12" ... report nothing,
 * and neither changes what is a directive. Both set
 * the position of the NEXT line: it is line N (of NAME when given, else of
 * the same file), as C11 6.10.4p3 says of #line and as gcc -E itself writes
 * a #line (as "# N "file"" before that line). Every other line is text,
 * also "#pragma", "#line 5 "a.c" 1", "# 5 x" and a number over the limit.
 * NAME's escapes mean what they mean in a C string, as gcc reads them:
 * \a \b \e \E \f \n \r \t \v, 1-3 octal digits and \x with hex digits (the
 * value's low 8 bits), \uXXXX and \UXXXXXXXX as UTF-8 (when C allows that
 * character: U+00A0 and up, or $ @ `, and no surrogate); any other
 * escaped byte, also an incomplete \x, \u, \U, stands for itself. */
#ifndef KX_MARKER_H
#define KX_MARKER_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KX_LINE_MAX 2147483647u

/* the flags of a line marker that kx_marker() reports */
#define KX_FLAG_ENTER  1u        /* flag 1: NAME is entered (included) */
#define KX_FLAG_RETURN 2u        /* flag 2: returning to NAME */

struct kx_marker {
	uint64_t line;           /* the number of the next line */
	const char *name;        /* NAME as written (escaped), NULL if none */
	size_t name_len;
	unsigned int flags;      /* KX_FLAG_*: flags 1 and 2 seen (0 for #line) */
};

static inline int kx_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline int kx_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* 1: s[0, n), a whole line (whole) or the start of one (!whole), is a
 * directive, described in *m; 0: it is not (whatever follows); -1 (only
 * when !whole): it may still become one. */
static inline int kx_marker(const char *s, size_t n, int whole, struct kx_marker *m)
{
	size_t i = 1;
	int is_line = 0;
#define KX_END(ok) do { if (i >= n) return whole ? (ok) : -1; } while (0)
	if (!n || s[0] != '#')
		return 0;
	while (i < n && kx_blank(s[i]))
		i++;
	KX_END(0);
	if (s[i] == 'l') {
		for (const char *k = "line"; *k; k++, i++) {
			KX_END(0);
			if (s[i] != *k)
				return 0;
		}
		KX_END(0);
		if (!kx_blank(s[i]))
			return 0;
		while (i < n && kx_blank(s[i]))
			i++;
		KX_END(0);
		is_line = 1;
	}
	if (!kx_digit(s[i]))
		return 0;
	m->line = 0;
	m->name = NULL;
	m->name_len = 0;
	m->flags = 0;
	while (i < n && kx_digit(s[i]))
		if ((m->line = m->line * 10 + (uint64_t)(s[i++] - '0')) > KX_LINE_MAX)
			return 0;
	while (i < n && kx_blank(s[i]))
		i++;
	if (i < n && s[i] == '"') {
		size_t b = ++i;
		for (;;) {
			KX_END(0);
			if (s[i] == '"')
				break;
			i += s[i] == '\\' ? 2 : 1;
		}
		m->name = s + b;
		m->name_len = i++ - b;
		for (;;) {              /* the flags of a marker */
			while (i < n && kx_blank(s[i]))
				i++;
			if (is_line || i >= n || !kx_digit(s[i]))
				break;
			size_t f = i;
			while (i < n && kx_digit(s[i]))
				i++;
			if (i - f == 1 && (s[f] == '1' || s[f] == '2'))
				m->flags |= s[f] == '1' ? KX_FLAG_ENTER : KX_FLAG_RETURN;
		}
	}
	if (i < n && s[i] == '\r')
		i++;
	KX_END(1);
	return 0;
#undef KX_END
}

static inline int kx_hex(char c)
{
	return kx_digit(c) ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
}

/* code point cp as UTF-8 into d; returns the length */
static inline size_t kx_utf8(char *d, uint32_t cp)
{
	size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	static const unsigned char lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
	for (size_t i = n; i-- > 1; cp >>= 6)
		d[i] = (char)(0x80 | (cp & 0x3f));
	d[0] = (char)(lead[n] | cp);
	return n;
}

/* NAME s[0, n) with its escapes applied, into d (room for n bytes);
 * returns the length */
static inline size_t kx_unescape(char *d, const char *s, size_t n)
{
	static const char simple[] = "abeEfnrtv", value[] = "\a\b\033\033\f\n\r\t\v";
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t c = (unsigned char)s[i++], k = 0, j = 0;
		const char *e;
		if (c == '\\' && i < n) {
			c = (unsigned char)s[i++];
			if (c && (e = strchr(simple, (int)c))) {
				c = (unsigned char)value[e - simple];
			} else if (c >= '0' && c <= '7') {
				for (c -= '0', k = 1; k < 3 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
					c = c * 8 + (uint32_t)(s[i++] - '0');
			} else if (c == 'x' && i < n && kx_hex(s[i]) >= 0) {
				for (c = 0; i < n && kx_hex(s[i]) >= 0; i++)
					c = (c * 16 + (uint32_t)kx_hex(s[i])) & 0xff;
			} else if (c == 'u' || c == 'U') {
				uint32_t cp = 0;
				for (k = c == 'u' ? 4 : 8; j < k && i + j < n && kx_hex(s[i + j]) >= 0; j++)
					cp = cp * 16 + (uint32_t)kx_hex(s[i + j]);
				if (j == k && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) &&
				    (cp >= 0xa0 || cp == '$' || cp == '@' || cp == '`')) {
					i += k;
					o += kx_utf8(d + o, cp);
					continue;
				}
			}
		}
		d[o++] = (char)(c & 0xff);
	}
	return o;
}

#endif
