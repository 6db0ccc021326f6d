/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DEMO_H
#define _DEMO_H

#define demo_min(x, y) ((x) < (y) ? (x) : (y))
#define demo_max(x, y) ((x) > (y) ? (x) : (y))

#endif /* _DEMO_H */
