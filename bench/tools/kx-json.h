/* kx-json.h: a JSON string on stdout, for the C analyzers. */
#ifndef KX_JSON_H
#define KX_JSON_H
#include <stdio.h>

static inline void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

#endif
