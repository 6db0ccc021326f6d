/* MIN_T() in a static initializer: the macro made for "core simple constants".
 * expect torvalds-fixes: accepted -- 3a7e02c040b1: "I've added 'MIN_T()' and 'MAX_T()' macros for this kind of core simple constant" */
#include <linux/minmax.h>
static unsigned int kx_v = MIN_T(unsigned int, 11, 7);
unsigned int kx_f(void) { return kx_v; }
