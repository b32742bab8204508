// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: fault injection for the tests.
 *
 * Memory and buckets run out under load, rarely and never on cue. These
 * module parameters make every Nth index insert of the IO path, or every
 * Nth checkpoint, fail as if they had (-ENOMEM), every Nth copy of a
 * write's data find no pages, every Nth check of data read into a
 * reader's pages fail (as if the reader had changed them under the read:
 * the data is read again to be sure), and every Nth journal entry find
 * the ring full (the journal overflows), so that the tests
 * can show no acknowledged write is lost when they do. 0 (the default)
 * turns a point off.
 *
 * Some races have windows of microseconds: the waits below hold one open
 * long enough for a test to write into it on cue.
 */
#include <linux/module.h>

#include "dm-bcache.h"

static unsigned int bch_fault_every[BCH_FAULTS];
static atomic_t bch_fault_count[BCH_FAULTS];
static unsigned int bch_fault_wait[BCH_WAITS];

module_param_named(fail_insert_every, bch_fault_every[BCH_FAULT_INSERT],
		   uint, 0644);
MODULE_PARM_DESC(fail_insert_every,
		 "test only: fail every Nth index insert with -ENOMEM");
module_param_named(fail_checkpoint_every,
		   bch_fault_every[BCH_FAULT_CHECKPOINT], uint, 0644);
MODULE_PARM_DESC(fail_checkpoint_every,
		 "test only: fail every Nth checkpoint with -ENOMEM");
module_param_named(fail_journal_every, bch_fault_every[BCH_FAULT_JOURNAL],
		   uint, 0644);
MODULE_PARM_DESC(fail_journal_every,
		 "test only: every Nth journal entry finds the ring full");
module_param_named(fail_copy_every, bch_fault_every[BCH_FAULT_COPY], uint, 0644);
MODULE_PARM_DESC(fail_copy_every,
		 "test only: every Nth copy of a write's data finds no memory");

module_param_named(fail_csum_every, bch_fault_every[BCH_FAULT_CSUM], uint, 0644);
MODULE_PARM_DESC(fail_csum_every,
		 "test only: every Nth check of data in a reader's pages fails");

module_param_named(keep_failed_every, bch_fault_every[BCH_FAULT_KEEP_FAILED],
		   uint, 0644);
MODULE_PARM_DESC(keep_failed_every,
		 "test only: every Nth GC pass that would mark a lost member REMOVED does not");

module_param_named(gc_pause_ms, bch_fault_wait[BCH_WAIT_GC_PAUSE], uint, 0644);
MODULE_PARM_DESC(gc_pause_ms,
		 "test only: a GC pass lets IO run this long before its first step");
module_param_named(journal_hold_ms, bch_fault_wait[BCH_WAIT_JOURNAL_HOLD],
		   uint, 0644);
MODULE_PARM_DESC(journal_hold_ms,
		 "test only: keys no flush waits for stay unwritten this long (0: 20 ms)");
module_param_named(sb_member_pause_ms, bch_fault_wait[BCH_WAIT_SB_MEMBER],
		   uint, 0644);
MODULE_PARM_DESC(sb_member_pause_ms,
		 "test only: a superblock write waits this long after each member but 0");
module_param_named(miss_pause_ms, bch_fault_wait[BCH_WAIT_MISS_PAUSE],
		   uint, 0644);
MODULE_PARM_DESC(miss_pause_ms,
		 "test only: a read miss waits this long between its lookup and its fill's snapshot");

bool bch_fault(enum bch_fault_point point)
{
	unsigned int every = READ_ONCE(bch_fault_every[point]);

	return every && !(atomic_inc_return(&bch_fault_count[point]) % every);
}

unsigned int bch_fault_wait_ms(enum bch_fault_wait wait)
{
	return READ_ONCE(bch_fault_wait[wait]);
}
