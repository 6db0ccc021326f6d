/* kx-ccargs.h: what kx-cc reads off a compile command (argv, argc: the
 * compiler and its arguments, kx-cc's own --host left out). Static
 * functions for kx-cc.c alone. */
#ifndef KX_CCARGS_H
#define KX_CCARGS_H

#include <stdlib.h>
#include <string.h>

/* the file named by Kbuild's -Wp,-MMD,<file> (or -MD), or NULL */
static const char *depfile(char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "-Wp,-MMD,", 9) || !strncmp(argv[i], "-Wp,-MD,", 8))
			return strchr(argv[i] + 4, ',') + 1;
	return NULL;
}

/* Whether the -E run may leave gcc's macro-location tracking off
 * (-ftrack-macro-expansion=0): gcc tracks where each token of an expansion
 * came from, for its diagnostics, and with deep macros that is most of
 * cc1's -E time (6.1's setup.c at laight-v4: 15.1 s, 2.7 s without; a
 * whole defconfig scan's -E one third less). The output is the same
 * without it, but for two things tracking decides: whether a token comes
 * from a system header (a kernel command, -nostdinc without -isystem or
 * -idirafter, has none; a host program's has), and the value of __LINE__
 * inside the arguments of a macro call that spans lines (the line of the
 * call's first line without it). So: gcc only (clang has no such option),
 * with -nostdinc, and nothing that names a system directory, even inside
 * -Wp, (a header's own #pragma GCC system_header is not seen here; the
 * packaged trees have none). */
static int track_off(char **argv, int argc)
{
	/* a system dir, or tracking the command sets itself */
	static const char *const keep[] = { "-isystem", "-idirafter", "-iwithprefix", "sysroot",
					    "-imultilib", "-ftrack-macro-expansion" };
	const char *cc = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int nostdinc = 0;
	if (!strstr(cc, "gcc") || strstr(cc, "clang"))
		return 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-nostdinc"))
			nostdinc = 1;
		for (size_t j = 0; j < sizeof(keep) / sizeof(*keep); j++)
			if (strstr(argv[i], keep[j]))
				return 0;
	}
	return nostdinc;
}

/* what a scan adds to the -E of kernel compile command argv, or NULL */
static const char *e_flag(char **argv, int argc)
{
	return track_off(argv, argc) ? "-ftrack-macro-expansion=0" : NULL;
}

static int in_real_dir(const char *obj, char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "-m16") || !strcmp(argv[i], "-m32"))
			return 1;
	const char *real = getenv("KX_SCAN_REAL");
	while (real && *real) {
		size_t n = strcspn(real, ":");
		if (n && !strncmp(obj, real, n))
			return 1;
		real += n + (real[n] == ':');
	}
	return 0;
}

#endif
