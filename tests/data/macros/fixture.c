#include "nest.h"
int GLUE(v, 1) = 3;
int f(int y)
{
	return QUAD(y);
}
const char *s = NAME(y + 1);
int g(int z) { return LONG_DEF(z); }
