/* fakelinux */
#include <linux/minmax.h>
