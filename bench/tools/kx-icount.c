/* kx-icount: a QEMU TCG plugin that counts the guest instructions a
 * user-mode process executes (qemu-x86_64 -plugin kx-icount.so PROG ...).
 *
 * Each translated block adds its instruction count to one counter as it
 * starts to run (an inline add, QEMU's cheapest instrumentation); a block
 * left early by a fault counts whole. The count is deterministic for the
 * same program, input and arguments, which is what kexpand needs: a cost
 * that other tenants of the machine cannot disturb.
 *
 * At exit the plugin appends "<pid> <instructions>\n" to the file named by
 * $KX_ICOUNT_OUT (standard error without it), so a compiler driver and the
 * subprocesses it runs under the same plugin (gcc -wrapper) add up. QEMU's
 * plugin API version 1 (QEMU 7.2, Debian 12) is declared below: the few
 * functions this plugin calls, with their C signatures from QEMU's
 * documented plugin API. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

/* compilers run one thread: one counter, no atomics */
static uint64_t insns;

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &insns, qemu_plugin_tb_n_insns(tb));
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	const char *out = getenv("KX_ICOUNT_OUT");
	char line[64];
	int n, fd;

	(void)id;
	(void)p;
	n = snprintf(line, sizeof line, "%ld %llu\n", (long)getpid(),
		     (unsigned long long)insns);
	fd = out ? open(out, O_WRONLY | O_APPEND | O_CREAT, 0644) : 2;
	/* one short write(2): O_APPEND keeps each process's line whole */
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		_exit(99);	/* a count that was not written fails the run */
	if (out)
		close(fd);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			       int argc, char **argv)
{
	(void)info;
	(void)argc;
	(void)argv;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
