/* min(1, 2) as the size of an array on the stack: constant, or a VLA (-Wvla)?
 * expect pre-6.7: accepted -- seed 003 (v4 2/5, minmax.h comment it leaves in place): "retain result as a constant expressions when called with only constant expressions (to avoid tripping VLA warnings in stack allocation usage)."
 * expect laight-v4: accepted -- seed 006 (v4 5/5, minmax.h comment): "Retain result as a constant expressions when called with only constant expressions (to avoid tripping VLA warnings in stack allocation usage)."; seed 008 (2024 cover): "the requirement that min(1,2) be 'constant enough' for an array size." */
#include <linux/minmax.h>
int kx_f(void) { char buf[min(1, 2)]; buf[0] = 0; return buf[0]; }
