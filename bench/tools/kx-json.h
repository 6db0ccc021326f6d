/* kx-json.h: a JSON string on stdout, for the C analyzers.
 *
 * Any bytes make valid JSON: '"', '\\' and control characters are escaped,
 * well-formed UTF-8 is copied, and every other byte b becomes "\udcXX" (the
 * lone surrogate U+DC00+b, Python's "surrogateescape"), so that
 * s.encode("utf-8", "surrogateescape") gives the bytes back exactly. */
#ifndef KX_JSON_H
#define KX_JSON_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the length of the well-formed UTF-8 sequence at s (n > 0 bytes), or 0 */
static inline size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp, min;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static inline void json_strn(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	putchar('"');
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len(s + i, n - i);
		if (s[i] == '"' || s[i] == '\\')
			printf("\\%c", s[i]);
		else if (s[i] < 0x20)
			printf("\\u%04x", s[i]);
		else if (!k)
			printf("\\udc%02x", s[i]);
		else
			fwrite(s + i, 1, k, stdout);
		i += k ? k : 1;
	}
	putchar('"');
}

static inline void json_str(const char *s)
{
	json_strn(s, strlen(s));
}

#endif
