/* min(int, unsigned int): mixed signedness, both variables.
 * expect laight-v4: rejected -- v4 2/5: "Replace the 'same type' check with a 'same signedness' check" */
#include <linux/minmax.h>
int kx_f(int a, unsigned int b) { return min(a, b); }
