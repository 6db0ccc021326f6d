/* enospc.so: a full disk, for one directory only (LD_PRELOAD). Every
 * write(2) to a file whose path starts with $ENOSPC_UNDER fails with
 * ENOSPC, as on a full file system; other writes are untouched. Used by
 * tests/test_trust.py instead of mounting a small tmpfs, which a test
 * machine may not allow. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int full(int fd)
{
	const char *under = getenv("ENOSPC_UNDER");
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (!under || !*under)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strncmp(path, under, strlen(under)) == 0;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (full(fd)) {
		errno = ENOSPC;
		return -1;
	}
	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	return real(fd, buf, count);
}
