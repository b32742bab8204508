/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DM_BCACHE_JOURNAL_H
#define _DM_BCACHE_JOURNAL_H

#include <linux/bio.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "bcache_ondisk.h"

struct bch_cache_set;
struct bch_bkey;
struct bch_jset_disk;

/* Largest entry: 64 KiB of contiguous pages, one bio. */
#define BCH_JBUF_PAGES		((BCH_JSET_MAX_SECTORS << 9) / PAGE_SIZE)

/* An entry being filled, or sealed and being written. */
struct bch_jbuf {
	struct bch_jset_disk	*data;
	u32			nkeys;
	u32			sectors;	/* once sealed */
	u64			sector;		/* device sector, once sealed */
	struct bio_list		waiters;	/* sent on once it is durable */
	struct bio		bio;
	struct bio_vec		bvecs[BCH_JBUF_PAGES];
};

/* Where a walk of the journal ended: the next entry goes there. */
struct bch_jpos {
	u64	seq;
	u64	pos;		/* ring sector */
	u64	used;		/* ring sectors walked from the start */
	u64	entries;
	u64	keys;
	u64	max_seq;	/* of any good entry in the ring */
};

struct bch_journal {
	struct bch_cache_set	*set;
	struct bch_member	*member;	/* the ring's */
	spinlock_t		lock;		/* all below; also from endio work */
	struct bch_jbuf		buf[2];
	struct bch_jbuf		*cur;		/* being filled */
	struct bch_jbuf		*wbuf;		/* sealed, to be written */
	bool			submitted;	/* wbuf is in flight */
	bool			blocked;	/* a checkpoint is being taken */
	bool			overflow;	/* keys left out until it is */
	u64			seq;		/* of the entry being filled */
	u64			pos;		/* ring sector of the next entry */
	u64			used;		/* ring sectors since the checkpoint */
	u64			cp_used;	/* used when one began */
	u64			ring_start;	/* device sector */
	u64			ring_sectors;
	u32			max_sectors;	/* of one entry */
	u32			max_keys;
	struct bio_list		cp_waiters;	/* sent on after the checkpoint */
	wait_queue_head_t	idle;		/* wbuf == NULL */
	struct workqueue_struct	*wq;
	struct delayed_work	write_work;
	struct work_struct	done_work;

	/* For the status line. */
	u64			entries;	/* written since the set opened */
	u64			overflows;
};

int bch_journal_init(struct bch_cache_set *set);
void bch_journal_stop(struct bch_cache_set *set);
void bch_journal_exit(struct bch_cache_set *set);
int bch_journal_walk(struct bch_cache_set *set,
		     int (*fn)(struct bch_cache_set *set,
			       const struct bch_bkey *k, void *arg),
		     void *arg, struct bch_jpos *end);
void bch_journal_start(struct bch_cache_set *set, const struct bch_jpos *end);
void bch_journal_add(struct bch_cache_set *set, const struct bch_bkey *k,
		     struct bio *waiter);
void bch_journal_kick(struct bch_cache_set *set);
bool bch_journal_barrier(struct bch_cache_set *set, struct bio *bio);
bool bch_journal_checkpoint_start(struct bch_cache_set *set, u64 *seq,
				  u64 *pos);
void bch_journal_checkpoint_end(struct bch_cache_set *set, bool fuzzy, int r,
				struct bio_list *waiters);
void bch_journal_checkpoint_release(struct bch_cache_set *set, bool ok,
				    struct bio_list *waiters);
bool bch_journal_want_checkpoint(struct bch_cache_set *set);
const char *bch_key_invalid(struct bch_cache_set *set,
			    const struct bch_bkey *k);

#endif /* _DM_BCACHE_JOURNAL_H */
