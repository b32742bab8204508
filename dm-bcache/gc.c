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
 *
 * A pass goes a leaf at a time, and IO goes on between the leaves;
 * lookups go on too while it counts a leaf, or merges a leaf's sets
 * aside for a step with the lock held for write to swap in. It
 * counts into shadow counts (gc_sectors, gc_dirty) while the allocator
 * goes by the running ones, which never count too little: a key is
 * counted by the pass when the pass reaches it, or, if it is inserted
 * behind the pass, by the insert (bch_gc_inserted()). The shadow counts
 * replace the running ones once the checkpoint is durable
 * (bch_alloc_gc_apply()), not before: an overwrite the pass saw may
 * not be on disk until then.
 */
#include <linux/delay.h>

#include "dm-bcache.h"

/* The bucket @ptr points into, or NULL if the set has none there. */
static struct bch_bucket *bch_gc_bucket(struct bch_cache_set *set, u64 ptr)
{
	u64 bucket = bch_ptr_bucket_nr(set, ptr);
	unsigned int dev = bch_ptr_dev(ptr);
	struct bch_member *m;

	if (dev >= set->nr_members)
		return NULL;
	m = set->members[dev];
	if (bucket < m->first_bucket || bucket >= m->nbuckets)
		return NULL;
	return &m->buckets[bucket];
}

/*
 * Count @sectors of live key @k, dirty or not. Btree lock held for write,
 * or for read with shared inserts kept out by the pass, or by such an
 * insert with alloc_lock held: no other insert or cleaning counts
 * meanwhile.
 */
static void bch_gc_count(struct bch_cache_set *set, const struct bch_bkey *k,
			 u32 sectors)
{
	/* Dirty data lost with its members is nothing to write back. */
	bool dirty = (k->flags & BCH_KEY_DIRTY) && !bch_key_lost(set, k);
	unsigned int i;

	if (!sectors)
		return;
	/* A key still points to a lost member: not REMOVED yet. */
	bch_key_on_lost(set, k);
	for (i = 0; i < k->nptrs; i++) {
		struct bch_bucket *b = bch_gc_bucket(set, k->ptr[i]);

		if (bch_loc_failed(set, k->ptr[i]))
			continue;	/* its counts mean nothing */
		if (!b || bch_ptr_gen(k->ptr[i]) != b->gen)
			continue;	/* reused: not this key's any more */
		b->gc_sectors += sectors;
		if (dirty)
			b->gc_dirty += sectors;
	}
	if (dirty)
		set->slots[k->inode % BCH_UUID_SLOTS].gc_dirty += sectors;
}

static void bch_gc_mark(struct bch_btree *btree, const struct bch_bkey *k,
			bool is_node, void *arg)
{
	struct bch_bucket *b;

	if (!is_node) {
		bch_gc_count(arg, k, k->size);
		return;
	}
	bch_key_on_lost(arg, k);	/* a node there: not REMOVED */
	b = bch_gc_bucket(arg, k->ptr[0]);
	if (b)
		WRITE_ONCE(b->gc_seen, true);
}

/* At open, the pass also finds the buckets of the nodes. */
static void bch_gc_mark_initial(struct bch_btree *btree, const struct bch_bkey *k,
				bool is_node, void *arg)
{
	struct bch_bucket *b = bch_gc_bucket(arg, k->ptr[0]);

	if (is_node && b)
		b->state = BCH_B_BTREE;
	bch_gc_mark(btree, k, is_node, arg);
}

/* A key inserted where the pass under way has been: count it for the pass. */
void bch_gc_inserted(struct bch_cache_set *set, const struct bch_bkey *k)
{
	lockdep_assert_held(&set->btree_lock);
	if (!set->gc_running || (k->flags & BCH_KEY_HOLE))
		return;
	/* Shared inserts count side by side. */
	spin_lock(&set->alloc_lock);
	bch_gc_count(set, k, bch_btree_gc_passed(&set->btree, k));
	spin_unlock(&set->alloc_lock);
}

/*
 * Dirty key @k, still in the index, is about to be marked clean: if the
 * pass has counted it, it counts clean now.
 */
void bch_gc_cleaned(struct bch_cache_set *set, const struct bch_bkey *k)
{
	unsigned int i;
	u32 n;

	lockdep_assert_held_write(&set->btree_lock);
	if (!set->gc_running || !(k->flags & BCH_KEY_DIRTY))
		return;
	n = bch_btree_gc_passed(&set->btree, k);
	for (i = 0; i < k->nptrs; i++) {
		struct bch_bucket *b = bch_gc_bucket(set, k->ptr[i]);

		if (b && bch_ptr_gen(k->ptr[i]) == b->gen)
			b->gc_dirty -= min(b->gc_dirty, n);
	}
	set->slots[k->inode % BCH_UUID_SLOTS].gc_dirty -=
		min(set->slots[k->inode % BCH_UUID_SLOTS].gc_dirty, (u64)n);
}

/*
 * Copy @i of @k is stale: its bucket was reused. A dirty key can come back
 * with one such copy from a crash after writeback dropped the copy, and
 * its bucket was reused, before the clean key was durable.
 */
static bool bch_copy_stale(struct bch_cache_set *set, const struct bch_bkey *k,
			   unsigned int i)
{
	return bch_ptr_stale(set, bch_ptr_loc(k->ptr[i]), bch_ptr_gen(k->ptr[i]));
}

/*
 * A copy of live key @k to drop: one whose bucket was reused, if @k has a
 * live copy. Not a lost member's: while a dirty key has it the member is
 * not REMOVED and the set stays degraded, so that writeback writes the
 * key back (it has one copy left), and marks it clean with the other.
 */
int bch_key_stale_copy(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_cache_set *set = b->priv;
	int i, stale = -1;
	bool live = false;

	bch_key_on_lost(set, k);
	for (i = 0; i < k->nptrs; i++) {
		if (bch_loc_failed(set, k->ptr[i]))
			continue;
		if (bch_copy_stale(set, k, i))
			stale = i;
		else
			live = true;
	}
	return live ? stale : -1;
}

/*
 * A key's data is gone if its origin was invalidated or the buckets of
 * all its copies were reused or lost. But dirty data lost with a member
 * (bch_key_lost()) stays, so that reads of it fail: the origin's data
 * there is older.
 */
bool bch_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_cache_set *set = b->priv;
	unsigned int i;

	if (k->inode == BCH_INODE_NONE ||
	    k->inode != bch_slot_inode(set, k->inode % BCH_UUID_SLOTS))
		return true;
	bch_key_on_lost(set, k);
	for (i = 0; i < k->nptrs; i++)
		if (!bch_copy_stale(set, k, i))
			return false;
	return !(k->flags & BCH_KEY_DIRTY) || !bch_key_lost(set, k);
}

/*
 * Whether a copy of @k is on a lost member; one a GC pass is looking for
 * (bch_alloc_gc_start()) is seen, whoever asks: so is a key the pass
 * drops as dead, which is not counted (bch_members_removed()).
 */
bool bch_key_on_lost(struct bch_cache_set *set, const struct bch_bkey *k)
{
	bool lost = false;
	unsigned int i;

	for (i = 0; i < k->nptrs; i++) {
		unsigned int dev = bch_ptr_dev(k->ptr[i]);

		if (!bch_loc_failed(set, k->ptr[i]))
			continue;
		lost = true;
		if (test_bit(dev, &set->gc_failed))
			set_bit(dev, &set->gc_failed_seen);
	}
	return lost;
}

/*
 * Whether @k has copies, all of them on lost members (member.c): dirty,
 * its data is gone; clean, the origin has it. A copy whose bucket a live
 * member reused was written back (a dirty copy's bucket is reused only
 * once the key is clean), so a key with one is not lost.
 */
bool bch_key_lost(struct bch_cache_set *set, const struct bch_bkey *k)
{
	unsigned int i;

	for (i = 0; i < k->nptrs; i++)
		if (!bch_loc_failed(set, k->ptr[i]))
			return false;
	return k->nptrs > 0;
}

/*
 * Compact and count, a leaf at a time with the btree lock let go between
 * leaves; the checkpoint that called it makes the result durable, then
 * applies it. Called and returns with the lock held for write.
 */
int bch_gc_pass(struct bch_cache_set *set)
{
	int r, slot;

	lockdep_assert_held_write(&set->btree_lock);
	/*
	 * A walk over every bucket: lookups go on meanwhile, and inserts in
	 * between its chunks, ahead of the pass, which has not begun.
	 */
	bch_index_downgrade(set);
	bch_btree_gc_start(&set->btree);
	bch_alloc_gc_start(set);
	if (bch_fault_wait_ms(BCH_WAIT_GC_PAUSE)) {
		bch_index_unlock_gated(set);
		msleep(bch_fault_wait_ms(BCH_WAIT_GC_PAUSE));
		bch_index_read_gated(set);
	}
	slot = bch_index_buf_get(set);
	for (;;) {
		/*
		 * A leaf in memory with nothing to compact is only counted,
		 * and one with garbage is merged aside, under the lock held
		 * for read: lookups go on meanwhile, shared inserts wait for
		 * the leaf's count. The rest needs it for write: swapping the
		 * merge in, or the whole step.
		 */
		r = bch_btree_gc_step_shared(&set->btree, bch_gc_mark, set);
		bch_index_unlock_gated(set);
		down_write(&set->btree_lock);
		if (r == -EAGAIN)
			r = bch_btree_gc_step(&set->btree, bch_gc_mark, set);
		else
			bch_index_trim(set);	/* as a locked step evicts */
		if (r <= 0)
			break;
		bch_index_yield_gc(set, slot);
		bch_index_downgrade(set);
	}
	bch_index_buf_put(set, slot);
	if (r) {
		/* Counts are partial: keep the running ones and retry later. */
		DMERR_LIMIT("%s: gc failed: %d", set->name, r);
		bch_alloc_gc_apply(set, false);
	} else {
		bch_alloc_gc_passed(set);
		atomic64_inc(&set->gc_runs);
	}
	return r;
}

/* The initial pass at open, before the allocator has started. */
int bch_gc_initial(struct bch_cache_set *set)
{
	int r;

	down_write(&set->btree_lock);
	r = bch_btree_gc(&set->btree, bch_gc_mark_initial, set);
	if (!r)
		bch_alloc_gc_take(set);
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
