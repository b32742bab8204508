// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: fault injection for the tests.
 *
 * Memory and buckets run out under load, rarely and never on cue. These
 * module parameters make every Nth index insert of the IO path, or every
 * Nth checkpoint, fail as if they had (-ENOMEM), and every Nth journal
 * entry find the ring full (the journal overflows), so that the tests
 * can show no acknowledged write is lost when they do. 0 (the default)
 * turns a point off.
 */
#include <linux/module.h>

#include "dm-bcache.h"

static unsigned int bch_fault_every[BCH_FAULTS];
static atomic_t bch_fault_count[BCH_FAULTS];

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

bool bch_fault(enum bch_fault_point point)
{
	unsigned int every = READ_ONCE(bch_fault_every[point]);

	return every && !(atomic_inc_return(&bch_fault_count[point]) % every);
}
