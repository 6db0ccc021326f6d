/* nested min3(), the shape of the xen setup.c line.
 * expect laight-v4: accepted -- e8432ac802a0 splits the line for speed, not correctness */
#include <linux/minmax.h>
unsigned long kx_f(unsigned long a, unsigned long b, unsigned long c, unsigned long d)
{ return min3(16 * min(a, b), c, d - a); }
