/* min_t() in a static initializer (a static inside a function).
 * expect laight-v4: accepted -- 017fa3e89187 says it was possible until then
 * expect torvalds-fixes: rejected -- 017fa3e89187: "you can no longer use them for static initializers or for array sizes" */
#include <linux/minmax.h>
int kx_f(void) { static int v = min_t(int, 1, 2); return v; }
