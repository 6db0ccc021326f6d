/* min(unsigned_var, 4): unsigned variable against a non-negative signed constant.
 * expect laight-v4: accepted -- v4 cover: "This makes min(unsigned_int_var, 4) be ok" */
#include <linux/minmax.h>
unsigned int kx_f(unsigned int a) { return min(a, 4); }
