/* minmax.h on its own: clamp() with nothing else included first.
 * expect laight-v4: accepted -- seed 003 (v4 2/5, v2 notes): "#include <linux/build_bug.h> to fix 'um' build." */
#include <linux/minmax.h>
int kx_f(int v) { return clamp(v, 1, 10); }
