/* kx-elf.h: the object kx-cc leaves where Kbuild expects one it only
 * measured. Returns 0, or -1 with errno set. */
#ifndef KX_ELF_H
#define KX_ELF_H
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* an ELF64 relocatable x86-64 object with nothing in it but an empty
 * symbol table and .note.GNU-stack: what ar, objtool and ld -r take */
static inline int empty_object(const char *path)
{
	static const char names[] = "\0.shstrtab\0.strtab\0.symtab\0.note.GNU-stack";
	unsigned char f[64 + 48 + 24 + 5 * 64] = { 0 };
	unsigned long shoff = 64 + 48 + 24;
	unsigned char *h = f, *s = f + shoff;
	memcpy(h, "\177ELF\2\1\1", 7);
	h[16] = 1;			/* ET_REL */
	h[18] = 62;			/* EM_X86_64 */
	h[20] = 1;			/* EV_CURRENT */
	memcpy(h + 40, &shoff, 8);
	h[52] = 64;			/* e_ehsize */
	h[58] = 64;			/* e_shentsize */
	h[60] = 5;			/* e_shnum */
	h[62] = 1;			/* e_shstrndx */
	memcpy(f + 64, names, sizeof(names));
	/* name, type, offset, size, link, info, align, entsize */
	unsigned long sec[5][8] = {
		{ 0 },
		{ 1, 3, 64, sizeof(names), 0, 0, 1, 0 },
		{ 11, 3, 64, 1, 0, 0, 1, 0 },
		{ 19, 2, 64 + 48, 24, 2, 1, 8, 24 },
		{ 27, 1, shoff, 0, 0, 0, 1, 0 },
	};
	for (int i = 0; i < 5; i++) {
		unsigned char *e = s + 64 * i;
		unsigned int name = sec[i][0], type = sec[i][1], link = sec[i][4],
			info = sec[i][5];
		memcpy(e, &name, 4);
		memcpy(e + 4, &type, 4);
		memcpy(e + 24, &sec[i][2], 8);
		memcpy(e + 32, &sec[i][3], 8);
		memcpy(e + 40, &link, 4);
		memcpy(e + 44, &info, 4);
		memcpy(e + 48, &sec[i][6], 8);
		memcpy(e + 56, &sec[i][7], 8);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, f, sizeof(f)) != (ssize_t)sizeof(f) || close(fd))
		return -1;
	return 0;
}

#endif
