#define _GNU_SOURCE
/*
 * kx-includes.c: the include entries of kx-analyze -H (kx-includes.h).
 * An enter marker (flag 1) read while a file is current opens an include
 * of the named file by it; a return marker (flag 2) naming F closes the
 * innermost open include whose includer is F, and those above it (never
 * returned from: line 0); the include's line is the return marker's
 * number less one (gcc and clang write "# L+1 "a.c" 2" after an
 * #include on line L of a.c). Each distinct (includer, line, header) once.
 */
#include <stdint.h>
#include <stdio.h>

#include "kx-alloc.h"
#include "kx-includes.h"
#include "kx-marker.h"

static struct include {
	uint32_t includer, header;  /* file indices */
} *stack;                           /* the open includes, innermost last */
static size_t depth, stack_cap;
static struct edge {
	uint32_t includer, header;
	uint64_t line;
} *edges;                           /* distinct, in the order closed */
static size_t nedges, edges_cap;
static uint32_t *edge_tab;          /* edges[] index + 1 (0: empty slot) */
static size_t edge_tab_size;

static uint64_t edge_hash(const struct edge *e)
{
	uint64_t h = ((uint64_t)(e->includer ^ e->header << 16 ^ e->header >> 16) << 32 ^
		      e->line) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* -H: the include edge (includer, line, header), once */
static void add_edge(uint32_t includer, uint64_t line, uint32_t header)
{
	if (2 * (nedges + 1) > edge_tab_size) {
		free(edge_tab);
		edge_tab_size = edge_tab_size ? 2 * edge_tab_size : 1024;
		edge_tab = xcalloc(edge_tab_size, sizeof(*edge_tab));
		for (size_t i = 0; i < nedges; i++) {
			size_t j = edge_hash(&edges[i]) & (edge_tab_size - 1);
			while (edge_tab[j])
				j = (j + 1) & (edge_tab_size - 1);
			edge_tab[j] = (uint32_t)i + 1;
		}
	}
	struct edge e = { includer, header, line };
	size_t j = edge_hash(&e) & (edge_tab_size - 1);
	for (; edge_tab[j]; j = (j + 1) & (edge_tab_size - 1)) {
		const struct edge *o = &edges[edge_tab[j] - 1];
		if (o->includer == includer && o->header == header && o->line == line)
			return;
	}
	if (nedges == edges_cap) {
		edges_cap = edges_cap ? 2 * edges_cap : 256;
		edges = xrealloc(edges, edges_cap * sizeof(*edges));
	}
	edges[nedges] = e;
	edge_tab[j] = (uint32_t)++nedges;
}

void kx_include_follow(unsigned int flags, uint64_t line, int had, uint32_t was,
		       uint32_t now)
{
	if (flags & KX_FLAG_ENTER) {
		if (!had)
			return;
		if (depth == stack_cap) {
			stack_cap = stack_cap ? 2 * stack_cap : 64;
			stack = xrealloc(stack, stack_cap * sizeof(*stack));
		}
		stack[depth].includer = was;
		stack[depth].header = now;
		depth++;
	} else if (flags & KX_FLAG_RETURN) {
		/* close the innermost include by cur_file, and those above it
		 * (never returned from: LINE 0) */
		size_t k = depth;
		while (k > 0 && stack[k - 1].includer != now)
			k--;
		if (!k)
			return;
		while (depth >= k) {
			depth--;
			add_edge(stack[depth].includer,
				 depth == k - 1 && line ? line - 1 : 0,
				 stack[depth].header);
		}
	}
}

void kx_include_print(void)
{
	for (size_t i = 0; i < depth; i++)      /* still open */
		add_edge(stack[i].includer, 0, stack[i].header);
	for (size_t i = 0; i < nedges; i++)
		printf("%s[%lu, %llu, %lu]", i ? ", " : "", (unsigned long)edges[i].includer,
		       (unsigned long long)edges[i].line, (unsigned long)edges[i].header);
}
