// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for include/linux/minmax.h, built out of tree against each
 * kexpand series point, so that one source tests every point.
 *
 * What a point promises about constant expressions differs (min_t() stops
 * being one with Torvalds' 017fa3e89187, min() with the later rework); the
 * expectations come from the case manifest as -D flags at build time (6.1
 * runs a module's KUnit suites before its parameters are parsed):
 *   KX_CONST_MIN=1   min() of constants is an integer constant expression
 *   KX_CONST_MIN_T=1 min_t() of constants is one        (0: is not)
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/types.h>

#ifndef KX_CONST_MIN
#define KX_CONST_MIN -1
#endif
#ifndef KX_CONST_MIN_T
#define KX_CONST_MIN_T -1
#endif
static const int const_min = KX_CONST_MIN;
static const int const_min_t = KX_CONST_MIN_T;

/* Opaque values: the compiler must not fold the comparisons away. */
#define V(type, x) ((type)(*(volatile type *)&(type){ (x) }))

#define SAME_TYPE_CASES(type, lo, hi)					\
	do {								\
		type a = V(type, lo), b = V(type, hi);			\
		KUNIT_EXPECT_TRUE(test, min(a, b) == (type)(lo));	\
		KUNIT_EXPECT_TRUE(test, max(a, b) == (type)(hi));	\
		KUNIT_EXPECT_TRUE(test, min(b, a) == (type)(lo));	\
		KUNIT_EXPECT_TRUE(test, max(b, a) == (type)(hi));	\
		KUNIT_EXPECT_TRUE(test, min(a, a) == (type)(lo));	\
	} while (0)

static void minmax_same_types(struct kunit *test)
{
	SAME_TYPE_CASES(s8, -128, 127);
	SAME_TYPE_CASES(u8, 0, 255);
	SAME_TYPE_CASES(s16, -32768, 32767);
	SAME_TYPE_CASES(u16, 1, 65535);
	SAME_TYPE_CASES(s32, -2147483647 - 1, 5);
	SAME_TYPE_CASES(u32, 7, 4294967295u);
	SAME_TYPE_CASES(s64, -9223372036854775807LL - 1, -1);
	SAME_TYPE_CASES(u64, 0, 18446744073709551615ull);
	SAME_TYPE_CASES(int, -5, -4);
	SAME_TYPE_CASES(long, -100000000000L, 3);
	SAME_TYPE_CASES(unsigned long, 3, ~0ul);
}

static void minmax_three(struct kunit *test)
{
	int a = V(int, -3), b = V(int, 7), c = V(int, 0);
	u64 x = V(u64, 1ull << 40), y = V(u64, 2), z = V(u64, ~0ull);

	KUNIT_EXPECT_EQ(test, min3(a, b, c), -3);
	KUNIT_EXPECT_EQ(test, min3(b, c, a), -3);
	KUNIT_EXPECT_EQ(test, max3(a, b, c), 7);
	KUNIT_EXPECT_EQ(test, max3(c, a, b), 7);
	KUNIT_EXPECT_EQ(test, min3(x, y, z), 2ull);
	KUNIT_EXPECT_EQ(test, max3(x, y, z), ~0ull);
	/* nested, like the xen setup.c line */
	KUNIT_EXPECT_EQ(test, min3(4UL * min(x, y), (u64)b, z), 7ull);
}

static void minmax_typed(struct kunit *test)
{
	int neg = V(int, -1);
	unsigned int big = V(unsigned int, 300);
	u64 wide = V(u64, 0x100000005ull);

	/* min_t()/max_t() convert first: -1 as unsigned is the largest */
	KUNIT_EXPECT_EQ(test, min_t(unsigned int, neg, 5u), 5u);
	KUNIT_EXPECT_EQ(test, max_t(unsigned int, neg, 5u), 0xffffffffu);
	KUNIT_EXPECT_EQ(test, min_t(int, neg, 5), -1);
	KUNIT_EXPECT_EQ(test, max_t(s64, neg, big), 300LL);
	/* truncation by the chosen type: u32 keeps the low bits */
	KUNIT_EXPECT_EQ(test, min_t(u32, wide, 7u), 5u);
	KUNIT_EXPECT_EQ(test, min_t(u8, big, 100), 44);
}

static void minmax_clamp(struct kunit *test)
{
	int v = V(int, -20);
	unsigned char uc = V(unsigned char, 200);
	long l = V(long, 1000);

	KUNIT_EXPECT_EQ(test, clamp(v, -10, 10), -10);
	KUNIT_EXPECT_EQ(test, clamp(-v, -10, 10), 10);
	KUNIT_EXPECT_EQ(test, clamp(V(int, 3), -10, 10), 3);
	KUNIT_EXPECT_EQ(test, clamp(l, 0L, 999L), 999L);
	KUNIT_EXPECT_EQ(test, clamp_t(int, v, -5, 5), -5);
	KUNIT_EXPECT_EQ(test, clamp_t(u8, uc, 10, 100), 100);
	/* the v4 cover letter's example: the bounds are cast to u8, 300u to 44 */
	KUNIT_EXPECT_EQ(test, clamp_val(uc, 10u, 300u), (unsigned char)44);
	KUNIT_EXPECT_EQ(test, clamp_val(uc, 10, 250), 200);
}

static void minmax_not_zero(struct kunit *test)
{
	unsigned int z = V(unsigned int, 0), a = V(unsigned int, 9),
		     b = V(unsigned int, 4);

	KUNIT_EXPECT_EQ(test, min_not_zero(z, a), 9u);
	KUNIT_EXPECT_EQ(test, min_not_zero(a, z), 9u);
	KUNIT_EXPECT_EQ(test, min_not_zero(a, b), 4u);
	KUNIT_EXPECT_EQ(test, min_not_zero(z, z), 0u);
}

static void minmax_umin_umax(struct kunit *test)
{
#ifdef umin
	int i = V(int, 5);
	size_t s = V(size_t, 3);
	u64 big = V(u64, 1ull << 40);

	KUNIT_EXPECT_EQ(test, umin(i, s), 3ull);
	KUNIT_EXPECT_EQ(test, umax(i, s), 5ull);
	KUNIT_EXPECT_EQ(test, umin(V(u32, 7), big), 7ull);
	KUNIT_EXPECT_EQ(test, umax(V(u8, 200), i), 200ull);
#else
	kunit_skip(test, "umin()/umax() not defined at this point");
#endif
}

static void minmax_upper_t(struct kunit *test)
{
#ifdef MIN_T
	static const int arr[MAX_T(int, 3, 5)];
	static const unsigned int init = MIN_T(unsigned int, 12, 7);

	KUNIT_EXPECT_EQ(test, (int)ARRAY_SIZE(arr), 5);
	KUNIT_EXPECT_EQ(test, init, 7u);
	KUNIT_EXPECT_EQ(test, MIN_T(int, V(int, -2), 3), -2);
	KUNIT_EXPECT_EQ(test, MAX_T(u8, 256 + 1, 0), 1);
#else
	kunit_skip(test, "MIN_T()/MAX_T() not defined at this point");
#endif
}

static void minmax_single_evaluation(struct kunit *test)
{
	int x = V(int, 1), y = V(int, 10), z = V(int, 5);
	unsigned int ux = V(unsigned int, 1), uy = V(unsigned int, 2);
	int r;

	r = min(x++, y++);
	KUNIT_EXPECT_EQ(test, r, 1);
	KUNIT_EXPECT_EQ(test, x, 2);
	KUNIT_EXPECT_EQ(test, y, 11);
	r = max(x++, y++);
	KUNIT_EXPECT_EQ(test, r, 11);
	KUNIT_EXPECT_EQ(test, x, 3);
	r = min3(x++, y++, z++);
	KUNIT_EXPECT_EQ(test, r, 3);
	KUNIT_EXPECT_EQ(test, x + y + z, 4 + 13 + 6);
	r = clamp(x++, 0, 100);
	KUNIT_EXPECT_EQ(test, r, 4);
	KUNIT_EXPECT_EQ(test, x, 5);
	KUNIT_EXPECT_EQ(test, min_t(unsigned int, ux++, uy++), 1u);
	KUNIT_EXPECT_EQ(test, ux + uy, 5u);
	KUNIT_EXPECT_EQ(test, min_not_zero(ux++, uy++), 2u);
	KUNIT_EXPECT_EQ(test, ux, 3u);
}

static void minmax_constant_expressions(struct kunit *test)
{
	/* __is_constexpr() answers without evaluating or failing */
	int is_min = __is_constexpr(min(1, 2));
	int is_min_t = __is_constexpr(min_t(int, 1, 2));

	kunit_info(test, "min() of constants is %sa constant expression; min_t() %s "
		   "(promised: const_min=%d const_min_t=%d)",
		   is_min ? "" : "not ", is_min_t ? "is" : "is not", const_min,
		   const_min_t);
	if (const_min < 0 && const_min_t < 0)
		kunit_skip(test, "no promise given (KX_CONST_MIN/KX_CONST_MIN_T unset)");
	if (const_min >= 0)
		KUNIT_EXPECT_EQ(test, is_min, const_min);
	if (const_min_t >= 0)
		KUNIT_EXPECT_EQ(test, is_min_t, const_min_t);
}

static struct kunit_case minmax_cases[] = {
	KUNIT_CASE(minmax_same_types),
	KUNIT_CASE(minmax_three),
	KUNIT_CASE(minmax_typed),
	KUNIT_CASE(minmax_clamp),
	KUNIT_CASE(minmax_not_zero),
	KUNIT_CASE(minmax_umin_umax),
	KUNIT_CASE(minmax_upper_t),
	KUNIT_CASE(minmax_single_evaluation),
	KUNIT_CASE(minmax_constant_expressions),
	{}
};

static struct kunit_suite minmax_suite = {
	.name = "kexpand-minmax",
	.test_cases = minmax_cases,
};
kunit_test_suite(minmax_suite);

MODULE_DESCRIPTION("kexpand: min()/max() results at each series point");
MODULE_LICENSE("GPL");
