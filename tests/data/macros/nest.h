/* kexpand test fixture: nested macros whose bytes are counted by hand */
#define TWICE(x) ((x) + (x))
#define QUAD(x) (TWICE(TWICE(x)) - 1)
#define NAME(a) #a
#define GLUE(a, b) a##b
#define LONG_DEF(a) \
	(a * \
	 2)
