/* fakelinux minmax.h: a strict min() that the case patches make bigger. */
#ifndef _LINUX_MINMAX_H
#define _LINUX_MINMAX_H

#define __cmp(x, y, op)	((x) op (y) ? (x) : (y))
#define min(x, y)	__cmp(x, y, <)
#define max(x, y)	__cmp(x, y, >)
#define min3(x, y, z)	min((typeof(x))min(x, y), z)

#endif
