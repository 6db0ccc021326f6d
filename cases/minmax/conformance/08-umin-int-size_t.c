/* umin(int, size_t): the escape hatch for a signed value known to be >= 0.
 * expect laight-v4: accepted -- seed 002 (v4 1/5): "These can be used when min()/max() errors a signed v unsigned compare when the signed value is known to be non-negative." */
#include <linux/minmax.h>
#include <linux/types.h>
size_t kx_f(int a, size_t b) { return umin(a, b); }
