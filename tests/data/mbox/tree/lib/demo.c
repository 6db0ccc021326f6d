// SPDX-License-Identifier: GPL-2.0
#include "../include/demo.h"

int demo_clamp(int v, int lo, int hi)
{
	return demo_min(demo_max(v, lo), hi);
}
