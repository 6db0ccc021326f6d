/* min(int_var, sizeof(x)): signed variable against an unsigned constant below INT_MAX.
 * expect laight-v4: rejected -- seed 001 (v4 cover): "The only common case that is still errored is the comparison of signed values against unsigned constant integer expressions below __INT_MAX__. Typcally min(int_val, sizeof (foo))" */
#include <linux/minmax.h>
int kx_f(int a) { long x; return min(a, sizeof(x)); }
