/* min(unsigned_var, sizeof(x)): unsigned int against size_t.
 * expect laight-v4: accepted -- v4 cover: "This makes min(unsigned_int_var, sizeof()) be ok" */
#include <linux/minmax.h>
unsigned long kx_f(unsigned int a) { long x; return min(a, sizeof(x)); }
