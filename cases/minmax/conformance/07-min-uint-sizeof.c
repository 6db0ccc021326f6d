/* min(unsigned_var, sizeof(x)): unsigned int against size_t.
 * expect laight-v4: accepted -- seed 001 (v4 cover): "Patch 2 replaces the 'same type' check with a 'same signedness' one. This makes min(unsigned_int_var, sizeof()) be ok." */
#include <linux/minmax.h>
unsigned long kx_f(unsigned int a) { long x; return min(a, sizeof(x)); }
