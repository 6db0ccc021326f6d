/* A test /init that never finishes: for the timeout path of the boot check. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("KEXPAND-INIT: reached /init (hang test)\n");
	fflush(stdout);
	for (;;)
		pause();
}
