// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: fault injection for the tests.
 *
 * Memory and buckets run out under load, rarely and never on cue. These
 * module parameters make every Nth index insert of the IO path, or every
 * Nth checkpoint, fail as if they had (-ENOMEM), so that the tests can
 * show no acknowledged write is lost when they do. 0 (the default) turns
 * a point off.
 */
#include <linux/module.h>

#include "dm-bcache.h"

static unsigned int fail_insert_every;
module_param(fail_insert_every, uint, 0644);
MODULE_PARM_DESC(fail_insert_every,
		 "test only: fail every Nth index insert with -ENOMEM");

static unsigned int fail_checkpoint_every;
module_param(fail_checkpoint_every, uint, 0644);
MODULE_PARM_DESC(fail_checkpoint_every,
		 "test only: fail every Nth checkpoint with -ENOMEM");

static atomic_t bch_fault_count[BCH_FAULTS];

bool bch_fault(enum bch_fault_point point)
{
	unsigned int every = point == BCH_FAULT_INSERT ?
			     READ_ONCE(fail_insert_every) :
			     READ_ONCE(fail_checkpoint_every);

	return every && !(atomic_inc_return(&bch_fault_count[point]) % every);
}
