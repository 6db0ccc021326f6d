/* min(1, 2) as the size of a file-scope array: needs an integer constant expression outside any function.
 * expect torvalds-fixes: rejected -- 017fa3e89187: "no longer making them work in the context of a C constant expression" (min_t); the statement-expression branch never parsed at file scope */
#include <linux/minmax.h>
char kx_buf[min(1, 2)];
