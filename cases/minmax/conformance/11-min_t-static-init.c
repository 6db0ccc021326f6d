/* min_t() in a static initializer.
 * expect torvalds-fixes: rejected -- 017fa3e89187: "you can no longer use them for static initializers or for array sizes" */
#include <linux/minmax.h>
static int kx_v = min_t(int, 1, 2);
int kx_f(void) { return kx_v; }
