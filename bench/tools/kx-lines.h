/* kx-lines.h: kx-analyze's table of source lines, (file, line) -> the
 * figures of that line, for kx-analyze.c only.
 *
 * Lines come in runs: the preprocessor writes a header's lines one after
 * the other. So the entries sit in one array (`tab`) in the order their
 * lines were first seen, and a block of KX_BLK consecutive lines of one
 * file holds the indices of its entries; a small hash finds a block by
 * (file, line / KX_BLK), and the next line is most often in the block
 * just used. A hash of single lines over the whole table cost a cache
 * miss a line: a third of the analyzer's time. An isolated line (an
 * input whose markers jump everywhere) costs about 150 bytes, against
 * 112 then: entries are not kept for the lines of a block never seen. */
#ifndef KX_LINES_H
#define KX_LINES_H
#include <stdint.h>
#include <string.h>

#include "kx-alloc.h"

#define NPAT 3
#define KX_BLK 16

struct entry {
	uint32_t file;    /* index into kx_files[], +1 */
	uint64_t line;
	uint64_t bytes;
	uint64_t lines;   /* output lines attributed */
	uint64_t count[NPAT];
};

struct kx_slot {
	uint32_t file;    /* as in struct entry; 0: empty slot */
	uint32_t blk;     /* the block: blocks[blk] */
	uint64_t base;    /* its first line / KX_BLK */
};

static struct entry *tab;         /* tab_used entries */
static size_t tab_used, tab_cap;
static uint32_t (*blocks)[KX_BLK];  /* an entry's index + 1, 0: not seen */
static size_t nblocks, blocks_cap;
static struct kx_slot *slots;
static size_t nslots;

/* grow *p (cap elements of size sz) to hold one more; a table, zeroed */
static void *kx_grow(void *p, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return p;
	size_t old = *cap;
	*cap = old ? 2 * old : 4096;
	void *q = kx_table_alloc(*cap * sz);
	if (p)
		memcpy(q, p, old * sz);
	kx_table_free(p, old * sz);
	return q;
}

static size_t kx_slot_of(uint32_t file, uint64_t base)
{
	uint64_t h = ((uint64_t)file << 32 ^ base) * 0x9e3779b97f4a7c15ull;
	size_t j = (h ^ (h >> 29)) & (nslots - 1);
	while (slots[j].file && (slots[j].file != file || slots[j].base != base))
		j = (j + 1) & (nslots - 1);
	return j;
}

static uint32_t *kx_new_block(uint32_t file, uint64_t base)
{
	if (2 * (nblocks + 1) > nslots) {
		struct kx_slot *old = slots;
		size_t n = nslots;
		nslots = n ? 2 * n : 1024;
		slots = xcalloc(nslots, sizeof(*slots));
		for (size_t i = 0; i < n; i++)
			if (old[i].file)
				slots[kx_slot_of(old[i].file, old[i].base)] = old[i];
		free(old);
	}
	blocks = kx_grow(blocks, &blocks_cap, nblocks, sizeof(*blocks));
	slots[kx_slot_of(file, base)] = (struct kx_slot){ file, (uint32_t)nblocks, base };
	return blocks[nblocks++];
}

/* the entry of FILE's line LINE (file: an index into kx_files[]); the
 * pointer holds until the next call */
static struct entry *lookup(uint32_t file, uint64_t line)
{
	static uint32_t *last;
	static uint32_t last_file;
	static uint64_t last_base;
	uint64_t base = line / KX_BLK;
	if (!last || last_file != file + 1 || last_base != base) {
		size_t j = nslots ? kx_slot_of(file + 1, base) : 0;
		last = nslots && slots[j].file ? blocks[slots[j].blk]
			: kx_new_block(file + 1, base);
		last_file = file + 1, last_base = base;
	}
	uint32_t *i = &last[line % KX_BLK];
	if (!*i) {
		tab = kx_grow(tab, &tab_cap, tab_used, sizeof(*tab));
		tab[tab_used] = (struct entry){ .file = file + 1, .line = line };
		*i = (uint32_t)++tab_used;
	}
	return &tab[*i - 1];
}
#endif
