/* kx-includes.h: the include entries of kx-analyze -H, from the flags of
 * the line markers (kx-marker.h): an open include per enter (flag 1), an
 * entry (includer, line, header) per return (flag 2), each once. Files are
 * kx-analyze's indices of the names. */
#ifndef KX_INCLUDES_H
#define KX_INCLUDES_H
#include <stdint.h>

/* A marker with flags (KX_FLAG_ENTER or KX_FLAG_RETURN) and number line
 * has named file "now"; the current file before it was "was" (if "had":
 * there was one). */
void kx_include_follow(unsigned int flags, uint64_t line, int had, uint32_t was,
		       uint32_t now);

/* Print the entries as JSON array elements "[includer, line, header]" in
 * the order they were closed, then the still open ones (line 0). */
void kx_include_print(void);

#endif
