/* min(1, 2) as a file-scope array size: needs an integer constant expression.
 * expect pre-6.7: accepted -- v6.6 minmax.h: "retain result as a constant expressions when called with only constant expressions" */
#include <linux/minmax.h>
char kx_buf[min(1, 2)];
