/* A static x86-64 program whose instruction count is known exactly
 * (tests/test_icount_exact.py): built with
 *     gcc -nostdlib -static -DN=<iterations> loop.S
 * it executes 2 instructions before the loop, N iterations of 5, and 3 to
 * exit: 5*N + 5 in all. No libc, no dynamic loader: the first instruction
 * executed is _start's first. */
	.globl	_start
	.text
_start:
	mov	$N, %ecx		/* before the loop: 2 */
	xor	%eax, %eax
1:	add	$3, %rax		/* the loop: 5 per iteration */
	xor	%rcx, %rax
	nop
	dec	%ecx
	jnz	1b
	mov	$60, %eax		/* exit(0): 3 (the syscall does not return) */
	xor	%edi, %edi
	syscall
