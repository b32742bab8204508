// SPDX-License-Identifier: GPL-2.0
/*
 * Harness selftest module: proves that tests/run notices kernel problems.
 * Loaded only by the selftest scenarios, inside QEMU guests. mode=
 *   warn     (default) WARNs once at load
 *   oops     dereferences NULL at load
 *   oob      reads one byte past an 8-byte kmalloc: a KASAN report
 *   lockdep  takes two mutexes in both orders: a lockdep circular-locking report
 *   leak     loses a kmalloc'ed object: a kmemleak report at the next scan
 * The last three are only seen by the debug kernel (KERNEL=debug); in a
 * kernel without the checker they WARN instead, so that the scenario fails
 * the same way under either kernel.
 */
#include <linux/module.h>
#include <linux/string.h>
#include <linux/bug.h>
#include <linux/slab.h>
#include <linux/mutex.h>

static char *mode = "warn";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "warn, oops, oob, lockdep or leak");

static DEFINE_MUTEX(dmb_selftest_a);
static DEFINE_MUTEX(dmb_selftest_b);
static void *volatile dmb_selftest_sink;
static char volatile dmb_selftest_byte;

static int dmb_selftest_oob(void)
{
	char *buf = kmalloc(8, GFP_KERNEL);

	if (!buf)
		return -ENOMEM;
	WARN(!IS_ENABLED(CONFIG_KASAN), "dmb_selftest: no KASAN, the out-of-bounds read goes unseen\n");
	pr_info("dmb_selftest: deliberate out-of-bounds read\n");
	OPTIMIZER_HIDE_VAR(buf);
	dmb_selftest_byte = READ_ONCE(buf[8]);
	kfree(buf);
	return 0;
}

static void dmb_selftest_lockdep(void)
{
	WARN(!IS_ENABLED(CONFIG_PROVE_LOCKING), "dmb_selftest: no lockdep, the lock inversion goes unseen\n");
	pr_info("dmb_selftest: deliberate lock order inversion\n");
	mutex_lock(&dmb_selftest_a);
	mutex_lock(&dmb_selftest_b);
	mutex_unlock(&dmb_selftest_b);
	mutex_unlock(&dmb_selftest_a);
	mutex_lock(&dmb_selftest_b);
	mutex_lock(&dmb_selftest_a);
	mutex_unlock(&dmb_selftest_a);
	mutex_unlock(&dmb_selftest_b);
}

static void dmb_selftest_leak(void)
{
	WARN(!IS_ENABLED(CONFIG_DEBUG_KMEMLEAK), "dmb_selftest: no kmemleak, the leak goes unseen\n");
	pr_info("dmb_selftest: deliberate memory leak\n");
	/* through a volatile: the compiler may not drop the allocation */
	dmb_selftest_sink = kmalloc(64, GFP_KERNEL);
	dmb_selftest_sink = NULL;
}

static int __init dmb_selftest_init(void)
{
	if (!strcmp(mode, "oops")) {
		int *volatile p = NULL;

		pr_info("dmb_selftest: deliberate NULL dereference\n");
		return *p;
	}
	if (!strcmp(mode, "oob"))
		return dmb_selftest_oob();
	if (!strcmp(mode, "lockdep")) {
		dmb_selftest_lockdep();
		return 0;
	}
	if (!strcmp(mode, "leak")) {
		dmb_selftest_leak();
		return 0;
	}
	WARN(1, "dmb_selftest: deliberate warning\n");
	return 0;
}

static void __exit dmb_selftest_exit(void)
{
}

module_init(dmb_selftest_init);
module_exit(dmb_selftest_exit);
MODULE_DESCRIPTION("dm-bcache test harness selftest (deliberate WARN/oops/KASAN/lockdep/kmemleak)");
MODULE_LICENSE("GPL");
