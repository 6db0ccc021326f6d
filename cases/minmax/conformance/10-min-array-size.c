/* min(1, 2) as the size of an array on the stack: constant, or a VLA (-Wvla)?
 * expect pre-6.7: accepted -- v6.6 minmax.h: "retain result as a constant expressions ... (to avoid tripping VLA warnings in stack allocation usage)"
 * expect laight-v4: accepted -- v4 cover notes only relax type checks */
#include <linux/minmax.h>
int kx_f(void) { char buf[min(1, 2)]; buf[0] = 0; return buf[0]; }
