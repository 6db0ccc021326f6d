/*
 * kx-macros: which macro spelled each byte of the preprocessed output.
 *
 *   gcc -E -fdebug-cpp ... -o - file.c | kx-macros [-n TOP] [-l FILE:LINE]...
 *
 * gcc's -fdebug-cpp prefixes every output token with where it was spelled,
 * "{P:file;F:...;L:line;C:column;...}". Removing the prefixes gives plain
 * -E output byte for byte, so every plain byte is counted in exactly one
 * class (the classes add up to the plain -E size):
 *   a macro        the token is spelled on a line of that macro's #define
 *                  (its "own" bytes: nested macros count for themselves)
 *   <source>       the token is spelled in ordinary source text (the file's
 *                  and headers' own code, and macro arguments written there)
 *   <stringified>  a string made by '#' (its text is not in the source)
 *   <pasted>       any other token made by the preprocessor: '##' pastes,
 *                  __COUNTER__, __LINE__ (__FILE__ makes a string: stringified)
 *   <command-line> tokens of -D macros and gcc's built-in macros
 *   <markers>      line markers, #pragma lines, whitespace and newlines
 *   <unread>       tokens spelled in a file that could not be read (not a
 *                  regular file, over 64 MiB, missing): not classified
 * A string literal that holds a whole well-formed location prefix is misread
 * (the rows then do not add up; bench/macros.py checks and says so).
 * A token is "spelled" at its location when the source line at that
 * column starts with the token's text; the files are read from the
 * current directory, as the compiler named them.
 *
 * Nothing is kept of the stream but counters. Writes one JSON object:
 * bytes (plain), classes, n_macros, the TOP macros by own bytes, and for
 * each -l FILE:LINE the same for the output lines of that source line
 * (FILE as in the line markers, escapes applied; leading "./" and "../"
 * are ignored). The output position follows the line markers and #line
 * directives exactly as kx-analyze does (kx-marker.h): a line's plain
 * bytes, its '\n' included, count for its position unless it is a
 * directive. Text before any location prefix has none: <command-line>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kx-marker.h"
#include "kx-srcmap.h"

const char *const class_name[NCLASS] = {
	"<source>", "<stringified>", "<pasted>", "<command-line>", "<markers>",
	"<unread>",
};

#define MAXSEL 16
struct sel {
	char *file;
	size_t file_len;
	uint64_t line;
	uint64_t bytes;
	uint64_t cls[NCLASS];
	uint64_t *mac;           /* per macro id, grown with macros */
	size_t mac_cap;
};
static struct sel sels[MAXSEL];
static int nsel;

static uint64_t cls_total[NCLASS];

/* ---- the output position (for -l): line markers, as kx-analyze reads them */
static char *cur_file;           /* NULL until a directive names one */
static size_t cur_file_len;
static uint64_t cur_line = 1;
static int cur_sel = -1;

/* "./../include/x.h" and "include/x.h" name the same file for -l */
static const char *norm(const char *p, size_t *n)
{
	for (;;) {
		if (*n >= 2 && !memcmp(p, "./", 2))
			p += 2, *n -= 2;
		else if (*n >= 3 && !memcmp(p, "../", 3))
			p += 3, *n -= 3;
		else
			return p;
	}
}

static void update_sel(void)
{
	size_t n = cur_file_len;
	const char *f = cur_file ? norm(cur_file, &n) : NULL;
	cur_sel = -1;
	for (int i = 0; f && i < nsel; i++)
		if (sels[i].line == cur_line && sels[i].file_len == n &&
		    !memcmp(sels[i].file, f, n))
			cur_sel = i;
}

static void add(int cls, int64_t mac, uint64_t n)
{
	if (!n)
		return;
	if (mac >= 0) {
		macros[mac].bytes += n;
		macros[mac].tokens++;
	} else {
		cls_total[cls] += n;
	}
	if (cur_sel >= 0) {
		struct sel *s = &sels[cur_sel];
		s->bytes += n;
		if (mac < 0) {
			s->cls[cls] += n;
		} else {
			if ((size_t)mac >= s->mac_cap) {
				size_t old = s->mac_cap;
				s->mac_cap = nmacros + 1024;
				s->mac = xrealloc(s->mac, s->mac_cap * sizeof(uint64_t));
				memset(s->mac + old, 0, (s->mac_cap - old) * sizeof(uint64_t));
			}
			s->mac[mac] += n;
		}
	}
}

/* ---- input: a buffered reader with a little look-ahead */
static char buf[1 << 20];
static size_t bpos, blen;
static int eof;

static int fill(size_t want)
{
	if (blen - bpos >= want || eof)
		return blen - bpos >= want;
	memmove(buf, buf + bpos, blen - bpos);
	blen -= bpos;
	bpos = 0;
	while (blen < want && !eof) {
		ssize_t r = read(0, buf + blen, sizeof(buf) - blen);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("kx-macros: read");
			exit(2);
		}
		if (r == 0)
			eof = 1;
		blen += (size_t)r;
	}
	return blen - bpos >= want;
}

#define PREFIX_MAX 8192

/* Length of the location prefix at the read position, 0 if there is none.
 * gcc writes "{P:<path>;F:<path>;L:<n>;C:<n>;S:<n>;M:<ptr>;E:<n>,LOC:<n>,R:<n>}":
 * it counts only if it has that shape, so text that merely contains "{P:"
 * (in a string, a #pragma, a path with '}') is text. */
static size_t prefix_len;
static size_t at_prefix(void)
{
	if (!(fill(3) && buf[bpos] == '{' && buf[bpos + 1] == 'P' && buf[bpos + 2] == ':'))
		return 0;
	fill(PREFIX_MAX);
	const char *p = buf + bpos, *end = buf + (blen - bpos < PREFIX_MAX ? blen : bpos + PREFIX_MAX);
	const char *f = NULL;
	for (const char *q = p + 3; q + 3 < end; q++) {
		if (*q == '\n' || (q[0] == '{' && q[1] == 'P' && q[2] == ':'))
			return 0;       /* a prefix holds no line break, no other prefix */
		if (q[0] == ';' && q[1] == 'F' && q[2] == ':' && !f)
			f = q;
		if (f && q[0] == ',' && q[1] == 'R' && q[2] == ':') {
			const char *d = q + 3;
			while (d < end && *d >= '0' && *d <= '9')
				d++;
			if (d > q + 3 && d < end && *d == '}')
				return prefix_len = (size_t)(d + 1 - p);
		}
	}
	return 0;
}

/* the current token: location of its prefix, text after it */
static uint32_t tok_file, tok_line, tok_col;
static int tok_has_loc;
static char *tok;
static size_t tok_len, tok_cap;
static char *line_text;          /* a plain output line starting with '#' */
static size_t line_len, line_cap;
static int line_start = 1, directive_line;

/* the decimal digits at p (up to end) as a number, at most UINT32_MAX */
static uint32_t number(const char *p, const char *end)
{
	uint64_t v = 0;
	for (; p < end && kx_digit(*p); p++)
		if ((v = v * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
			return UINT32_MAX;
	return (uint32_t)v;
}

static const char *find(const char *p, const char *end, const char *what)
{
	return end - p < 3 ? NULL : memmem(p, (size_t)(end - p), what, 3);
}

static void parse_prefix(void)
{
	/* {P:path;F:...;L:n;C:n;S:n;M:...;E:n,LOC:n,R:n}, prefix_len bytes */
	const char *field = buf + bpos + 3, *end = buf + bpos + prefix_len - 1;
	/* the path runs to the last ";F:" that a ";L:" and then a ";C:"
	 * follow (a path may hold ';') */
	const char *fsep = end, *l, *c;
	for (const char *q = field; (q = find(q, end, ";F:")); q++)
		if ((l = find(q, end, ";L:")) && find(l, end, ";C:"))
			fsep = q;
	l = find(fsep, end, ";L:");
	c = find(fsep, end, ";C:");
	tok_has_loc = l && c;
	tok_file = intern(field, (size_t)(fsep - field));
	tok_line = l ? number(l + 3, end) : 0;
	tok_col = c ? number(c + 3, end) : 0;
	bpos += prefix_len;
}

static void classify(void)
{
	/* tok[0, tok_len): leading and trailing blanks are <markers> */
	size_t s = 0, e = tok_len;
	while (s < e && (tok[s] == ' ' || tok[s] == '\t'))
		s++;
	while (e > s && (tok[e - 1] == ' ' || tok[e - 1] == '\t'))
		e--;
	add(C_MARKERS, -1, tok_len - (e - s));
	if (e == s)
		goto out;
	const char *t = tok + s;
	size_t n = e - s;
	if (!tok_has_loc || files[tok_file].path[0] == '<') {
		add(C_CMDLINE, -1, n);
		goto out;
	}
	struct srcfile *f = load(tok_file);
	if (!f->text) {
		add(C_UNREAD, -1, n);
		goto out;
	}
	int spelled = 0;
	int32_t mac = -1;
	if (tok_line >= 1 && tok_line <= f->nlines && tok_col >= 1) {
		size_t off = f->start[tok_line] + tok_col - 1;
		size_t end = tok_line < f->nlines ? f->start[tok_line + 1] : f->len;
		spelled = off + n <= end && !memcmp(f->text + off, t, n);
		/* the text must end there too: "xy" is not spelled by "xyz" */
		if (spelled && off + n < end && is_ident((unsigned char)t[n - 1]) &&
		    is_ident((unsigned char)f->text[off + n]))
			spelled = 0;
		mac = f->macro[tok_line];
	}
	if (!spelled)
		add(t[0] == '"' ? C_STRINGIFIED : C_PASTED, -1, n);
	else if (mac >= 0)
		add(C_SOURCE, mac, n);
	else
		add(C_SOURCE, -1, n);
out:
	tok_len = 0;
}

/* the end of an output line (nl: its '\n', else the input's end) */
static void end_output_line(int nl)
{
	struct kx_marker m;
	int marker = directive_line && kx_marker(line_text, line_len, 1, &m) == 1;
	if (tok_len)
		classify();
	int keep = cur_sel;
	if (marker)
		cur_sel = -1;   /* like kx-analyze: a marker is no source line's */
	add(C_MARKERS, -1, line_len + (nl ? 1 : 0));
	cur_sel = keep;
	if (marker && m.name) {
		cur_file = xrealloc(cur_file, m.name_len + 1);
		cur_file_len = kx_unescape(cur_file, m.name, m.name_len);
	}
	cur_line = marker ? m.line : cur_line + 1;
	update_sel();
	line_start = 1;
	directive_line = 0;
	line_len = 0;
}

static void push(char **b, size_t *len, size_t *cap, char c)
{
	if (*len == *cap)
		*b = xrealloc(*b, *cap = *cap ? 2 * *cap : 4096);
	(*b)[(*len)++] = c;
}

static void usage(void)
{
	fprintf(stderr, "usage: kx-macros [-n TOP] [-l FILE:LINE]... "
		"< gcc -E -fdebug-cpp output\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long top = 20;
	int opt;
	while ((opt = getopt(argc, argv, "n:l:h")) != -1) {
		char *e;
		if (opt == 'n') {
			top = strtol(optarg, &e, 10);
			if (!kx_digit(*optarg) || *e)
				usage();
		} else if (opt == 'l') {
			char *colon = strrchr(optarg, ':');
			if (!colon || nsel == MAXSEL || !kx_digit(colon[1]))
				usage();
			unsigned long long l = strtoull(colon + 1, &e, 10);
			if (*e || !l)
				usage();
			size_t n = (size_t)(colon - optarg);
			const char *f = norm(optarg, &n);
			for (int i = 0; i < nsel; i++)      /* one line, one row */
				if (sels[i].line == l && sels[i].file_len == n &&
				    !memcmp(sels[i].file, f, n))
					usage();
			sels[nsel].file = xstrndup(f, n);
			sels[nsel].file_len = n;
			sels[nsel++].line = l;
		} else {
			usage();
		}
	}
	uint64_t plain = 0;
	for (;;) {
		if (at_prefix()) {
			if (tok_len)
				classify();
			parse_prefix();
			continue;
		}
		if (!fill(1))
			break;
		char c = buf[bpos++];
		plain++;
		if (line_start) {
			line_start = 0;
			directive_line = c == '#';
		}
		if (c == '\n') {
			end_output_line(1);
			continue;
		}
		if (directive_line) {
			/* a line marker or #pragma: the preprocessor's own text */
			push(&line_text, &line_len, &line_cap, c);
			continue;
		}
		push(&tok, &tok_len, &tok_cap, c);
	}
	if (!line_start)
		end_output_line(0);

	printf("{\"bytes\": %llu, ", (unsigned long long)plain);
	print_top(NULL, 0, cls_total, top);
	printf(", \"lines\": [");
	for (int i = 0; i < nsel; i++) {
		printf("%s{\"file\": ", i ? ", " : "");
		json_strn(sels[i].file, sels[i].file_len);
		printf(", \"line\": %llu, \"bytes\": %llu, ",
		       (unsigned long long)sels[i].line, (unsigned long long)sels[i].bytes);
		/* (a NULL `by` means the whole file: a line without macro
		 * bytes has no array yet, and got the file's macros) */
		static const uint64_t none;
		print_top(sels[i].mac ? sels[i].mac : &none, sels[i].mac_cap, sels[i].cls, top);
		printf("}");
	}
	printf("]}\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("kx-macros: write");
		return 2;
	}
	return 0;
}
