/*
 * kx-srcmap.c: reading the files named by gcc's location prefixes, finding
 * the lines of every #define in them, and writing the tables (for
 * kx-macros.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kx-srcmap.h"

struct macro *macros;
size_t nmacros;
static size_t macros_cap;
struct srcfile *files;
size_t nfiles;
static size_t files_cap;

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "kx-macros: out of memory\n");
		exit(2);
	}
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *d = xrealloc(NULL, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

int is_ident(int c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* The newline at t[j] is spliced away: a backslash before it, with only
 * blanks or a '\r' between (gcc accepts "\\ \n" with a warning). */
static int spliced(const char *t, size_t j)
{
	while (j > 0 && (t[j - 1] == ' ' || t[j - 1] == '\t' || t[j - 1] == '\r'))
		j--;
	return j > 0 && t[j - 1] == '\\';
}

/* Mark the physical lines of every #define of f with its macro id. A
 * directive runs to the first newline that is not spliced and not inside
 * a block comment; comment openers inside string and character literals
 * are text. */
static void find_defines(struct srcfile *f, uint32_t fid)
{
	const char *t = f->text;
	size_t n = f->len, line = 1, i = 0;
	int in_comment = 0;
	while (i < n) {
		/* at the start of a logical line */
		size_t j = i, first = line;
		if (!in_comment) {
			while (j < n && (t[j] == ' ' || t[j] == '\t'))
				j++;
		}
		int32_t id = -1;
		if (!in_comment && j < n && t[j] == '#') {
			j++;
			while (j < n && (t[j] == ' ' || t[j] == '\t'))
				j++;
			if (n - j > 6 && !strncmp(t + j, "define", 6) &&
			    (t[j + 6] == ' ' || t[j + 6] == '\t')) {
				j += 6;
				while (j < n && (t[j] == ' ' || t[j] == '\t'))
					j++;
				size_t s = j;
				while (j < n && is_ident((unsigned char)t[j]))
					j++;
				if (j > s) {
					if (nmacros == macros_cap) {
						macros_cap = macros_cap ? 2 * macros_cap : 1024;
						macros = xrealloc(macros, macros_cap * sizeof(*macros));
					}
					macros[nmacros] = (struct macro){
						xstrndup(t + s, j - s), fid, (uint32_t)first, 0, 0};
					id = (int32_t)nmacros++;
				}
			}
		}
		/* to the end of the logical line */
		int directive = id >= 0;
		char quote = 0;
		for (;;) {
			if (j >= n) {
				i = n;
				break;
			}
			char c = t[j];
			if (c == '\n') {
				if (directive)
					f->macro[line] = id;
				line++;
				j++;
				if (spliced(t, j - 1) || (in_comment && directive))
					continue;
				quote = 0;          /* an unterminated literal ends here */
				i = j;
				break;
			}
			if (in_comment) {
				if (c == '*' && j + 1 < n && t[j + 1] == '/') {
					in_comment = 0;
					j += 2;
					continue;
				}
			} else if (quote) {
				if (c == '\\' && j + 1 < n && t[j + 1] != '\n') {
					j += 2;
					continue;
				}
				if (c == quote)
					quote = 0;
			} else if (c == '"' || c == '\'') {
				quote = c;
			} else if (c == '/' && j + 1 < n && t[j + 1] == '*') {
				in_comment = 1;
				j += 2;
				continue;
			} else if (c == '/' && j + 1 < n && t[j + 1] == '/') {
				while (j < n && (t[j] != '\n' || spliced(t, j)))
					j++;    /* a // comment ends at an unspliced newline */
				continue;
			}
			j++;
		}
		if (directive && j >= n && line <= f->nlines)
			f->macro[line] = id;
	}
}

struct srcfile *load(uint32_t fid)
{
	struct srcfile *f = &files[fid];
	if (f->text || !f->readable)
		return f;
	/* only regular files of a sane size: a line marker can name anything
	 * ("#line 1 "/dev/zero"") */
	FILE *fp = memchr(f->path, 0, f->path_len) ? NULL : fopen(f->path, "rb");
	struct stat st;
	if (!fp || fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > SRC_MAX) {
		if (fp)
			fclose(fp);
		f->readable = 0;
		return f;
	}
	size_t cap = (size_t)st.st_size + 2, len = 0;
	char *t = xrealloc(NULL, cap);
	size_t r;
	while (len < cap - 1 && (r = fread(t + len, 1, cap - 1 - len, fp)) > 0)
		len += r;
	fclose(fp);
	t[len] = 0;
	f->text = t;
	f->len = len;
	size_t nl = 1;
	for (size_t i = 0; i < len; i++)
		nl += t[i] == '\n';
	f->nlines = nl;
	f->start = xrealloc(NULL, (nl + 2) * sizeof(size_t));
	f->macro = xrealloc(NULL, (nl + 2) * sizeof(int32_t));
	size_t k = 1;
	f->start[k++] = 0;
	for (size_t i = 0; i < len; i++)
		if (t[i] == '\n')
			f->start[k++] = i + 1;
	for (size_t i = 0; i <= nl + 1; i++)
		f->macro[i] = -1;
	find_defines(f, fid);
	return f;
}

uint32_t intern(const char *s, size_t n)
{
	static uint32_t last;
	if (nfiles && files[last].path_len == n && !memcmp(files[last].path, s, n))
		return last;
	for (size_t i = nfiles; i-- > 0;)
		if (files[i].path_len == n && !memcmp(files[i].path, s, n))
			return last = (uint32_t)i;
	if (nfiles == files_cap) {
		files_cap = files_cap ? 2 * files_cap : 256;
		files = xrealloc(files, files_cap * sizeof(*files));
	}
	files[nfiles] = (struct srcfile){.path = xstrndup(s, n), .path_len = n, .readable = 1};
	return last = (uint32_t)nfiles++;
}


/* ---- output */

static int cmp_macro(const void *a, const void *b)
{
	const struct macro *x = &macros[*(const uint32_t *)a];
	const struct macro *y = &macros[*(const uint32_t *)b];
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	/* two #defines of one name: in the order they were read (qsort is
	 * not stable everywhere: glibc 2.37's is not) */
	return x < y ? -1 : x > y;
}

/* the TOP macros by bytes in `by` (macros[].bytes when NULL) */
void print_top(const uint64_t *by, size_t by_len, const uint64_t *cls, long top)
{
	uint32_t *v = xrealloc(NULL, (nmacros + 1) * sizeof(*v));
	size_t m = 0;
	uint64_t *save = xrealloc(NULL, (nmacros + 1) * sizeof(uint64_t));
	for (size_t i = 0; i < nmacros; i++) {
		save[i] = macros[i].bytes;
		if (by)
			macros[i].bytes = i < by_len ? by[i] : 0;
		if (macros[i].bytes)
			v[m++] = (uint32_t)i;
	}
	qsort(v, m, sizeof(*v), cmp_macro);
	printf("\"classes\": {");
	for (int c = 0; c < NCLASS; c++) {
		printf("%s", c ? ", " : "");
		json_str(class_name[c]);
		printf(": %llu", (unsigned long long)cls[c]);
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < m; i++)
		sum += macros[v[i]].bytes;
	printf("}, \"macro_bytes\": %llu, \"n_macros\": %zu, \"macros\": [",
	       (unsigned long long)sum, m);
	for (size_t i = 0; i < m && (long)i < top; i++) {
		struct macro *x = &macros[v[i]];
		printf("%s{\"name\": ", i ? ", " : "");
		json_str(x->name);
		printf(", \"file\": ");
		json_strn(files[x->file].path, files[x->file].path_len);
		printf(", \"line\": %u, \"own_bytes\": %llu", x->line,
		       (unsigned long long)x->bytes);
		if (!by)
			printf(", \"tokens\": %llu", (unsigned long long)x->tokens);
		printf("}");
	}
	printf("]");
	for (size_t i = 0; i < nmacros; i++)
		macros[i].bytes = save[i];
	free(save);
	free(v);
}

