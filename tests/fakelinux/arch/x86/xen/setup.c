#include <linux/minmax.h>

unsigned long xen_memory_setup(unsigned long max_pfn, unsigned long extra_pages,
			       unsigned long max_pages)
{
	extra_pages = min3(2 * min(max_pfn, 1UL << 40),
			   extra_pages, max_pages - max_pfn);
	return extra_pages;
}
