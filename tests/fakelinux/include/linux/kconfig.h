/* fakelinux */
#define IS_ENABLED(x) 0
