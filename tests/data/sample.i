# 0 "../arch/x86/xen/setup.c"
# 0 "<built-in>"
# 0 "<command-line>"
# 1 "./include/generated/autoconf.h" 1
# 1 "<command-line>" 2
# 1 "../arch/x86/xen/setup.c"
# 1 "../include/linux/minmax.h" 1



static inline int in_range32(int a) { return a; }
# 10 "../arch/x86/xen/setup.c" 2

int f(int a, int b)
{
 return __builtin_choose_expr(1, a, b) + ({ int __UNIQUE_ID_x_1 = a; __UNIQUE_ID_x_1; });
}
#pragma GCC diagnostic push
int g;
