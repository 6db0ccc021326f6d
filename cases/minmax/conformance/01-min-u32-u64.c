/* min(u32, u64): same signedness, different widths.
 * expect laight-v4: accepted -- v4 2/5: "it also rejects 'unsigned int' v 'unsigned long' compares which are common and never problematc" */
#include <linux/minmax.h>
#include <linux/types.h>
u64 kx_f(u32 a, u64 b) { return min(a, b); }
