// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the cache set's index, glued to its buckets and metadata IO.
 *
 * The on-disk index is a checkpoint plus the journal: nodes are written
 * only by a checkpoint, which runs when the journal is half full, when
 * the allocator needs a GC, and at open and close. Between checkpoints
 * every insert is journaled (journal.c).
 *
 * Index nodes are read when needed (btree.c); clean leaves beyond the
 * budget node_cache_mb sets are evicted, and a shrinker evicts more when
 * memory is short. A lookup from map() never waits for a node: it fails
 * with -EAGAIN and the bio is deferred to a worker (request.c).
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/shrinker.h>
#include <linux/version.h>

#include "bset.h"
#include "dm-bcache.h"

/*
 * Per cache device: -1 is an eighth of RAM; 0 keeps no leaf that is not
 * in use, so that every path runs with nodes read back from disk.
 */
static int node_cache_mb = -1;
module_param(node_cache_mb, int, 0644);
MODULE_PARM_DESC(node_cache_mb,
		 "MiB of index nodes kept per cache device (-1: RAM/8, 0: only those in use)");

/* N: every node is read under the btree lock, as before (to compare). */
static bool read_unlocked = true;
module_param(read_unlocked, bool, 0644);
MODULE_PARM_DESC(read_unlocked,
		 "Read index nodes with the index unlocked (N: under its lock)");

/* N: every insert takes the btree lock for write, as before (to compare). */
static bool shared_inserts = true;
module_param(shared_inserts, bool, 0644);
MODULE_PARM_DESC(shared_inserts,
		 "Insert into a leaf that has room with the index shared (N: exclusive)");

/*
 * Changed leaves past the budget before a checkpoint is asked for; and
 * clean ones before a shared insert trims them.
 */
#define BCH_DIRTY_LEAVES_SLACK	64

/* The budget in leaves, if the parameter changed; btree lock held for write. */
static void bch_index_budget(struct bch_cache_set *set)
{
	int mb = READ_ONCE(node_cache_mb);
	u64 bytes, leaf;

	if (mb == set->node_cache_mb)
		return;
	set->node_cache_mb = mb;
	if (mb < 0)
		bytes = ((u64)totalram_pages() << PAGE_SHIFT) / 8;
	else
		bytes = (u64)mb << 20;
	/*
	 * A leaf's memory: as many in-memory keys as a bucket holds on disk
	 * (a bucket's worth in version 3, half as much again in version 2).
	 */
	leaf = (u64)bch_node_keys((u64)set->bucket_size << SECTOR_SHIFT, set->key_bytes) *
	       sizeof(struct bch_bkey);
	set->btree.max_leaves = div64_u64(bytes, leaf);
}

static int bch_op_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	return bch_alloc_btree(b->priv, bucket, gen);
}

static void bch_op_free(struct bch_btree *b, u64 bucket)
{
	struct bch_cache_set *set = b->priv;

	bch_free_btree(set, bucket, set->cp_flushing);
}

static int bch_op_io(struct bch_btree *b, bool write, u64 bucket, u32 offset,
		     void *buf, u32 sectors)
{
	struct bch_cache_set *set = b->priv;
	unsigned int dev = bch_node_bucket_dev(bucket);
	u64 nr = bch_node_bucket_nr(bucket);
	struct bch_member *m;

	/* A node pointer that passed btree.c's check but not the layout. */
	if (dev >= set->nr_members)
		return -EUCLEAN;
	m = set->members[dev];
	if (nr < m->first_bucket || nr >= m->nbuckets ||
	    offset + sectors > set->bucket_size)
		return -EUCLEAN;
	if (bch_member_failed(m))
		return -ENXIO;	/* a node on a lost member: bch_index_open() */
	/*
	 * Not from within a bio's submission (map()): what it submits is
	 * queued until it returns, so waiting for it would never end.
	 */
	if (current->bio_list)
		return -EAGAIN;
	/*
	 * A set appended to a bucket that a checkpoint on disk may name must
	 * not reach the media before the data and the nodes its keys point
	 * to, which are written without FUA: flush them first, on every
	 * member. A node written whole goes to a bucket nothing on disk
	 * names yet.
	 */
	if (write && offset) {
		int r = bch_flush_others(set, m);

		if (r)
			return r;
	}
	return bch_member_io(set, m, REQ_META | (!write ? REQ_OP_READ :
			     offset ? REQ_OP_WRITE | REQ_PREFLUSH : REQ_OP_WRITE),
			     nr * set->bucket_size + offset, buf,
			     (size_t)sectors << SECTOR_SHIFT);
}

/* The journal's rule for its keys (journal.c): one rule for both. */
static const char *bch_op_key_invalid(struct bch_btree *b,
				      const struct bch_bkey *k)
{
	return bch_key_invalid(b->priv, k);
}

static const struct bch_btree_ops bch_btree_ops = {
	.alloc		= bch_op_alloc,
	.free		= bch_op_free,
	.io		= bch_op_io,
	.key_dead	= bch_key_dead,
	.key_stale_copy	= bch_key_stale_copy,
	.key_invalid	= bch_op_key_invalid,
};

static void bch_index_setup(struct bch_cache_set *set)
{
	struct bch_btree *b = &set->btree;

	memset(b, 0, sizeof(*b));
	b->ops = &bch_btree_ops;
	b->priv = set;
	b->bucket_sectors = set->bucket_size;
	b->nr_members = set->nr_members;
	b->block_sectors = set->block_size;
	b->key_bytes = set->key_bytes;
	b->max_sets = 4;
	set->node_cache_mb = INT_MIN;
	bch_index_budget(set);
}

/*
 * Forget the index being loaded. Every origin is invalidated before the
 * set is used, so the buckets it held can all be reused.
 */
static void bch_index_drop(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 i;

	bch_btree_free(&set->btree);
	bch_index_setup(set);
	bch_for_each_live_member(m, set) {
		for (i = 0; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			b->sectors = 0;
			b->dirty = 0;
			b->state = BCH_B_FREE;
			b->last_gc = b->gen;
		}
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		atomic64_set(&set->slots[i].dirty, 0);
}

/*
 * Evict down to the budget before reading leaves that must then stay for
 * the lookups under the read lock that follow (btree lock held for write).
 */
void bch_index_trim(struct bch_cache_set *set)
{
	lockdep_assert_held_write(&set->btree_lock);
	bch_index_budget(set);
	bch_btree_evict(&set->btree, set->btree.max_leaves);
}

/* Clean leaves, evicted when memory is short. */
#if KERNEL_VERSION(6, 7, 0) <= LINUX_VERSION_CODE
static struct bch_cache_set *bch_shrinker_set(struct shrinker *s)
{
	return s->private_data;
}
#else
struct bch_shrinker {
	struct shrinker		s;
	struct bch_cache_set	*set;
};

static struct bch_cache_set *bch_shrinker_set(struct shrinker *s)
{
	return container_of(s, struct bch_shrinker, s)->set;
}
#endif

static unsigned long bch_index_shrink_count(struct shrinker *s,
					    struct shrink_control *sc)
{
	struct bch_cache_set *set = bch_shrinker_set(s);

	return READ_ONCE(set->btree.nclean);
}

static unsigned long bch_index_shrink_scan(struct shrinker *s,
					   struct shrink_control *sc)
{
	struct bch_cache_set *set = bch_shrinker_set(s);
	u64 leaves, freed;

	/* Never wait for the IO path from reclaim. */
	if (!down_write_trylock(&set->btree_lock))
		return SHRINK_STOP;
	leaves = set->btree.leaves;
	freed = bch_btree_evict(&set->btree, leaves > sc->nr_to_scan ?
				leaves - sc->nr_to_scan : 0);
	up_write(&set->btree_lock);
	return freed;
}

static int bch_index_shrinker_start(struct bch_cache_set *set)
{
	struct shrinker *s;

#if KERNEL_VERSION(6, 7, 0) <= LINUX_VERSION_CODE
	s = shrinker_alloc(0, "dm-bcache:%s", set->name);
	if (!s)
		return -ENOMEM;
	s->count_objects = bch_index_shrink_count;
	s->scan_objects = bch_index_shrink_scan;
	s->private_data = set;
	shrinker_register(s);
#else
	struct bch_shrinker *bs = kzalloc(sizeof(*bs), GFP_KERNEL);
	int r;

	if (!bs)
		return -ENOMEM;
	s = &bs->s;
	bs->set = set;
	s->count_objects = bch_index_shrink_count;
	s->scan_objects = bch_index_shrink_scan;
	s->seeks = DEFAULT_SEEKS;
	r = register_shrinker(s, "dm-bcache:%s", set->name);
	if (r) {
		kfree(bs);
		return r;
	}
#endif
	set->shrinker = s;
	return 0;
}

static void bch_index_shrinker_stop(struct bch_cache_set *set)
{
	if (!set->shrinker)
		return;
#if KERNEL_VERSION(6, 7, 0) <= LINUX_VERSION_CODE
	shrinker_free(set->shrinker);
#else
	unregister_shrinker(set->shrinker);
	kfree(container_of(set->shrinker, struct bch_shrinker, s));
#endif
	set->shrinker = NULL;
}

/* First pass over the journal: its data buckets must not be handed out. */
static int bch_replay_mark(struct bch_cache_set *set, const struct bch_bkey *k,
			   void *arg)
{
	unsigned int slot = k->inode % BCH_UUID_SLOTS, i;
	bool live = false;

	for (i = 0; i < k->nptrs; i++) {
		struct bch_bucket *b = bch_ptr_bucket(set, k->ptr[i]);

		/* A copy on a lost member counts for nothing (member.c). */
		if (bch_ptr_gen(k->ptr[i]) != b->gen ||
		    bch_loc_failed(set, k->ptr[i]))
			continue;
		live = true;
		b->sectors += k->size;
		/* Counted twice if it overwrote dirty data: exact after GC. */
		if (k->flags & BCH_KEY_DIRTY)
			b->dirty += k->size;
	}
	if (live && (k->flags & BCH_KEY_DIRTY) &&
	    k->inode == bch_slot_inode(set, slot))
		atomic64_add(k->size, &set->slots[slot].dirty);
	return 0;
}

static int bch_replay_insert(struct bch_cache_set *set,
			     const struct bch_bkey *k, void *arg)
{
	return bch_btree_insert(&set->btree, k);
}

static int bch_replay_none(struct bch_cache_set *set, const struct bch_bkey *k,
			   void *arg)
{
	return 0;
}

/*
 * Load the index at open: the checkpoint, and the journal replayed over
 * it. If the metadata is not @trusted, or either cannot be read, the index
 * starts empty and *@lost tells the caller to invalidate every origin. The
 * result is checkpointed at once, so the journal starts empty.
 *
 * What each bucket holds comes from the bucket array if its states are
 * valid (BCH_BUCKET_STATE): then only the root and the leaves the replay
 * needs are read, and the open takes time in proportion to the journal.
 * Else an initial GC pass reads the whole index and counts it.
 */
int bch_index_open(struct bch_cache_set *set, bool trusted, bool *lost)
{
	struct bch_btree *b = &set->btree;
	struct bch_jpos end;
	struct bch_bkey root;
	bool states;
	int r;

	init_rwsem(&set->btree_lock);
	init_rwsem(&set->insert_gate);
	mutex_init(&set->checkpoint_lock);
	init_waitqueue_head(&set->cp_held_wait);
	bch_index_setup(set);
	*lost = !trusted;

	/* A root no key of this version can be: the index cannot be trusted. */
	r = trusted && !bch_sb_root(set->sb, &root) ? -EUCLEAN : 0;
	states = !r && trusted && bch_prios_load_state(set);
	bch_prios_read_done(set);
	if (states)
		bch_uuids_load_dirty(set);
	set->states_ok = states;
	if (!r && trusted && root.size) {
		r = bch_btree_load(b, &root, le32_to_cpu(set->sb->btree_level));
		if (!r && !states)
			r = bch_gc_initial(set);
	}
	if (!r && trusted)
		r = bch_journal_walk(set, bch_replay_mark, NULL, &end);
	/*
	 * A node on a missing member (sets whose nodes were not all on
	 * member 0): the index is there, the table just left it out.
	 */
	if (r == -ENXIO)
		return r;
	if (r) {
		DMWARN("%s: cannot load the index (%d): cached data invalidated",
		       set->name, r);
		*lost = true;
	}
	if (*lost) {
		/* Start after whatever the ring holds: it must not replay. */
		bch_index_drop(set);
		bch_journal_walk(set, bch_replay_none, NULL, &end);
		if (end.max_seq >= end.seq)
			end.seq = end.max_seq + 1;
	}
	bch_alloc_load(set);
	if (!b->root) {
		r = bch_btree_init(b);
		if (r)
			return r;
	}
	if (!*lost) {
		down_write(&set->btree_lock);
		set->btree_drain = true;
		r = bch_journal_walk(set, bch_replay_insert, NULL, &end);
		set->btree_drain = false;
		up_write(&set->btree_lock);
		if (r == -ENXIO)
			return r;
		if (r) {
			DMWARN("%s: cannot replay the journal (%d): cached data invalidated",
			       set->name, r);
			bch_index_drop(set);
			bch_alloc_load(set);
			r = bch_btree_init(b);
			if (r)
				return r;
			*lost = true;
		} else if (end.entries) {
			DMINFO("%s: journal replayed: %llu entries, %llu keys",
			       set->name, end.entries, end.keys);
		}
	}
	bch_journal_start(set, &end);
	return bch_index_shrinker_start(set);
}

/*
 * An insert of the IO path, the writeback worker or a fill; btree lock
 * held for write (bch_index_update() inserts shared when it can).
 * -EAGAIN from map(): a leaf must be read first.
 */
int bch_index_insert(struct bch_cache_set *set, const struct bch_bkey *k)
{
	struct bch_btree *b = &set->btree;
	int r;

	if (bch_fault(BCH_FAULT_INSERT))
		return -ENOMEM;
	bch_index_budget(set);
	r = bch_btree_insert(b, k);
	if (!r)
		bch_gc_inserted(set, k);
	/* Changed leaves stay until a checkpoint writes them: bound them. */
	if (b->leaves - b->nclean > b->max_leaves + BCH_DIRTY_LEAVES_SLACK)
		queue_work(set->wq, &set->gc_work);
	return r;
}

/*
 * @op's insert with the btree lock held for read and the gate shared:
 * false if the leaf cannot take the key as it is (not resident, full,
 * being written, or the key spans leaves), or the index may not change
 * (a checkpoint holds the journal). The leaf's lock orders the check,
 * the insert and what done() journals with every other change to the
 * range and with the lookups of it, as the write lock does.
 */
static bool bch_index_update_shared(struct bch_cache_set *set,
				    struct bch_index_op *op, int *r)
{
	struct bch_btree *b = &set->btree;
	bool dirty = false, trim = false;
	struct bch_node *n = NULL;

	if (!READ_ONCE(shared_inserts))
		return false;
	down_read(&set->btree_lock);
	/* Set under the write lock; cleared only once the journal is free. */
	if (!READ_ONCE(set->cp_held)) {
		down_read(&set->insert_gate);
		n = bch_btree_leaf_lock(b, &op->k);
		if (n) {
			*r = op->check(op);
			if (!*r && bch_fault(BCH_FAULT_INSERT))
				*r = -ENOMEM;
			if (!*r) {
				bch_btree_leaf_insert(b, n, &op->k);
				bch_gc_inserted(set, &op->k);
			}
			op->done(op, *r);
			bch_btree_leaf_unlock(n);
			if (!*r)
				atomic64_inc(&set->inserts_shared);
			/* A clean leaf may be dirty now: bound them, as below. */
			dirty = bch_btree_dirty_leaves(b) >
				b->max_leaves + BCH_DIRTY_LEAVES_SLACK;
			/*
			 * Nor does it evict, as an exclusive insert does:
			 * leaves read ahead for it may pile up. Trim now and
			 * then, a batch at a time.
			 */
			trim = bch_btree_evictable(b) >= BCH_DIRTY_LEAVES_SLACK;
		}
		up_read(&set->insert_gate);
	}
	up_read(&set->btree_lock);
	if (dirty)
		queue_work(set->wq, &set->gc_work);
	if (trim) {
		/* Only memory changes: no need to wait for a held journal. */
		down_write(&set->btree_lock);
		bch_index_trim(set);
		up_write(&set->btree_lock);
	}
	return n;
}

/*
 * Index @op->k if @op->check() says so, then call @op->done(), with the
 * range's changes ordered: shared if the leaf can take the key as it is,
 * else with the btree lock held for write (which may wait for a
 * checkpoint). Returns the result done() was given.
 */
int bch_index_update(struct bch_cache_set *set, struct bch_index_op *op)
{
	int r;

	if (bch_index_update_shared(set, op, &r))
		return r;
	bch_index_lock(set);
	r = op->check(op);
	if (!r)
		r = bch_index_insert(set, &op->k);
	op->done(op, r);
	up_write(&set->btree_lock);
	return r;
}

/*
 * Trade the write lock for a shared hold that keeps shared inserts out,
 * for walks that count what inserts change; lookups go on. The gate is
 * taken first, so no insert comes in between.
 */
void bch_index_downgrade(struct bch_cache_set *set)
{
	down_write(&set->insert_gate);
	downgrade_write(&set->btree_lock);
}

/* The same hold, from nothing. */
void bch_index_read_gated(struct bch_cache_set *set)
{
	down_read(&set->btree_lock);
	down_write(&set->insert_gate);
}

void bch_index_unlock_gated(struct bch_cache_set *set)
{
	up_write(&set->insert_gate);
	up_read(&set->btree_lock);
}

/*
 * A lookup with the btree lock held for write, reading the leaves it
 * needs; -EAGAIN from map().
 */
int bch_index_lookup(struct bch_cache_set *set, u32 inode, u64 start, u64 end,
		     struct bch_bkey *out)
{
	lockdep_assert_held_write(&set->btree_lock);
	return bch_btree_lookup_load(&set->btree, inode, start, end, out);
}

/*
 * The checksummed range at location @ptr, @gen (origin [@sector,
 * +@sectors)) holds bad data: punch its clean keys that are still in the
 * index (not overwritten, the bucket not reused) out of it, so that the
 * range is read from the origin. A failure leaves them: the next read
 * finds the error again.
 */
void bch_index_drop_bad(struct bch_cache_set *set, u32 inode, u64 sector,
			u32 sectors, u64 ptr, u8 gen)
{
	u64 pos = sector, end = sector + sectors;
	struct bch_bkey k, hole;
	int r;

	bch_index_lock(set);
	for (; pos < end; pos += k.size) {
		r = bch_index_lookup(set, inode, pos, end, &k);
		if (r < 0 || WARN_ON_ONCE(!k.size))
			break;
		if (!r || bch_key_gen(&k) != gen || (k.flags & BCH_KEY_DIRTY) ||
		    !(k.flags & BCH_KEY_CSUM) ||
		    bch_key_loc(&k) - k.csum_front != ptr)
			continue;
		hole = (struct bch_bkey) {
			.inode	= inode,
			.size	= k.size,
			.end	= pos + k.size,
			.flags	= BCH_KEY_HOLE,
		};
		if (bch_index_insert(set, &hole))
			break;
		bch_journal_add(set, &hole, NULL);
	}
	up_write(&set->btree_lock);
}

/* Between two steps of a checkpoint: let the IO waiting for the index in. */
void bch_index_yield(struct bch_cache_set *set)
{
	up_write(&set->btree_lock);
	cond_resched();
	down_write(&set->btree_lock);
}

/* Nodes one read-ahead reads at most: the depth and a few leaves. */
#define BCH_READ_AHEAD_NODES	8

/*
 * Buffers for nodes read with the btree lock let go: a few per set, a
 * bucket each, made on first use. None free, or no memory: -1, and the
 * caller's lookup reads under the lock as before.
 */
int bch_index_buf_get(struct bch_cache_set *set)
{
	int i;

	BUILD_BUG_ON(BCH_READ_BUFS > BITS_PER_LONG);
	for (i = 0; i < BCH_READ_BUFS; i++) {
		if (test_and_set_bit_lock(i, &set->read_busy))
			continue;
		if (!set->read_buf[i])
			set->read_buf[i] = bch_kvzalloc((size_t)set->bucket_size <<
							SECTOR_SHIFT);
		if (set->read_buf[i])
			return i;
		clear_bit_unlock(i, &set->read_busy);
	}
	return -1;
}

void bch_index_buf_put(struct bch_cache_set *set, int slot)
{
	if (slot >= 0)
		clear_bit_unlock(slot, &set->read_busy);
}

/*
 * Read the nodes a lookup of [@start, @end) of @inode lacks, each with
 * no lock held, so that the IO waiting for the index does not wait for
 * the disk as well (btree.c: bch_btree_want()). Best effort: a node the
 * fill refuses, or that is evicted again before its user takes the lock,
 * that user reads under the lock. @trim evicts down to the budget first,
 * for a user that then reads what is still missing and holds it; without
 * it, a writer holding or waiting for the lock ends the read-ahead, so
 * that an insert never queues behind a writer twice.
 */
void bch_index_read_ahead(struct bch_cache_set *set, u32 inode, u64 start,
			  u64 end, bool trim)
{
	struct bch_btree *b = &set->btree;
	struct bch_btree_want w;
	u64 last = U64_MAX;
	int i, r, slot = -1;
	bool missing;

	/* Not from map(): its IO would wait for map() to return. */
	if (current->bio_list)
		return;
	if (trim) {
		down_write(&set->btree_lock);
		bch_index_trim(set);
		downgrade_write(&set->btree_lock);
	} else if (!READ_ONCE(read_unlocked) ||
		   !down_read_trylock(&set->btree_lock)) {
		return;
	}
	for (i = 0; i < BCH_READ_AHEAD_NODES; i++) {
		if (i)
			down_read(&set->btree_lock);
		missing = READ_ONCE(read_unlocked) && !bch_cache_failed(set) &&
			  bch_btree_want(b, inode, start, end, &w);
		up_read(&set->btree_lock);
		/* The same node again: evicted meanwhile, leave it to the user. */
		if (!missing || bch_ptr_loc(w.key.ptr[0]) == last)
			break;
		last = bch_ptr_loc(w.key.ptr[0]);
		if (slot < 0)
			slot = bch_index_buf_get(set);
		if (slot < 0 || bch_btree_want_read(b, &w, set->read_buf[slot]))
			break;
		down_write(&set->btree_lock);
		r = bch_btree_want_fill(b, &w, set->read_buf[slot], false);
		up_write(&set->btree_lock);
		if (r)
			break;
	}
	bch_index_buf_put(set, slot);
}

/*
 * Between two steps of a GC pass: let the IO waiting for the index in,
 * and meanwhile read what the next step lacks into buffer @slot (if not
 * -1). Holds the lock for write again on return.
 */
void bch_index_yield_gc(struct bch_cache_set *set, int slot)
{
	struct bch_btree *b = &set->btree;
	struct bch_btree_want w;
	bool read = false;
	int i, r;

	for (i = 0; i < BCH_READ_AHEAD_NODES; i++) {
		if (slot < 0 || bch_cache_failed(set) ||
		    !READ_ONCE(read_unlocked) || !bch_btree_gc_want(b, &w))
			break;
		up_write(&set->btree_lock);
		read = true;
		r = bch_btree_want_read(b, &w, set->read_buf[slot]);
		down_write(&set->btree_lock);
		if (r || bch_btree_want_fill(b, &w, set->read_buf[slot], true))
			break;
	}
	if (!read)
		bch_index_yield(set);
}

/*
 * Take the btree lock for write to change the index. While a checkpoint
 * holds the journal, a change would be in no entry, and perhaps not in
 * the checkpoint either: it waits for the end. Lookups do not wait, nor
 * do loads, which change only what is in memory.
 */
void bch_index_lock(struct bch_cache_set *set)
{
	for (;;) {
		wait_event(set->cp_held_wait, !READ_ONCE(set->cp_held));
		down_write(&set->btree_lock);
		if (!set->cp_held)
			return;
		up_write(&set->btree_lock);
	}
}

/*
 * Write the index a node at a time and note the root that is then on
 * disk. Each node is written with the btree lock downgraded, so lookups
 * (hits) do not wait for a node's IO unless a change already waits for
 * the lock (an rwsem queues readers behind it), and changes wait for one
 * at most: a key inserted between nodes is in a journal entry the replay
 * will read, whether or not its leaf was written, unless the checkpoint holds
 * the journal, and then none is inserted. Holds the lock again on return.
 */
static int bch_index_write(struct bch_cache_set *set, struct bch_bkey *root,
			   unsigned int *level)
{
	int r, w;

	bch_alloc_checkpoint_start(set);
	bch_btree_flush_start(&set->btree);
	for (;;) {
		bch_index_budget(set);
		set->btree_drain = true;
		set->cp_flushing = true;
		r = bch_btree_flush_step(&set->btree);
		set->cp_flushing = false;
		set->btree_drain = false;
		if (r < 0)
			break;
		downgrade_write(&set->btree_lock);
		w = bch_btree_flush_write(&set->btree);
		if (!w && !r)
			bch_btree_root(&set->btree, root, level);
		up_read(&set->btree_lock);
		cond_resched();
		down_write(&set->btree_lock);
		if (w)
			r = w;
		if (r <= 0)
			break;
	}
	return r;
}

/*
 * The bucket states and slot dirty counts the next open reads instead of
 * the index, taken now that the checkpoint has begun (BCH_BUCKET_STATE).
 * Any moment after its start will do, so the lock is let go: the counts
 * drop only when dirty data was written back, or when a GC pass is
 * applied, which is once its checkpoint is durable.
 */
static int bch_checkpoint_state(struct bch_cache_set *set)
{
	int r;

	up_write(&set->btree_lock);
	mutex_lock(&set->lock);
	r = bch_uuids_write(set);
	if (!r)
		r = bch_prios_write(set);
	/* Whatever the superblock names now, these hold for it. */
	if (!r)
		set->states_ok = true;
	mutex_unlock(&set->lock);
	down_write(&set->btree_lock);
	return r;
}

/* Point the superblock at @root and the journal past @seq, @pos. */
static int bch_checkpoint_sb(struct bch_cache_set *set, const struct bch_bkey *root,
			     unsigned int level, u64 seq, u64 pos)
{
	struct bch_sb_disk *sb = set->sb;
	struct bch_bkey_disk old_root;
	struct bch_bkey3_disk old_root3;
	__le64 old_seq, old_pos;
	__le32 old_level;
	int r;

	mutex_lock(&set->lock);
	old_root = sb->btree_root;
	old_root3 = sb->btree_root3;
	old_level = sb->btree_level;
	old_seq = sb->journal_seq;
	old_pos = sb->journal_pos;
	bch_sb_set_root(sb, root);
	sb->btree_level = cpu_to_le32(level);
	sb->journal_seq = cpu_to_le64(seq);
	sb->journal_pos = cpu_to_le64(pos);
	r = bch_sb_write(set);
	if (r) {
		/* What is on disk stays in force. */
		sb->btree_root = old_root;
		sb->btree_root3 = old_root3;
		sb->btree_level = old_level;
		sb->journal_seq = old_seq;
		sb->journal_pos = old_pos;
	}
	mutex_unlock(&set->lock);
	return r;
}

/*
 * What a failed checkpoint (@r; none if 0) leaves: with the btree lock
 * held for write. For want of memory or buckets, what is on disk stays
 * in force, and what the journal could not hold waits for a checkpoint
 * that succeeds (bch_gc_work() tries again). If the device failed it,
 * every origin is invalidated.
 */
static void bch_checkpoint_failed(struct bch_cache_set *set, int r)
{
	lockdep_assert_held_write(&set->btree_lock);
	if (!r)
		return;
	if (bch_checkpoint_retry(r)) {
		DMWARN_LIMIT("%s: checkpoint failed (%d): writes held, retrying",
			     set->name, r);
		return;
	}
	/* A failed set's every insert may try one: say it now and then. */
	DMERR_LIMIT("%s: checkpoint failed (%d): invalidating every origin",
		    set->name, r);
	bch_cache_io_error(set, true);
	bch_slot_invalidate_all(set);
}

/*
 * Make the index durable and free the journal: write every dirty node,
 * then point the superblock at the new root and at where the journal
 * was when the checkpoint began. A GC pass comes first if @gc or if the
 * allocator asked for one (need_gc): it costs a walk over every key,
 * and a checkpoint that only frees the journal has no use for it. The
 * pass and the writes go a node at a time with IO going on in between.
 * After a journal overflow, the entries on disk stop short of keys the
 * index holds and the checkpoint holds the journal
 * (bch_journal_checkpoint_start()): lookups still go on in between, but
 * changes to the index wait for the end (bch_index_lock()).
 * Node buckets the old checkpoint named are freed only after that, and
 * last_gc moves only then. If the device fails it, every origin is
 * invalidated before the writes it held go on, so none of them can leave
 * stale data.
 */
int bch_checkpoint(struct bch_cache_set *set, bool gc)
{
	struct bio_list waiters;
	struct bch_bkey root;
	unsigned int level;
	u64 seq, pos;
	bool held;
	int r;

	mutex_lock(&set->checkpoint_lock);
	down_write(&set->btree_lock);
	held = !bch_journal_checkpoint_start(set, &seq, &pos);
	set->cp_held = held;
	if (bch_fault(BCH_FAULT_CHECKPOINT))
		r = -ENOMEM;
	else if (gc || READ_ONCE(set->need_gc))
		r = bch_gc_pass(set);
	else
		r = 0;
	if (!r)
		r = bch_index_write(set, &root, &level);
	if (!r)
		r = bch_checkpoint_state(set);
	if (!r)
		r = bch_checkpoint_sb(set, &root, level, seq, pos);
	/* A failed device: no IO may use it before the origins are dropped. */
	bch_checkpoint_failed(set, r);
	/*
	 * A walk over every bucket: lookups go on, and changes in between
	 * its chunks unless the checkpoint holds the journal.
	 */
	bch_index_downgrade(set);
	bch_alloc_gc_apply(set, !r);
	up_write(&set->insert_gate);
	if (!held)
		up_read(&set->btree_lock);
	bch_alloc_checkpoint_end(set, !r);
	if (!r)
		atomic64_inc(&set->checkpoints);
	/* If held, before any change: none may slip in between the index and this. */
	bch_journal_checkpoint_end(set, !held, r, &waiters);
	if (held) {
		set->cp_held = false;
		up_read(&set->btree_lock);
		wake_up_all(&set->cp_held_wait);
	}

	bch_journal_checkpoint_release(set, !r, &waiters);
	mutex_unlock(&set->checkpoint_lock);
	return r;
}

/*
 * A checkpoint that must be taken now (open, close): a failure for want
 * of memory is retried for a while, as the IO path's are by bch_gc_work().
 */
int bch_checkpoint_sync(struct bch_cache_set *set, bool gc)
{
	unsigned int tries = 50;
	int r;

	while (bch_checkpoint_retry(r = bch_checkpoint(set, gc)) && --tries)
		msleep(100);
	return r;
}

/* A checkpoint failed for want of memory or buckets, not of the device. */
bool bch_checkpoint_retry(int r)
{
	return r == -ENOMEM || r == -ENOSPC;
}

void bch_index_free(struct bch_cache_set *set)
{
	int i;

	bch_index_shrinker_stop(set);
	bch_btree_free(&set->btree);
	for (i = 0; i < BCH_READ_BUFS; i++)
		bch_kvfree(set->read_buf[i]);
}
