/* min(int, unsigned int): mixed signedness, both variables.
 * expect laight-v4: rejected -- seed 003 (v4 2/5): "Replace the 'same type' check with a 'same signedness' check. The new test isn't itself a compile time error, so use static_assert() to report the error and give a meaningful error message." */
#include <linux/minmax.h>
int kx_f(int a, unsigned int b) { return min(a, b); }
