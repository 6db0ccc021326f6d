/* nested min3(), the shape of the xen setup.c line.
 * expect laight-v4: accepted -- seed 007 (e8432ac802a0): "The xen setup.c file ended up ballooning to over 50MB of preprocessed noise that takes 15s to compile (obviously depending on the build host), largely due to one single line." */
#include <linux/minmax.h>
unsigned long kx_f(unsigned long a, unsigned long b, unsigned long c, unsigned long d)
{ return min3(16 * min(a, b), c, d - a); }
