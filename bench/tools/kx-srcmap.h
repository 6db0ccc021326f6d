/*
 * kx-srcmap: the source files kx-macros reads, and which of their lines
 * belong to a #define (of which macro). Shared by kx-macros.c only.
 */
#ifndef KX_SRCMAP_H
#define KX_SRCMAP_H
#include <stddef.h>
#include <stdint.h>

#include "kx-json.h"

#define SRC_MAX (64L << 20)     /* larger "sources" are not read */

enum { C_SOURCE, C_STRINGIFIED, C_PASTED, C_CMDLINE, C_MARKERS, C_UNREAD, NCLASS };
extern const char *const class_name[NCLASS];

struct macro {
	char *name;
	uint32_t file, line;    /* where its #define starts */
	uint64_t bytes, tokens;
};

struct srcfile {
	char *path;
	size_t path_len;        /* (a path may hold a NUL: then it is unread) */
	int readable;
	char *text;
	size_t len;
	size_t nlines;
	size_t *start;          /* byte offset of each physical line (1-based) */
	int32_t *macro;         /* macro id of each line, -1 outside #define */
};

extern struct macro *macros;
extern size_t nmacros;
extern struct srcfile *files;
extern size_t nfiles;

void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
int is_ident(int c);
/* the file's text and #define map, read on first use (f->text NULL: unread) */
struct srcfile *load(uint32_t fid);
/* the index of a path in files[], added if new */
uint32_t intern(const char *s, size_t n);
/* "classes", "macro_bytes", "n_macros" and the TOP "macros" (by own bytes,
 * or by `by` when given; ties by name, then the order read) as JSON members */
void print_top(const uint64_t *by, size_t by_len, const uint64_t *cls, long top);

#endif
