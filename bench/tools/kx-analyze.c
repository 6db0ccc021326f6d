/*
 * kx-analyze: streaming analyzer of C preprocessor output.
 *
 *   gcc -E ... -o - file.c | kx-analyze [-H] [-n TOP]
 *
 * Reads stdin (a pipe is fine: nothing is kept but counters), writes one
 * JSON object to stdout:
 *   bytes, lines, longest_line_bytes (+ where), marker_lines, code_bytes
 *   (bytes outside line markers), totals of macro-instantiation markers,
 *   and the TOP source lines by expanded bytes, attributed through the
 *   "# LINE "FILE" FLAGS" line markers that gcc and clang emit and C's
 *   "#line LINE "FILE"" (kx-marker.h has the exact shapes and meaning).
 *
 * A line is what ends in '\n' (or the input's end); its bytes include
 * the '\n' (and a '\r' before it). A directive line sets the position
 * of the next line; every other line is code, attributed to the position
 * (FILE's line LINE) when a FILE was named, then the line number grows by
 * one. "top" is by bytes, then FILE in the order the directives first
 * named it, then line; FILE is the name with its escapes applied.
 *
 * Per source line it counts three traces that macro expansion leaves:
 *   choose_expr  "__builtin_choose_expr"
 *   stmt_expr    "({"   (statement expressions)
 *   unique_id    "__UNIQUE_ID_"  (names made by __UNIQUE_ID())
 *
 * -H (bytes by header) adds three fields; without it the output is the
 * same, byte for byte:
 *   "headers": [[NAME, OWN_BYTES], ...]  every name the directives named,
 *       in the order first named (index 0: the main file for gcc and
 *       clang), NAME unescaped as in "top"; OWN_BYTES (0 if none) the
 *       bytes of the lines that belong to it.
 *   "unattributed_bytes": N  the bytes of the lines before the first name.
 *   "includes": [[INCLUDER, LINE, HEADER], ...]  the include edges, the
 *       files as indices into "headers", each distinct triple once, in the
 *       order the includes were closed, then those still open at the
 *       input's end (LINE 0; innermost last).
 * Attribution: a line (with its '\n', as "bytes" counts) belongs to the
 * file that is current after it: a directive naming a file to that file,
 * every other line (a directive without a name too) to the current file;
 * so the OWN_BYTES and unattributed_bytes add up to "bytes". Includes
 * follow the markers' flags 1 (enter) and 2 (return): kx-includes.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kx-alloc.h"
#include "kx-includes.h"
#include "kx-json.h"
#include "kx-lines.h"
#include "kx-marker.h"
#include "kx-names.h"

#define CHUNK (1 << 20)

static const char *const pat[NPAT] = { "__builtin_choose_expr", "({", "__UNIQUE_ID_" };
static size_t patlen[NPAT];
#define PATMAX 21 /* strlen("__builtin_choose_expr") */

static int hflag;                   /* -H */
static uint64_t unattributed;
static uint64_t run_start;          /* where the current file's lines began */

/* state of the line being read */
static uint32_t cur_file;
static uint64_t cur_line = 1;
static int have_file;
static struct entry *cur;        /* attribution of the current line */
static uint64_t line_len;        /* bytes so far in the current line */
static int at_line_start = 1;
static int maybe_marker;         /* the line so far may be a directive */
static char *mark;               /* ... and is kept here */
static size_t mark_len, mark_cap, mark_checked;
/* the last PATMAX-1 bytes of the current line, for matches across chunks */
static char tail[PATMAX];
static size_t tail_len;

static uint64_t total_bytes, total_lines, marker_lines, code_bytes, marker_bytes;
static uint64_t longest, longest_file_line;
static uint32_t longest_file;
static int longest_has_file;
static uint64_t totals[NPAT];

/* -H: the lines before offset upto (a line's start) since run_start are
 * the current file's; nothing is done per line, only here, at each
 * directive that names a file, and at the end */
static void end_run(uint64_t upto)
{
	if (have_file)
		kx_files[cur_file].own += upto - run_start;
	else
		unattributed += upto - run_start;
	run_start = upto;
}

static void set_position(const struct kx_marker *m)
{
	static char *d;
	static size_t d_cap;
	if (m->name) {
		uint32_t was = cur_file;
		int had = have_file;
		if (hflag)
			end_run(code_bytes + marker_bytes);
		if (m->name_len + 1 > d_cap)
			d = xrealloc(d, d_cap = 2 * (m->name_len + 1));
		cur_file = kx_intern(d, kx_unescape(d, m->name, m->name_len));
		have_file = 1;
		if (hflag && m->flags)
			kx_include_follow(m->flags, m->line, had, was, cur_file);
	}
	cur_line = m->line;
}

static void count_patterns(const char *s, size_t n, struct entry *e)
{
	/* s: tail of the previous chunk (tail_len bytes) followed by new
	 * bytes. Count only matches that end in the new bytes. */
	for (int k = 0; k < NPAT; k++) {
		const char *p = s, *end = s + n;
		uint64_t c = 0;
		if (k == 1) {
			/* "({": memchr for the rarer '{', then look one back;
			 * ten times faster than memmem on a two-byte needle */
			while ((p = memchr(p, '{', (size_t)(end - p)))) {
				if (p > s && p[-1] == '(' && (size_t)(p - s) >= tail_len)
					c++;
				p += 1;
			}
		} else {
			while ((p = memmem(p, (size_t)(end - p), pat[k], patlen[k]))) {
				if ((size_t)(p - s) + patlen[k] > tail_len)
					c++;
				p += 1;
			}
		}
		if (e)
			e->count[k] += c;
		totals[k] += c;
	}
}

/* the line turned out to be code: count what was kept of it */
static void mark_is_code(void)
{
	maybe_marker = 0;
	cur = have_file ? lookup(cur_file, cur_line) : NULL;
	tail_len = 0;
	count_patterns(mark, mark_len, cur);
	size_t t = mark_len < PATMAX - 1 ? mark_len : PATMAX - 1;
	memcpy(tail, mark + mark_len - t, t);
	tail_len = t;
}

static void end_line(void)
{
	struct kx_marker m;
	if (maybe_marker && kx_marker(mark, mark_len, 1, &m) == 1) {
		marker_lines++;
		set_position(&m);
		marker_bytes += line_len;
	} else {
		if (maybe_marker)
			mark_is_code();
		code_bytes += line_len;
		if (at_line_start && have_file) /* an empty line */
			cur = lookup(cur_file, cur_line);
		if (cur) {
			cur->bytes += line_len;
			cur->lines++;
		}
		if (line_len > longest) {
			longest = line_len;
			longest_file = cur_file;
			longest_file_line = cur_line;
			longest_has_file = have_file;
		}
		cur_line++;
	}
	total_lines++;
	at_line_start = 1;
	maybe_marker = 0;
	mark_len = mark_checked = 0;
	line_len = 0;
	tail_len = 0;
	cur = NULL;
}

/* process bytes [s, s+n) that lie inside one line (no '\n') */
static void line_bytes(const char *s, size_t n, char *work)
{
	if (!n)
		return;
	if (at_line_start) {
		at_line_start = 0;
		maybe_marker = (s[0] == '#');
		if (!maybe_marker)
			cur = have_file ? lookup(cur_file, cur_line) : NULL;
	}
	line_len += n;
	if (maybe_marker) {
		/* keep the line while it may be a directive; look again each
		 * time it has doubled (linear time on a huge '#' line) */
		if (mark_len + n > mark_cap)
			mark = xrealloc(mark, mark_cap = 2 * (mark_len + n));
		memcpy(mark + mark_len, s, n);
		mark_len += n;
		struct kx_marker m;
		if (mark_len >= 2 * mark_checked) {
			mark_checked = mark_len;
			if (kx_marker(mark, mark_len, 0, &m) == 0)
				mark_is_code();
		}
		return;
	}
	memcpy(work, tail, tail_len);
	memcpy(work + tail_len, s, n);
	count_patterns(work, tail_len + n, cur);
	size_t all = tail_len + n;
	size_t t = all < PATMAX - 1 ? all : PATMAX - 1;
	memmove(tail, work + all - t, t);
	tail_len = t;
}

static int cmp_bytes(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a;
	const struct entry *y = *(struct entry *const *)b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static void usage(void)
{
	fprintf(stderr, "usage: kx-analyze [-H] [-n TOP] < preprocessed.i\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long top = 5;
	int opt;
	while ((opt = getopt(argc, argv, "Hn:h")) != -1) {
		if (opt == 'H') {
			hflag = 1;
		} else if (opt == 'n') {
			char *e;
			top = strtol(optarg, &e, 10);
			if (!kx_digit(*optarg) || *e)
				usage();
		} else {
			usage();
		}
	}
	for (int k = 0; k < NPAT; k++)
		patlen[k] = strlen(pat[k]);

	char *buf = xrealloc(NULL, CHUNK);
	char *work = xrealloc(NULL, CHUNK + PATMAX);
	for (;;) {
		ssize_t n = read(0, buf, CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("kx-analyze: read");
			return 2;
		}
		if (n == 0)
			break;
		total_bytes += (uint64_t)n;
		const char *p = buf, *end = buf + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl) {
				line_bytes(p, (size_t)(end - p), work);
				break;
			}
			line_bytes(p, (size_t)(nl - p), work);
			line_len++; /* the newline belongs to its line */
			end_line();
			p = nl + 1;
		}
	}
	if (!at_line_start)
		end_line();
	if (hflag)
		end_run(total_bytes);

	/* the first `top` lines in cmp_bytes' order; sorting all of them
	 * (about 10^5) was half the analyzer's time */
	struct entry **v = xrealloc(NULL, (tab_used + 1) * sizeof(*v));
	size_t m = 0, want = top < 64 && (size_t)top < tab_used ? (size_t)top : 0;
	for (size_t i = 0; i < tab_used; i++) {
		struct entry *e = &tab[i];
		if (want && m == want && cmp_bytes(&e, &v[m - 1]) > 0)
			continue;
		size_t j = !want || m < want ? m++ : m - 1;
		for (; want && j > 0 && cmp_bytes(&e, &v[j - 1]) < 0; j--)
			v[j] = v[j - 1];
		v[j] = e;
	}
	if (!want)
		qsort(v, m, sizeof(*v), cmp_bytes);

	printf("{\"bytes\": %llu, \"lines\": %llu, \"longest_line_bytes\": %llu",
	       (unsigned long long)total_bytes, (unsigned long long)total_lines,
	       (unsigned long long)longest);
	printf(", \"longest_line_at\": ");
	if (longest_has_file) {
		printf("{\"file\": ");
		json_strn(kx_files[longest_file].s, kx_files[longest_file].n);
		printf(", \"line\": %llu}", (unsigned long long)longest_file_line);
	} else {
		printf("null");
	}
	printf(", \"marker_lines\": %llu, \"code_bytes\": %llu",
	       (unsigned long long)marker_lines, (unsigned long long)code_bytes);
	printf(", \"totals\": {\"choose_expr\": %llu, \"stmt_expr\": %llu, "
	       "\"unique_id\": %llu}", (unsigned long long)totals[0],
	       (unsigned long long)totals[1], (unsigned long long)totals[2]);
	printf(", \"source_lines\": %zu, \"top\": [", tab_used);
	for (size_t i = 0; i < m && (long)i < top; i++) {
		printf("%s{\"file\": ", i ? ", " : "");
		json_strn(kx_files[v[i]->file - 1].s, kx_files[v[i]->file - 1].n);
		printf(", \"line\": %llu, \"bytes\": %llu, \"out_lines\": %llu, "
		       "\"choose_expr\": %llu, \"stmt_expr\": %llu, \"unique_id\": %llu}",
		       (unsigned long long)v[i]->line, (unsigned long long)v[i]->bytes,
		       (unsigned long long)v[i]->lines,
		       (unsigned long long)v[i]->count[0],
		       (unsigned long long)v[i]->count[1],
		       (unsigned long long)v[i]->count[2]);
	}
	printf("]");
	if (hflag) {
		printf(", \"headers\": [");
		for (size_t i = 0; i < kx_nfiles; i++) {
			printf("%s[", i ? ", " : "");
			json_strn(kx_files[i].s, kx_files[i].n);
			printf(", %llu]", (unsigned long long)kx_files[i].own);
		}
		printf("], \"unattributed_bytes\": %llu, \"includes\": [",
		       (unsigned long long)unattributed);
		kx_include_print();
		printf("]");
	}
	printf("}\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("kx-analyze: write");
		return 2;
	}
	return 0;
}
