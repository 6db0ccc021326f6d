/*
 * kx-cc: the compiler wrapper with which Kbuild drives a scan.
 *
 *   make O=<dir> CC="<path>/kx-cc gcc" HOSTCC="<path>/kx-cc --host gcc" \
 *        compile_commands.json
 *
 * Every command is the compiler's, run as given, except the compile of a
 * C file into an object (-c, -o X.o, the last argument X.c: Kbuild's
 * cmd_cc_o_c). For that one kx-cc runs the same command with -E, to stdout,
 * through kx-analyze (with its -n and -H), and keeps the measurement in
 * <dir of X>/.<X>.o.kx.json. A kernel object's -E with gcc runs with
 * -ftrack-macro-expansion=0 (track_off() in kx-ccargs.h says why, when;
 * `kx-cc --e-flags COMPILER ARGS...` prints what it adds, for other -E runs):
 *
 *   {"argv": [the compile command, the wrapper left out],
 *    "status": "ok" | "error", "reason": "error" | "time limit" | "memory limit",
 *    "error": the preprocessor's last messages (errors only),
 *    "seconds": wall time of the pipe, "cpp_cpu_s": the preprocessor's CPU,
 *    "analysis": kx-analyze's output, as it wrote it (ok only)}
 *
 * The -E run keeps Kbuild's -Wp,-MMD,<depfile>, so fixdep finds the
 * dependencies it needs and Kbuild's rebuild rules (command and files)
 * decide what a later run measures again. The object Kbuild waits for is
 * an empty ELF relocatable file, unless the object is one a later step
 * reads (a directory in KX_SCAN_REAL, -m16/-m32 code, or a host
 * program's object: --host): that one is compiled for real after it was
 * measured. A file that does not
 * preprocess is a measurement ("error"), not a failed build: its record
 * says why, its dependency list names a file that never exists, so that
 * every run measures it again, and the build goes on.
 *
 * Environment (a scan sets it; without KX_SCAN_ANALYZE kx-cc only runs
 * the compiler): KX_SCAN_ANALYZE the analyzer, KX_SCAN_TOP its -n,
 * KX_SCAN_REAL ':'-separated directory prefixes of real objects,
 * KX_SCAN_TIME seconds and KX_SCAN_MEM MiB of address space per -E run
 * (E_TIME_LIMIT=, E_MEM_LIMIT=). Exit: the compiler's, or 2 when kx-cc
 * itself cannot go on (the analyzer failed, a file cannot be written).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kx-ccargs.h"
#include "kx-elf.h"
#include "kx-json.h"

#define FORCE_DEP "kexpand-measure-again"

/* The preprocessor stays in make's process group, so that whatever ends
 * the build (a signal to the group, the sandbox's end) ends cc1 too; past
 * the time limit kx-cc ends the preprocessor and what it started (cc1),
 * found through /proc. */
static void kill_tree(pid_t root)
{
	pid_t pids[256];
	int n = 0;
	pids[n++] = root;
	for (int i = 0; i < n; i++) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d)) && n < 256) {
			char path[300], buf[512];
			int ppid;
			snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
			FILE *f = fopen(path, "r");
			if (!f)
				continue;
			size_t k = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[k] = 0;
			char *close = strrchr(buf, ')');	/* the name may hold anything */
			if (close && sscanf(close + 2, "%*c %d", &ppid) == 1 && ppid == pids[i])
				pids[n++] = atoi(e->d_name);
		}
		if (d)
			closedir(d);
	}
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
}

static void die(const char *what)
{
	fprintf(stderr, "kx-cc: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

/* the object's path with "." prepended to its name and `suffix` added */
static char *dotname(const char *obj, const char *suffix)
{
	const char *slash = strrchr(obj, '/');
	size_t dir = slash ? (size_t)(slash - obj + 1) : 0;
	char *p;
	if (asprintf(&p, "%.*s.%s%s", (int)dir, obj, obj + dir, suffix) < 0)
		die("asprintf");
	return p;
}

static void set_limit(int res, unsigned long v)
{
	struct rlimit r = { v, v };
	if (v)
		setrlimit(res, &r);
}

/* the child side of a fork: stdin/stdout as given, then exec */
static pid_t start(char **argv, int in, int out, int err, int group)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid)
		return pid;
	if (in >= 0)
		dup2(in, 0);
	if (out >= 0)
		dup2(out, 1);
	if (err >= 0)
		dup2(err, 2);
	if (group) {		/* the preprocessor: its limits */
		unsigned long mem = strtoul(getenv("KX_SCAN_MEM") ? getenv("KX_SCAN_MEM") : "0",
					    NULL, 10);
		unsigned long cpu = strtoul(getenv("KX_SCAN_TIME") ? getenv("KX_SCAN_TIME") : "0",
					    NULL, 10);
		set_limit(RLIMIT_AS, mem << 20);
		set_limit(RLIMIT_CPU, cpu);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "kx-cc: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* wait for both children until `deadline`; past it, kill both.
 * Returns 1 if the deadline passed. */
static int wait_both(pid_t cpp, int *cst, struct rusage *ru, pid_t ana, int *ast,
		     double deadline)
{
	int left = 2, late = 0;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	while (left) {
		pid_t p;
		int st;
		struct rusage r;
		while ((p = wait4(-1, &st, WNOHANG, &r)) > 0) {
			if (p == cpp)
				*cst = st, *ru = r, left--;
			else if (p == ana)
				*ast = st, left--;
		}
		if (!left)
			break;
		double t = deadline - now();
		if (t <= 0 && !late) {
			late = 1;
			kill_tree(cpp);
			kill(ana, SIGKILL);
			continue;
		}
		struct timespec ts = { late ? 1 : (time_t)t, late ? 0 : (long)((t - (time_t)t) * 1e9) };
		sigtimedwait(&set, NULL, &ts);   /* SIGCHLD is blocked: it waits here */
	}
	return late;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;
	*n = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*n + 65536 > cap && !(buf = realloc(buf, cap = 2 * cap + 65536)))
			die("realloc");
		size_t k = fread(buf + *n, 1, cap - *n, f);
		if (!k)
			break;
		*n += k;
	}
	fclose(f);
	return buf;
}

static void write_record(const char *path, char **argv, int argc, const char *status,
			 const char *reason, const char *err, size_t errn, double secs,
			 double cpu, const char *analysis, size_t an)
{
	char *tmp;
	if (asprintf(&tmp, "%s.part", path) < 0)
		die("asprintf");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(tmp);
	fflush(stdout);
	int saved = dup(1);
	dup2(fd, 1);
	close(fd);
	printf("{\"argv\": [");
	for (int i = 0; i < argc; i++) {
		printf(i ? ", " : "");
		json_str(argv[i]);
	}
	printf("], \"status\": \"%s\", \"reason\": \"%s\", \"seconds\": %.4f, "
	       "\"cpp_cpu_s\": %.3f", status, reason, secs, cpu);
	if (err) {
		printf(", \"error\": ");
		json_strn(err, errn);
	}
	if (analysis) {
		printf(", \"analysis\": ");
		fwrite(analysis, 1, an, stdout);
	}
	printf("}\n");
	if (fflush(stdout) || ferror(stdout))
		die(tmp);
	dup2(saved, 1);
	close(saved);
	if (rename(tmp, path))
		die(path);
	free(tmp);
}

static int run_wait(char **argv)
{
	int st;
	pid_t p = start(argv, -1, -1, -1, 0);
	if (waitpid(p, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kx-cc [--host] COMPILER [ARGS...]\n"
				"       kx-cc --e-flags COMPILER [ARGS...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "--e-flags")) {
		/* what this wrapper adds to the -E of kernel compile command
		 * argv[2..] (not --host: a host command's -E is left as given);
		 * macros.py's -E -fdebug-cpp matches the scan's bytes this way */
		const char *x = argc > 2 ? e_flag(argv + 2, argc - 2) : NULL;
		if (x)
			puts(x);
		return 0;
	}
	int host = argc > 2 && !strcmp(argv[1], "--host");
	char **cc = argv + 1 + host;
	int n = argc - 1 - host, c = 0;
	const char *obj = NULL, *src = cc[n - 1];
	for (int i = 1; i < n; i++) {
		if (!strcmp(cc[i], "-c"))
			c = 1;
		else if (!strcmp(cc[i], "-o") && i + 1 < n)
			obj = cc[i + 1];
	}
	const char *ana = getenv("KX_SCAN_ANALYZE");
	if (!ana || !c || !obj || !ends_with(obj, ".o") || !ends_with(src, ".c") || n < 3) {
		execvp(cc[0], cc);
		fprintf(stderr, "kx-cc: cannot run %s: %s\n", cc[0], strerror(errno));
		return 127;
	}

	/* the same command, -E to stdout: -c and -o X left out, then -E -o - X.c */
	char **e = calloc(n + 5, sizeof(*e));
	int k = 0;
	for (int i = 0; i < n - 1; i++) {
		if (!strcmp(cc[i], "-c"))
			continue;
		if (!strcmp(cc[i], "-o")) {
			i++;
			continue;
		}
		e[k++] = cc[i];
	}
	const char *x = host ? NULL : e_flag(cc, n);
	if (x)
		e[k++] = (char *)x;
	e[k++] = "-E", e[k++] = "-o", e[k++] = "-", e[k++] = (char *)src;
	char *top = getenv("KX_SCAN_TOP") ? getenv("KX_SCAN_TOP") : "5";
	char *a[] = { (char *)ana, "-n", top, "-H", NULL };

	char *rec = dotname(obj, ".kx.json"), *out = dotname(obj, ".kx.out"),
		*errp = dotname(obj, ".kx.err");
	int p[2], ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		efd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (ofd < 0 || efd < 0 || pipe(p))
		die(out);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	unsigned long limit = strtoul(getenv("KX_SCAN_TIME") ? getenv("KX_SCAN_TIME") : "0",
				      NULL, 10);
	double t0 = now();
	pid_t cpp = start(e, -1, p[1], efd, 1);
	close(p[1]);
	pid_t an = start(a, p[0], ofd, -1, 0);
	close(p[0]);
	close(ofd);
	close(efd);
	int cst = 0, ast = 0;
	struct rusage ru = { 0 };
	int late = wait_both(cpp, &cst, &ru, an, &ast, limit ? t0 + limit : 1e18);
	double secs = now() - t0;
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	sigprocmask(SIG_UNBLOCK, &set, NULL);

	size_t en = 0, on = 0;
	char *err = slurp(errp, &en), *res = slurp(out, &on);
	const char *reason = "error";
	if (late || (WIFSIGNALED(cst) && WTERMSIG(cst) == SIGXCPU))
		reason = "time limit";
	else if (!(WIFEXITED(cst) && !WEXITSTATUS(cst)) && err &&
		 (memmem(err, en, "out of memory", 13) || memmem(err, en, "virtual memory exhausted", 24)
		  || memmem(err, en, "bad_alloc", 9)))
		reason = "memory limit";
	int ok = !late && WIFEXITED(cst) && !WEXITSTATUS(cst);
	if (ok && !(WIFEXITED(ast) && !WEXITSTATUS(ast))) {
		fprintf(stderr, "kx-cc: kx-analyze failed on %s:\n%.*s", src,
			(int)(en > 2000 ? 2000 : en), err ? err : "");
		return 2;
	}
	const char *tail = err;
	if (err && en > 4000)
		tail = err + en - 4000, en = 4000;
	write_record(rec, cc, n, ok ? "ok" : "error", ok ? "" : reason, ok ? NULL : tail,
		     en, secs, cpu, ok ? res : NULL, on);
	if (err && en)
		fwrite(tail, 1, en, stderr);    /* warnings and errors, as a build shows them */
	unlink(out);
	unlink(errp);

	const char *dep = depfile(cc, n);
	if (!ok && dep) {
		/* measured again by every run: a file named here never exists */
		FILE *d = fopen(dep, "w");
		if (!d || fprintf(d, "%s: %s %s\n", obj, src, FORCE_DEP) < 0 || fclose(d))
			die(dep);
	}
	if (host || in_real_dir(obj, cc, n))
		return run_wait(cc);
	if (empty_object(obj))
		die(obj);
	return 0;
}
