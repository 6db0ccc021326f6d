/* MIN_T() in a static initializer: the macro made for "core simple constants".
 * expect torvalds-fixes: accepted -- seed 011 (017fa3e89187): "you can no longer use them for static initializers or for array sizes in type definitions, but there were only a couple of such uses, and all of them were converted (famous last words) to use MIN_T/MAX_T instead." */
#include <linux/minmax.h>
static unsigned int kx_v = MIN_T(unsigned int, 11, 7);
unsigned int kx_f(void) { return kx_v; }
