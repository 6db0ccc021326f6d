/* min(int_var, 4u): signed variable against an unsigned constant.
 * expect laight-v4: rejected -- seed 001 (v4 cover): "v4: Patch 5 no longer allows min(int_var, 4u), only min(uint_var, 4)." */
#include <linux/minmax.h>
int kx_f(int a) { return min(a, 4u); }
