/* min(1, 2) as the size of a file-scope array: needs an integer constant expression outside any function. */
#include <linux/minmax.h>
char kx_buf[min(1, 2)];
