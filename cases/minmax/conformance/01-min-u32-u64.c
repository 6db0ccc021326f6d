/* min(u32, u64): same signedness, different widths.
 * expect laight-v4: accepted -- seed 003 (v4 2/5): "However it also rejects 'unsigned int' v 'unsigned long' compares which are common and never problematc. Replace the 'same type' check with a 'same signedness' check." */
#include <linux/minmax.h>
#include <linux/types.h>
u64 kx_f(u32 a, u64 b) { return min(a, b); }
