/* kx-lines.h: kx-analyze's table of source lines, (file, line) -> the
 * figures of that line, for kx-analyze.c only.
 *
 * Lines come in runs: the preprocessor writes a header's lines one after
 * the other. So the table holds blocks of KX_BLK consecutive lines of one
 * file, kept one after the other in one array (`tab`, in the order they
 * were first used), found through a small hash of (file, line / KX_BLK);
 * the next line is then most often in the block just used. A line in a
 * block that was never used has file 0. A hash of single lines over the
 * whole table cost a cache miss a line: a third of the analyzer's time. */
#ifndef KX_LINES_H
#define KX_LINES_H
#include <stdint.h>
#include <string.h>

#include "kx-alloc.h"

#define NPAT 3
#define KX_BLK 16

struct entry {
	uint32_t file;    /* index into kx_files[], +1 (0: not used) */
	uint64_t line;
	uint64_t bytes;
	uint64_t lines;   /* output lines attributed */
	uint64_t count[NPAT];
};

struct kx_slot {
	uint32_t file;    /* as in struct entry; 0: empty slot */
	uint32_t blk;     /* the block: tab[blk * KX_BLK ...] */
	uint64_t base;    /* its first line / KX_BLK */
};

static struct entry *tab;         /* tab_blocks * KX_BLK entries */
static size_t tab_blocks, tab_cap, tab_used;
static struct kx_slot *slots;
static size_t nslots;

static size_t kx_slot_of(uint32_t file, uint64_t base)
{
	uint64_t h = ((uint64_t)file << 40 ^ base) * 0x9e3779b97f4a7c15ull;
	size_t j = (h ^ (h >> 29)) & (nslots - 1);
	while (slots[j].file && (slots[j].file != file || slots[j].base != base))
		j = (j + 1) & (nslots - 1);
	return j;
}

static struct entry *kx_new_block(uint32_t file, uint64_t base)
{
	if (2 * (tab_blocks + 1) > nslots) {
		struct kx_slot *old = slots;
		size_t n = nslots;
		nslots = n ? 2 * n : 1024;
		slots = xcalloc(nslots, sizeof(*slots));
		for (size_t i = 0; i < n; i++)
			if (old[i].file)
				slots[kx_slot_of(old[i].file, old[i].base)] = old[i];
		free(old);
	}
	if (tab_blocks == tab_cap) {
		struct entry *ot = tab;
		size_t old = tab_cap * KX_BLK * sizeof(*tab);
		tab_cap = tab_cap ? 2 * tab_cap : 512;
		tab = kx_table_alloc(tab_cap * KX_BLK * sizeof(*tab));
		if (ot)
			memcpy(tab, ot, old);
		kx_table_free(ot, old);
	}
	struct kx_slot *s = &slots[kx_slot_of(file, base)];
	*s = (struct kx_slot){ file, (uint32_t)tab_blocks, base };
	return &tab[tab_blocks++ * KX_BLK];
}

/* the entry of FILE's line LINE (file: an index into kx_files[]); the
 * pointer holds until the next call */
static struct entry *lookup(uint32_t file, uint64_t line)
{
	static struct entry *last;
	static uint32_t last_file;
	static uint64_t last_base;
	uint64_t base = line / KX_BLK;
	if (!last || last_file != file + 1 || last_base != base) {
		size_t j = nslots ? kx_slot_of(file + 1, base) : 0;
		last = nslots && slots[j].file ? &tab[slots[j].blk * KX_BLK]
			: kx_new_block(file + 1, base);
		last_file = file + 1, last_base = base;
	}
	struct entry *e = &last[line % KX_BLK];
	if (!e->file) {
		e->file = file + 1;
		e->line = line;
		tab_used++;
	}
	return e;
}
#endif
