#include <linux/minmax.h>

unsigned long fast_find(unsigned long pfn, unsigned long start)
{
	return max(start, pfn & ~511UL);
}
