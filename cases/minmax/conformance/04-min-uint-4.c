/* min(unsigned_var, 4): unsigned variable against a non-negative signed constant.
 * expect laight-v4: accepted -- seed 001 (v4 cover): "Patch 5 (rewritted for v4) allows comparisons of unsigned values against non-negative constant integer expressions. This makes min(unsigned_int_var, 4) be ok." */
#include <linux/minmax.h>
unsigned int kx_f(unsigned int a) { return min(a, 4); }
