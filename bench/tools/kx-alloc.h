/* kx-alloc.h: allocation that ends the program on failure (exit 2, as
 * every error of the C tools), for kx-analyze and its parts. */
#ifndef KX_ALLOC_H
#define KX_ALLOC_H
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

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

/* A zeroed table, in whole 2 MiB pages where the kernel has transparent
 * huge pages for those who ask (madvise mode): kx-analyze's line table of
 * a kernel file is MiBs touched, and page faults cost about 10 us each on
 * a virtual machine (13,000 of them for kernel/sched/core.c with 4 KiB
 * pages, when the table was a hash of single lines). Freed with
 * kx_table_free and the same size. */
#define KX_HUGE ((size_t)2 << 20)
static inline size_t kx_table_len(size_t bytes)
{
	return (bytes + KX_HUGE - 1) & ~(KX_HUGE - 1);
}

static inline void *kx_table_alloc(size_t bytes)
{
	size_t len = kx_table_len(bytes);
	char *p = mmap(NULL, len + KX_HUGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(2);
	}
	char *a = (char *)(((uintptr_t)p + KX_HUGE - 1) & ~(uintptr_t)(KX_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + KX_HUGE - a));
	madvise(a, len, MADV_HUGEPAGE);     /* a hint: no huge pages, no harm */
	return a;
}

static inline void kx_table_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, kx_table_len(bytes));
}

#endif
