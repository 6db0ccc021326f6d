/* min(u8, int): unsigned char promotes to int.
 * expect laight-v4: accepted -- seed 005 (v4 4/5): "Since 'unsigned char/short' get promoted to 'signed int' it is safe to compare them against an 'int' value." */
#include <linux/minmax.h>
#include <linux/types.h>
int kx_f(u8 a, int b) { return min(a, b); }
