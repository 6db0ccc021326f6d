/* min(int_var, 4u): signed variable against an unsigned constant.
 * expect laight-v4: rejected -- v4 cover: "Patch 5 no longer allows min(int_var, 4u), only min(uint_var, 4)" */
#include <linux/minmax.h>
int kx_f(int a) { return min(a, 4u); }
