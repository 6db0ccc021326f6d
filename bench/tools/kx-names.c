/*
 * kx-names.c: the file names kx-analyze reads in line markers, each once,
 * by a hash (a kernel file names ~1,000 files, and every #include writes
 * two markers, each looked up here); kx-names.h.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "kx-alloc.h"
#include "kx-names.h"

struct kx_name *kx_files;
size_t kx_nfiles;
static size_t files_cap;
/* kx_files[] by name: index + 1 (0: empty slot), open addressing */
static uint32_t *name_tab;
static size_t name_tab_size;

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}

uint32_t kx_intern(const char *s, size_t n)
{
	/* a hash: a kernel file names ~1,000 files, and every #include
	 * writes two markers (enter and return), each looked up here */
	uint64_t h = name_hash(s, n);
	if (2 * (kx_nfiles + 1) > name_tab_size) {
		free(name_tab);
		name_tab_size = name_tab_size ? 2 * name_tab_size : 256;
		name_tab = xcalloc(name_tab_size, sizeof(*name_tab));
		for (size_t i = 0; i < kx_nfiles; i++) {
			size_t j = kx_files[i].hash & (name_tab_size - 1);
			while (name_tab[j])
				j = (j + 1) & (name_tab_size - 1);
			name_tab[j] = (uint32_t)i + 1;
		}
	}
	size_t j = h & (name_tab_size - 1);
	for (; name_tab[j]; j = (j + 1) & (name_tab_size - 1)) {
		struct kx_name *f = &kx_files[name_tab[j] - 1];
		if (f->hash == h && f->n == n && memcmp(f->s, s, n) == 0)
			return name_tab[j] - 1;
	}
	if (kx_nfiles == files_cap) {
		files_cap = files_cap ? 2 * files_cap : 64;
		kx_files = xrealloc(kx_files, files_cap * sizeof(*kx_files));
	}
	kx_files[kx_nfiles].s = xrealloc(NULL, n + 1);
	kx_files[kx_nfiles].n = n;
	kx_files[kx_nfiles].hash = h;
	kx_files[kx_nfiles].own = 0;
	memcpy(kx_files[kx_nfiles].s, s, n);
	name_tab[j] = (uint32_t)kx_nfiles + 1;
	return (uint32_t)kx_nfiles++;
}
