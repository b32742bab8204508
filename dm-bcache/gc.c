// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: garbage collection.
 *
 * A pass compacts every index node holding dead keys (stale gens, epochs
 * of invalidated origins, holes), recounts the live sectors of every
 * bucket, frees the buckets left empty and lets every bucket's last_gc
 * catch up with its gen. It must run before any bucket's gen runs
 * BCH_GC_GEN_MAX ahead of its last_gc: the allocator stops invalidating
 * such buckets and asks for a pass. A pass is always part of a
 * checkpoint (index.c), and last_gc moves only once that is durable, so
 * no key on disk is ever more than 2 * BCH_GC_GEN_MAX gens behind.
 */
#include <linux/delay.h>

#include "dm-bcache.h"

static void bch_gc_mark(struct bch_btree *b, const struct bch_bkey *k,
			bool is_node, void *arg)
{
	struct bch_cache_set *set = arg;
	u64 bucket = k->ptr / set->bucket_size;

	if (bucket < set->first_bucket || bucket >= set->nbuckets)
		return;
	if (is_node) {
		set->buckets[bucket].state = BCH_B_BTREE;
		return;
	}
	set->buckets[bucket].sectors += k->size;
	if (k->flags & BCH_KEY_DIRTY) {
		set->buckets[bucket].dirty += k->size;
		set->slots[k->inode % BCH_UUID_SLOTS].gc_dirty += k->size;
	}
}

/* A key's data is gone if its origin was invalidated or its bucket reused. */
bool bch_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_cache_set *set = b->priv;

	return k->inode == BCH_INODE_NONE ||
	       k->inode != bch_slot_inode(set, k->inode % BCH_UUID_SLOTS) ||
	       bch_ptr_stale(set, k->ptr, k->gen);
}

/*
 * Compact and count, with the btree lock held for write; the checkpoint
 * that called it makes the result durable.
 */
int bch_gc_pass(struct bch_cache_set *set)
{
	int r;

	lockdep_assert_held_write(&set->btree_lock);
	bch_alloc_gc_start(set);
	r = bch_btree_gc(&set->btree, bch_gc_mark, set);
	if (r) {
		/* Counts are partial: keep everything and retry later. */
		DMERR_LIMIT("%s: gc failed: %d", set->name, r);
		bch_alloc_gc_abort(set);
	} else {
		bch_alloc_gc_finish(set);
		atomic64_inc(&set->gc_runs);
	}
	return r;
}

/* The initial pass at open: it also finds the buckets of the nodes. */
int bch_gc_initial(struct bch_cache_set *set)
{
	int r;

	down_write(&set->btree_lock);
	r = bch_btree_gc(&set->btree, bch_gc_mark, set);
	up_write(&set->btree_lock);
	return r;
}

static void bch_gc_work(struct work_struct *work)
{
	struct bch_cache_set *set = container_of(work, struct bch_cache_set,
						 gc_work);

	int r = bch_checkpoint(set, false);

	/* Buckets may be reclaimable now. */
	queue_work(set->wq, &set->reclaim_work);
	if (bch_checkpoint_retry(r)) {
		/* Writes wait for it: give reclaim and writeback a moment. */
		msleep(100);
		queue_work(set->wq, &set->gc_work);
	}
}

void bch_gc_init(struct bch_cache_set *set)
{
	INIT_WORK(&set->gc_work, bch_gc_work);
}
