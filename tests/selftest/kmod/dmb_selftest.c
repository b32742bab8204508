// SPDX-License-Identifier: GPL-2.0
/*
 * Harness selftest module: proves that tests/run notices kernel problems.
 * mode=warn (default) WARNs once at load; mode=oops dereferences NULL at
 * load. Loaded only by the selftest scenarios, inside QEMU guests.
 */
#include <linux/module.h>
#include <linux/string.h>
#include <linux/bug.h>

static char *mode = "warn";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "warn or oops");

static int __init dmb_selftest_init(void)
{
	if (!strcmp(mode, "oops")) {
		int *volatile p = NULL;

		pr_info("dmb_selftest: deliberate NULL dereference\n");
		return *p;
	}
	WARN(1, "dmb_selftest: deliberate warning\n");
	return 0;
}

static void __exit dmb_selftest_exit(void)
{
}

module_init(dmb_selftest_init);
module_exit(dmb_selftest_exit);
MODULE_DESCRIPTION("dm-bcache test harness selftest (deliberate WARN/oops)");
MODULE_LICENSE("GPL");
