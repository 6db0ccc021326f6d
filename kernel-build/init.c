/*
 * kexpand's initramfs /init: load the minmax KUnit module, read the kernel
 * log, print one verdict line, and reboot (QEMU runs with -no-reboot, so
 * the machine ends and QEMU exits by itself).
 *
 * Built static: gcc -static -Os -o init init.c
 *
 * The verdict line, parsed by kernel-build/boot.py:
 *   KEXPAND-VERDICT: suite=<name> pass=N fail=N skip=N total=N status=<s>
 * status: ok, fail (a test failed), nosuite (no KUnit summary found),
 * noload (the module did not load).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MODULE "/minmax_kunit.ko"
#define SUITE "kexpand-minmax"

static void finish(void)
{
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

int main(void)
{
	struct utsname u;
	static char log[1 << 20];

	uname(&u);
	printf("KEXPAND-INIT: reached /init, kernel %s\n", u.release);
	fflush(stdout);

	int fd = open(MODULE, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0) {
		printf("KEXPAND-VERDICT: suite=%s pass=0 fail=0 skip=0 total=0 "
		       "status=noload error=\"%s\"\n", SUITE, strerror(errno));
		finish();
	}
	close(fd);

	/* the suite ran during the module's init; its summary is in the log:
	 *   # kexpand-minmax: pass:8 fail:0 skip:1 total:9 */
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
	if (n < 0)
		n = 0;
	log[n] = 0;
	char *s = strstr(log, "# " SUITE ": pass:");
	int pass = 0, fail = 0, skip = 0, total = 0;
	if (!s || sscanf(s, "# " SUITE ": pass:%d fail:%d skip:%d total:%d",
			 &pass, &fail, &skip, &total) != 4) {
		printf("KEXPAND-VERDICT: suite=%s pass=0 fail=0 skip=0 total=0 "
		       "status=nosuite\n", SUITE);
		finish();
	}
	printf("KEXPAND-VERDICT: suite=%s pass=%d fail=%d skip=%d total=%d "
	       "status=%s\n", SUITE, pass, fail, skip, total,
	       fail ? "fail" : "ok");
	finish();
	return 0;
}
