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
 * so the OWN_BYTES and unattributed_bytes add up to "bytes".
 * Includes follow the flags of the markers (kx-marker.h): a marker with
 * flag 1 naming H, read while the current file is C, opens an include of
 * H by C (on a stack; no current file: none); else one with flag 2 naming
 * F closes the innermost open include whose includer is F, and any open
 * above it (never returned from: LINE 0); none by F: nothing. Its LINE is
 * N - 1 of the flag-2 marker "# N "F" 2" (gcc and clang write N = L + 1
 * after an #include on line L), 0 if N is 0 (gcc's "# 0 "<command-line>"
 * 2"). #line has no flags; flags 3 and 4 mean nothing here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kx-json.h"
#include "kx-marker.h"

#define CHUNK (1 << 20)
#define NPAT 3

static const char *const pat[NPAT] = {
	"__builtin_choose_expr", "({", "__UNIQUE_ID_",
};
static size_t patlen[NPAT];
#define PATMAX 21 /* strlen("__builtin_choose_expr") */

struct entry {
	uint32_t file;    /* index into files[], +1 (0: empty slot) */
	uint64_t line;
	uint64_t bytes;
	uint64_t lines;   /* output lines attributed */
	uint64_t count[NPAT];
};

static struct entry *tab;
static size_t tab_size, tab_used;

static struct name {
	char *s;
	size_t n;
	uint64_t hash;
	uint64_t own;     /* -H: bytes of the lines that belong to the file */
} *files;
static size_t nfiles, files_cap;
/* files[] by name: index + 1 (0: empty slot), open addressing */
static uint32_t *name_tab;
static size_t name_tab_size;

/* -H */
static int hflag;
static uint64_t unattributed;
static uint64_t run_start;          /* where the current file's lines began */
static struct include {
	uint32_t includer, header;  /* indices into files[] */
} *stack;                           /* the open includes, innermost last */
static size_t depth, stack_cap;
static struct edge {
	uint32_t includer, header;
	uint64_t line;
} *edges;                           /* distinct, in the order closed */
static size_t nedges, edges_cap;
static uint32_t *edge_tab;          /* edges[] index + 1 (0: empty slot) */
static size_t edge_tab_size;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "kx-analyze: out of memory\n");
		exit(2);
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "kx-analyze: out of memory\n");
		exit(2);
	}
	return p;
}

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}

static uint32_t intern(const char *s, size_t n)
{
	/* a hash: a kernel file names ~1,000 files, and every #include
	 * writes two markers (enter and return), each looked up here */
	uint64_t h = name_hash(s, n);
	if (2 * (nfiles + 1) > name_tab_size) {
		free(name_tab);
		name_tab_size = name_tab_size ? 2 * name_tab_size : 256;
		name_tab = xcalloc(name_tab_size, sizeof(*name_tab));
		for (size_t i = 0; i < nfiles; i++) {
			size_t j = files[i].hash & (name_tab_size - 1);
			while (name_tab[j])
				j = (j + 1) & (name_tab_size - 1);
			name_tab[j] = (uint32_t)i + 1;
		}
	}
	size_t j = h & (name_tab_size - 1);
	for (; name_tab[j]; j = (j + 1) & (name_tab_size - 1)) {
		struct name *f = &files[name_tab[j] - 1];
		if (f->hash == h && f->n == n && memcmp(f->s, s, n) == 0)
			return name_tab[j] - 1;
	}
	if (nfiles == files_cap) {
		files_cap = files_cap ? 2 * files_cap : 64;
		files = xrealloc(files, files_cap * sizeof(*files));
	}
	files[nfiles].s = xrealloc(NULL, n + 1);
	files[nfiles].n = n;
	files[nfiles].hash = h;
	files[nfiles].own = 0;
	memcpy(files[nfiles].s, s, n);
	name_tab[j] = (uint32_t)nfiles + 1;
	return (uint32_t)nfiles++;
}

static uint64_t hash(uint32_t f, uint64_t l)
{
	uint64_t h = ((uint64_t)f << 32 ^ l) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct entry *lookup(uint32_t file, uint64_t line)
{
	if (2 * (tab_used + 1) > tab_size) {
		size_t old = tab_size;
		struct entry *ot = tab;
		tab_size = old ? 2 * old : 4096;
		tab = calloc(tab_size, sizeof(*tab));
		if (!tab) {
			fprintf(stderr, "kx-analyze: out of memory\n");
			exit(2);
		}
		for (size_t i = 0; i < old; i++) {
			if (!ot[i].file)
				continue;
			size_t j = hash(ot[i].file, ot[i].line) & (tab_size - 1);
			while (tab[j].file)
				j = (j + 1) & (tab_size - 1);
			tab[j] = ot[i];
		}
		free(ot);
	}
	size_t j = hash(file + 1, line) & (tab_size - 1);
	while (tab[j].file) {
		if (tab[j].file == file + 1 && tab[j].line == line)
			return &tab[j];
		j = (j + 1) & (tab_size - 1);
	}
	tab[j].file = file + 1;
	tab[j].line = line;
	tab_used++;
	return &tab[j];
}

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

static uint64_t edge_hash(const struct edge *e)
{
	return hash(e->includer ^ e->header << 16 ^ e->header >> 16, e->line);
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

/* -H: a marker with flags has named cur_file; the current file before
 * it was "was" (if "had": there was one) */
static void follow_include(const struct kx_marker *m, int had, uint32_t was)
{
	if (m->flags & KX_FLAG_ENTER) {
		if (!had)
			return;
		if (depth == stack_cap) {
			stack_cap = stack_cap ? 2 * stack_cap : 64;
			stack = xrealloc(stack, stack_cap * sizeof(*stack));
		}
		stack[depth].includer = was;
		stack[depth].header = cur_file;
		depth++;
	} else if (m->flags & KX_FLAG_RETURN) {
		/* close the innermost include by cur_file, and those above it
		 * (never returned from: LINE 0) */
		size_t k = depth;
		while (k > 0 && stack[k - 1].includer != cur_file)
			k--;
		if (!k)
			return;
		while (depth >= k) {
			depth--;
			add_edge(stack[depth].includer,
				 depth == k - 1 && m->line ? m->line - 1 : 0,
				 stack[depth].header);
		}
	}
}

/* -H: the lines before offset upto (a line's start) since run_start are
 * the current file's; nothing is done per line, only here, at each
 * directive that names a file, and at the end */
static void end_run(uint64_t upto)
{
	if (have_file)
		files[cur_file].own += upto - run_start;
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
		cur_file = intern(d, kx_unescape(d, m->name, m->name_len));
		have_file = 1;
		if (hflag && m->flags)
			follow_include(m, had, was);
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

	struct entry **v = xrealloc(NULL, (tab_used + 1) * sizeof(*v));
	size_t m = 0;
	for (size_t i = 0; i < tab_size; i++)
		if (tab[i].file)
			v[m++] = &tab[i];
	qsort(v, m, sizeof(*v), cmp_bytes);

	printf("{\"bytes\": %llu, \"lines\": %llu, \"longest_line_bytes\": %llu",
	       (unsigned long long)total_bytes, (unsigned long long)total_lines,
	       (unsigned long long)longest);
	printf(", \"longest_line_at\": ");
	if (longest_has_file) {
		printf("{\"file\": ");
		json_strn(files[longest_file].s, files[longest_file].n);
		printf(", \"line\": %llu}", (unsigned long long)longest_file_line);
	} else {
		printf("null");
	}
	printf(", \"marker_lines\": %llu, \"code_bytes\": %llu",
	       (unsigned long long)marker_lines, (unsigned long long)code_bytes);
	printf(", \"totals\": {\"choose_expr\": %llu, \"stmt_expr\": %llu, "
	       "\"unique_id\": %llu}", (unsigned long long)totals[0],
	       (unsigned long long)totals[1], (unsigned long long)totals[2]);
	printf(", \"source_lines\": %zu, \"top\": [", m);
	for (size_t i = 0; i < m && (long)i < top; i++) {
		printf("%s{\"file\": ", i ? ", " : "");
		json_strn(files[v[i]->file - 1].s, files[v[i]->file - 1].n);
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
		for (size_t i = 0; i < nfiles; i++) {
			printf("%s[", i ? ", " : "");
			json_strn(files[i].s, files[i].n);
			printf(", %llu]", (unsigned long long)files[i].own);
		}
		printf("], \"unattributed_bytes\": %llu, \"includes\": [",
		       (unsigned long long)unattributed);
		for (size_t i = 0; i < depth; i++)      /* still open */
			add_edge(stack[i].includer, 0, stack[i].header);
		for (size_t i = 0; i < nedges; i++)
			printf("%s[%lu, %llu, %lu]", i ? ", " : "",
			       (unsigned long)edges[i].includer,
			       (unsigned long long)edges[i].line,
			       (unsigned long)edges[i].header);
		printf("]");
	}
	printf("}\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("kx-analyze: write");
		return 2;
	}
	return 0;
}
