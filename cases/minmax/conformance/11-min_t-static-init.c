/* min_t() in a static initializer (a static inside a function).
 * expect laight-v4: accepted -- seed 011 (017fa3e89187): "you can no longer use them for static initializers ... but there were only a couple of such uses"
 * expect torvalds-fixes: rejected -- seed 011 (017fa3e89187): "This simplifies the min_t() and max_t() macros by no longer making them work in the context of a C constant expression. That means that you can no longer use them for static initializers" */
#include <linux/minmax.h>
int kx_f(void) { static int v = min_t(int, 1, 2); return v; }
