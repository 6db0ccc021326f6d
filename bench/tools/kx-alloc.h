/* kx-alloc.h: allocation that ends the program on failure (exit 2, as
 * every error of the C tools), for kx-analyze and its parts. */
#ifndef KX_ALLOC_H
#define KX_ALLOC_H
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static inline void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(2);
	}
	return p;
}

static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(2);
	}
	return p;
}

#endif
