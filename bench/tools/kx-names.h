/* kx-names.h: the file names of line markers, interned (kx-names.c). */
#ifndef KX_NAMES_H
#define KX_NAMES_H
#include <stddef.h>
#include <stdint.h>

struct kx_name {
	char *s;          /* the name with its escapes applied */
	size_t n;
	uint64_t hash;
	uint64_t own;     /* -H: bytes of the lines that belong to the file */
};

extern struct kx_name *kx_files;   /* in the order first named */
extern size_t kx_nfiles;

/* The index of name s[0, n) in kx_files, added if new. */
uint32_t kx_intern(const char *s, size_t n);

#endif
