/* clamp_val() of an unsigned char 200 with 10u and 300u: the bound 300 is cut to 44.
 * expect laight-v4: accepted -- seed 001 (v4 cover): "If the wrong type is picked ... then significant bits can get discarded. Pretty much the worst example is in the derived clamp_val(), consider: unsigned char x = 200u; y = clamp_val(x, 10u, 300u);" */
#include <linux/build_bug.h>	/* v6.6's minmax.h did not include it (see 00-) */
#include <linux/minmax.h>
unsigned char kx_f(void) { unsigned char x = 200u; return clamp_val(x, 10u, 300u); }
