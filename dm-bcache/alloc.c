// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: bucket allocation and replacement.
 *
 * Data is appended to one open bucket at a time. Free buckets wait on a
 * FIFO; when it runs low, the data buckets of lowest priority are
 * invalidated by bumping their generation, which makes every key that
 * points into them stale at once. Priorities follow the seed's scheme:
 * a filled bucket starts at cache_priority_initial, every hit adds
 * cache_priority_hit per 4 KiB plus cache_priority_seek, and every
 * cache_priority_rescale sectors of IO all priorities decay by 7/8.
 *
 * An invalidated bucket is reused only after its new gen is on disk
 * (FREE_INC -> PERSISTING -> FREE, written by prio.c from the reclaim
 * work): a crash must never bring back a key that matches the old gen.
 */
#include <linux/vmalloc.h>

#include "dm-bcache.h"
#include "victims.h"

/*
 * Free buckets that only the btree may take, so an index insert can
 * always find a node even when data fills have used everything else, and
 * a checkpoint can rewrite every node to a new bucket (the old ones are
 * freed only once the checkpoint is durable).
 */
#define BCH_BTREE_RESERVE	8

static u64 bch_btree_reserve(struct bch_member *m)
{
	return BCH_BTREE_RESERVE + m->nr_btree;
}

static u64 bch_reclaim_target(struct bch_member *m)
{
	return max_t(u64, bch_btree_reserve(m) * 2,
		     (m->nbuckets - m->first_bucket) / 16);
}

static bool bch_can_invalidate(struct bch_bucket *b)
{
	return b->state == BCH_B_DATA && !atomic_read(&b->pending) &&
	       !b->dirty && (u8)(b->gen + 1 - b->last_gc) < BCH_GC_GEN_MAX;
}

/* Bucket numbers fit in 32 bits (BCH_MAX_BUCKETS): 4 bytes a bucket. */
static void bch_fifo_push(struct bch_member *m, u64 bucket)
{
	u64 n = m->nbuckets;

	m->free_fifo[(m->free_head + m->nr_free) % n] = (u32)bucket;
	m->nr_free++;
}

static u64 bch_fifo_pop(struct bch_member *m)
{
	u64 bucket = m->free_fifo[m->free_head];

	m->free_head = (m->free_head + 1) % m->nbuckets;
	m->nr_free--;
	return bucket;
}

/*
 * Long walks over the bucket array let others at the lock now and then:
 * map() takes it for every fill. What they walk for is per bucket, so a
 * bucket changed while the lock was dropped is judged as it is now.
 */
#define BCH_BUCKETS_PER_LOCK	4096

static void bch_alloc_relax(struct bch_cache_set *set, u64 i)
{
	if (!(i % BCH_BUCKETS_PER_LOCK))
		cond_resched_lock(&set->alloc_lock);
}

/*
 * The same for the walks of a GC pass, which also hold the btree lock
 * for read and the insert gate so that no insert counts meanwhile: an
 * insert waiting for either goes in between, so that inserts wait for a
 * few thousand buckets and not for the whole array. What the walk does
 * is per bucket and an insert keeps both a bucket's counts
 * (bch_gc_inserted()), so a bucket is right whether the walk has been by
 * it or not.
 */
static void bch_alloc_relax_index(struct bch_cache_set *set, u64 i)
{
	lockdep_assert_held_read(&set->btree_lock);
	lockdep_assert_held_write(&set->insert_gate);
	if (i % BCH_BUCKETS_PER_LOCK)
		return;
	if (!rwsem_is_contended(&set->btree_lock) &&
	    !rwsem_is_contended(&set->insert_gate)) {
		cond_resched_lock(&set->alloc_lock);
		return;
	}
	spin_unlock(&set->alloc_lock);
	bch_index_unlock_gated(set);
	cond_resched();
	bch_index_read_gated(set);
	spin_lock(&set->alloc_lock);
}

/* Bump the gen (dropping all keys into @b); free once that is on disk. */
static void bch_bucket_invalidate(struct bch_cache_set *set,
				  struct bch_member *m, u64 i)
{
	struct bch_bucket *b = &m->buckets[i];

	lockdep_assert_held(&set->alloc_lock);
	if (b->state == BCH_B_DATA || b->state == BCH_B_OPEN)
		m->nr_data--;
	else if (b->state == BCH_B_BTREE || b->state == BCH_B_FREEING ||
		 b->state == BCH_B_FREEING_NEXT)
		m->nr_btree--;
	WRITE_ONCE(b->gen, b->gen + 1);
	atomic64_inc(&set->invalidations);
	/*
	 * The new gen must be visible before the bucket can be handed out
	 * and rewritten: pairs with the smp_rmb() in bch_ptr_stale().
	 */
	smp_wmb();
	b->state = BCH_B_FREE_INC;
	b->prio = 0;
	m->nr_free_inc++;
	/*
	 * Node buckets are bumped by every checkpoint that frees them, which
	 * need not run a pass: ask for one well before the gen can wrap.
	 */
	if ((u8)(b->gen - b->last_gc) >= BCH_GC_GEN_MAX / 2)
		set->need_gc = true;
}

/*
 * What an open reads instead of counting the index (BCH_BUCKET_STATE).
 * The running counts never count too little (but for dirty data written
 * back: bch_alloc_cleaned()), and a checkpoint writes the array after it
 * began, so whenever the superblock names that checkpoint, every key it
 * holds that the journal does not overwrite is counted here. Nodes it
 * names are BTREE, or FREEING until the next.
 */
static u8 bch_bucket_state_flags(const struct bch_bucket *b)
{
	u8 f = 0;

	switch (b->state) {
	case BCH_B_BTREE:
	case BCH_B_FREEING:
	case BCH_B_FREEING_NEXT:
		f = BCH_BUCKET_BTREE;
		break;
	case BCH_B_OPEN:
	case BCH_B_DATA:
		if (b->sectors || b->dirty)
			f = BCH_BUCKET_DATA;
		if (b->dirty)
			f |= BCH_BUCKET_DIRTY;
		break;
	default:
		break;
	}
	if ((u8)(b->gen - b->last_gc) >= BCH_GC_GEN_MAX / 2)
		f |= BCH_BUCKET_GC_OLD;
	return f;
}

/*
 * The bucket array is being written (prio.c), @n entries from @first at
 * a time: take a copy of theirs.
 */
void bch_alloc_persist_fill(struct bch_cache_set *set, struct bch_member *m,
			    struct bch_bucket_disk *d, u64 first, u64 n)
{
	u64 i;

	spin_lock(&set->alloc_lock);
	for (i = first; i < first + n; i++, d++) {
		struct bch_bucket *b = &m->buckets[i];

		bch_alloc_relax(set, i);
		d->prio = cpu_to_le16(b->prio);
		d->gen = b->gen;
		d->flags = b->flags;
		if (!b->flags)
			d->flags |= bch_bucket_state_flags(b);
		if (b->state == BCH_B_FREE_INC)
			b->state = BCH_B_PERSISTING;
	}
	spin_unlock(&set->alloc_lock);
}

void bch_alloc_persist_done(struct bch_cache_set *set, bool ok)
{
	struct bch_member *m;
	u64 i;

	spin_lock(&set->alloc_lock);
	bch_for_each_live_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			bch_alloc_relax(set, i);
			if (b->state != BCH_B_PERSISTING)
				continue;
			if (ok) {
				b->state = BCH_B_FREE;
				m->nr_free_inc--;
				bch_fifo_push(m, i);
			} else {
				b->state = BCH_B_FREE_INC;
			}
		}
	}
	spin_unlock(&set->alloc_lock);
}

/*
 * Whether the bucket at @ptr (a location) was reused since it had @gen:
 * what a read from it, once completed, asks (the data read is good if
 * not, even if its member was lost meanwhile).
 */
bool bch_ptr_reused(struct bch_cache_set *set, u64 ptr, u8 gen)
{
	u64 bucket = bch_ptr_bucket_nr(set, ptr);
	struct bch_member *m;

	if (bch_ptr_dev(ptr) >= set->nr_members)
		return true;
	m = bch_ptr_member(set, ptr);
	if (bucket < m->first_bucket || bucket >= m->nbuckets)
		return true;
	/*
	 * Called after a cache read completed: if the bucket was reused
	 * while the read was in flight, its gen was bumped before the new
	 * data was written. Pairs with the smp_wmb() in invalidate.
	 */
	smp_rmb();
	return READ_ONCE(m->buckets[bucket].gen) != gen;
}

/*
 * Whether a copy at @ptr of @gen is gone: its bucket reused, or its member
 * lost (member.c), whose data is as good as reused to whoever would read it.
 */
bool bch_ptr_stale(struct bch_cache_set *set, u64 ptr, u8 gen)
{
	return bch_loc_failed(set, ptr) || bch_ptr_reused(set, ptr, gen);
}

/* Reclaim, if any member's free buckets are below its target (lock held). */
static void bch_reclaim_kick(struct bch_cache_set *set)
{
	struct bch_member *m;

	bch_for_each_live_member(m, set)
		if (m->nr_free < bch_reclaim_target(m))
			queue_work(set->wq, &set->reclaim_work);
}

/* Member @m's open bucket @o, with room; false if it has none to open. */
static bool bch_open_bucket(struct bch_cache_set *set, struct bch_member *m,
			    unsigned int o)
{
	struct bch_open *open = &m->open[o];
	struct bch_bucket *b;

	if (open->have && (open->offset >= set->bucket_size ||
			   bch_member_failed(m))) {
		m->buckets[open->bucket].state = BCH_B_DATA;
		open->have = false;
	}
	if (!open->have) {
		if (m->nr_free <= bch_btree_reserve(m) || bch_member_failed(m))
			return false;
		open->bucket = bch_fifo_pop(m);
		open->offset = 0;
		open->have = true;
		b = &m->buckets[open->bucket];
		b->state = BCH_B_OPEN;
		b->prio = set->prio.initial;
		b->sectors = 0;
		b->dirty = 0;
		/*
		 * What a GC pass counted here was stale when the gen moved on;
		 * no key with the new gen exists yet to race with this.
		 */
		b->gc_sectors = 0;
		b->gc_dirty = 0;
		m->nr_data++;
	}
	return true;
}

/* The next member in turn but @except whose open bucket @o has room. */
static struct bch_member *bch_alloc_member(struct bch_cache_set *set,
					   struct bch_member *except,
					   unsigned int o)
{
	struct bch_member *m;
	unsigned int i;

	for (i = 0; i < set->nr_members; i++) {
		m = set->members[(set->alloc_next + i) % set->nr_members];
		if (m != except && bch_open_bucket(set, m, o))
			return m;
	}
	return NULL;
}

/* Room left in @m's open bucket @o. */
static u32 bch_open_room(struct bch_cache_set *set, struct bch_member *m,
			 unsigned int o)
{
	return set->bucket_size - m->open[o].offset;
}

/* Take @sectors of @m's open bucket @o: at @ptr (a location), of @gen. */
static void bch_alloc_take(struct bch_cache_set *set, struct bch_member *m,
			   unsigned int o, u32 sectors, u64 *ptr, u8 *gen)
{
	struct bch_open *open = &m->open[o];
	struct bch_bucket *b = &m->buckets[open->bucket];

	*ptr = bch_ptr(m->idx, 0, open->bucket * set->bucket_size +
		       open->offset);
	*gen = b->gen;
	atomic_inc(&b->pending);
	open->offset += sectors;
}

/*
 * Room for up to @sectors of data, in one bucket: its location in @ptr
 * (bch_ptr_loc()), its gen, and how much in @got. Members take turns,
 * so that data spreads over all of them.
 */
int bch_alloc_data(struct bch_cache_set *set, u32 sectors, u64 *ptr, u8 *gen,
		   u32 *got)
{
	struct bch_member *m;
	int r = -ENOSPC;

	spin_lock(&set->alloc_lock);
	m = bch_alloc_member(set, NULL, BCH_OPEN_DATA);
	if (m) {
		set->alloc_next = (m->idx + 1) % set->nr_members;
		*got = min(sectors, bch_open_room(set, m, BCH_OPEN_DATA));
		bch_alloc_take(set, m, BCH_OPEN_DATA, *got, ptr, gen);
		r = 0;
	}
	bch_reclaim_kick(set);
	spin_unlock(&set->alloc_lock);
	return r;
}

/*
 * The same on two members at once, for the two copies of dirty data:
 * @got sectors at @ptr[0], in a data bucket, and at @ptr[1], in one for
 * second copies. -ENOSPC unless two members have room: dirty data is
 * never written as one copy on a set of several.
 */
int bch_alloc_mirrored(struct bch_cache_set *set, u32 sectors, u64 ptr[2],
		       u8 gen[2], u32 *got)
{
	struct bch_member *a, *b = NULL;
	int r = -ENOSPC;

	spin_lock(&set->alloc_lock);
	a = bch_alloc_member(set, NULL, BCH_OPEN_DATA);
	if (a)
		b = bch_alloc_member(set, a, BCH_OPEN_COPY);
	if (b) {
		set->alloc_next = (a->idx + 1) % set->nr_members;
		*got = min3(sectors, bch_open_room(set, a, BCH_OPEN_DATA),
			    bch_open_room(set, b, BCH_OPEN_COPY));
		bch_alloc_take(set, a, BCH_OPEN_DATA, *got, &ptr[0], &gen[0]);
		bch_alloc_take(set, b, BCH_OPEN_COPY, *got, &ptr[1], &gen[1]);
		r = 0;
	}
	bch_reclaim_kick(set);
	spin_unlock(&set->alloc_lock);
	return r;
}

/*
 * The fill that allocated at @ptr has inserted @inserted sectors or given
 * up. Live sectors are counted here, under the btree lock like GC's count,
 * so a GC pass never misses a fill that was in flight; and under the
 * allocator's, as shared inserts into the same bucket count side by side.
 */
void bch_alloc_done(struct bch_cache_set *set, u64 ptr, u32 inserted)
{
	struct bch_bucket *b = bch_ptr_bucket(set, ptr);

	lockdep_assert_held(&set->btree_lock);
	spin_lock(&set->alloc_lock);
	b->sectors += inserted;
	atomic_dec(&b->pending);
	spin_unlock(&set->alloc_lock);
}

/*
 * The same for a dirty key: counted under the allocator's lock, before
 * pending drops, so reclaim never sees the bucket without either.
 */
void bch_alloc_done_dirty(struct bch_cache_set *set, u64 ptr, u32 inserted)
{
	struct bch_bucket *b = bch_ptr_bucket(set, ptr);

	lockdep_assert_held(&set->btree_lock);
	spin_lock(&set->alloc_lock);
	b->sectors += inserted;
	b->dirty += inserted;
	atomic_dec(&b->pending);
	spin_unlock(&set->alloc_lock);
}

/*
 * Dirty key @k, in the index, is being marked clean: the buckets of its
 * copies may be reused once the rest of them is clean too (btree lock
 * held for write).
 */
void bch_alloc_cleaned(struct bch_cache_set *set, const struct bch_bkey *k)
{
	unsigned int i;

	lockdep_assert_held_write(&set->btree_lock);
	bch_gc_cleaned(set, k);
	spin_lock(&set->alloc_lock);
	for (i = 0; i < k->nptrs; i++) {
		struct bch_bucket *b = bch_ptr_bucket(set, k->ptr[i]);

		/* A copy whose bucket was reused: not this key's (a crash). */
		if (bch_ptr_gen(k->ptr[i]) == b->gen)
			b->dirty -= min(b->dirty, k->size);
	}
	spin_unlock(&set->alloc_lock);
}

/*
 * Space allocated at @ptr will be indexed as @more keys more than one
 * (each ends in bch_alloc_done() or bch_alloc_abort()): data checksums
 * bound a key's size, not the allocation's.
 */
void bch_alloc_split(struct bch_cache_set *set, u64 ptr, unsigned int more)
{
	atomic_add(more, &bch_ptr_bucket(set, ptr)->pending);
}

/* Space allocated at @ptr will not be indexed (callable from endio). */
void bch_alloc_abort(struct bch_cache_set *set, u64 ptr)
{
	atomic_dec(&bch_ptr_bucket(set, ptr)->pending);
}

/*
 * A node for a split, or for a checkpoint or the replay (btree_drain).
 * Splits leave a checkpoint the room to rewrite every node, itself
 * included: else it would fail for want of buckets, and the writes the
 * journal holds with it. A split that finds no room fails its insert,
 * whose write waits for reclaim instead.
 */
int bch_alloc_btree(struct bch_cache_set *set, u64 *bucket, u8 *gen)
{
	struct bch_member *m;
	struct bch_bucket *b;
	int r = -ENOSPC;
	u64 nr;

	spin_lock(&set->alloc_lock);
	/*
	 * Member 0: a node on another would be lost with it, and the index
	 * with the node (member.c).
	 */
	m = set->members[0];
	if (m->nr_free > (set->btree_drain ? 0 : m->nr_btree + 1)) {
		nr = bch_fifo_pop(m);
		*bucket = bch_node_bucket_id(m->idx, nr);
		b = &m->buckets[nr];
		b->state = BCH_B_BTREE;
		b->prio = U16_MAX;
		b->sectors = 0;
		b->gc_seen = true;	/* in the index before the pass can miss it */
		*gen = b->gen;
		m->nr_btree++;
		r = 0;
	}
	bch_reclaim_kick(set);
	spin_unlock(&set->alloc_lock);
	return r;
}

/*
 * The checkpoint on disk may still name the node: free it after the next.
 * While a checkpoint writes the index without stopping inserts, a node
 * it has written may name one that a split frees meanwhile: free that
 * one after the checkpoint after it. Its own rewrites (@by_checkpoint)
 * free buckets that nothing it writes names.
 */
void bch_free_btree(struct bch_cache_set *set, u64 bucket, bool by_checkpoint)
{
	struct bch_member *m = set->members[bch_node_bucket_dev(bucket)];

	spin_lock(&set->alloc_lock);
	m->buckets[bch_node_bucket_nr(bucket)].state =
		set->cp_window && !by_checkpoint ?
		BCH_B_FREEING_NEXT : BCH_B_FREEING;
	spin_unlock(&set->alloc_lock);
}

void bch_bucket_hit(struct bch_cache_set *set, u64 ptr, u32 sectors)
{
	struct bch_bucket *b = bch_ptr_bucket(set, ptr);
	unsigned int prio;

	prio = READ_ONCE(b->prio) + set->prio.seek +
		set->prio.hit * DIV_ROUND_UP(sectors, 8);
	WRITE_ONCE(b->prio, min_t(unsigned int, prio, U16_MAX - 1));
	bch_account_io(set, sectors);
}

void bch_account_io(struct bch_cache_set *set, u32 sectors)
{
	if (atomic64_add_return(sectors, &set->rescale_sectors) >=
	    set->prio.rescale) {
		atomic64_set(&set->rescale_sectors, 0);
		queue_work(set->wq, &set->rescale_work);
	}
}

static void bch_rescale_work(struct work_struct *work)
{
	struct bch_cache_set *set = container_of(work, struct bch_cache_set,
						 rescale_work);
	struct bch_member *m;
	u64 i;

	spin_lock(&set->alloc_lock);
	bch_for_each_live_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			bch_alloc_relax(set, i);
			if (b->state == BCH_B_DATA || b->state == BCH_B_OPEN)
				b->prio = b->prio - b->prio / 8;
		}
	}
	spin_unlock(&set->alloc_lock);
}

/*
 * Invalidate member @m's lowest-priority data buckets until its FIFO
 * holds the reclaim target: one pass keeps the candidates in a bounded
 * heap (victims.h), then those still invalidatable go; if a GC pass
 * would free more, it is asked for. -ENODATA if it wants none.
 */
static int bch_reclaim_member(struct bch_cache_set *set, struct bch_member *m)
{
	struct bch_victims h = { };
	u64 want, have, i, n = 0;
	bool blocked = false;

	spin_lock(&set->alloc_lock);
	want = bch_reclaim_target(m);
	have = m->nr_free + m->nr_free_inc;
	want = want > have ? want - have : 0;
	spin_unlock(&set->alloc_lock);
	/* Writes may wait for this (an index insert that found no room). */
	h.v = want ? kvmalloc_array(want, sizeof(*h.v), GFP_NOIO) : NULL;
	if (!h.v)
		return -ENODATA;
	h.want = want;

	spin_lock(&set->alloc_lock);
	for (i = m->first_bucket; i < m->nbuckets; i++) {
		struct bch_bucket *b = &m->buckets[i];

		bch_alloc_relax(set, i);
		if (bch_can_invalidate(b))
			bch_victims_add(&h, b->prio, i);
		/* Held back by its gen only: a GC pass frees it. */
		else if (b->state == BCH_B_DATA && !atomic_read(&b->pending) &&
			 !b->dirty)
			blocked = true;
	}
	for (i = 0; i < h.nr; i++) {
		u64 bucket = bch_victim_bucket(h.v[i]);

		bch_alloc_relax(set, i + 1);
		/* Judged again: the lock was dropped during the walk. */
		if (bch_can_invalidate(&m->buckets[bucket])) {
			bch_bucket_invalidate(set, m, bucket);
			n++;
		}
	}
	if (blocked || n < want)
		set->need_gc = true;
	spin_unlock(&set->alloc_lock);
	kvfree(h.v);
	return 0;
}

static void bch_reclaim_work(struct work_struct *work)
{
	struct bch_cache_set *set = container_of(work, struct bch_cache_set,
						 reclaim_work);
	bool gc, tried = false, persist = false;
	struct bch_member *m;

	bch_for_each_live_member(m, set)
		tried |= bch_reclaim_member(set, m) != -ENODATA;

	spin_lock(&set->alloc_lock);
	/*
	 * Each pass is a checkpoint: not more than a few a second, when the
	 * cache is held up by dirty data a pass cannot free.
	 */
	gc = tried && set->need_gc && time_after_eq(jiffies, set->gc_allowed);
	if (gc)
		set->gc_allowed = jiffies + HZ / 4;
	bch_for_each_live_member(m, set)
		persist |= m->nr_free_inc > 0;
	spin_unlock(&set->alloc_lock);

	if (gc)
		queue_work(set->wq, &set->gc_work);
	if (persist) {
		mutex_lock(&set->lock);
		if (bch_prios_write(set)) {
			DMERR_LIMIT("%s: cannot write the bucket array", set->name);
			bch_cache_io_error(set, true);
		}
		mutex_unlock(&set->lock);
	}
}

int bch_alloc_init(struct bch_cache_set *set)
{
	struct bch_member *m;

	spin_lock_init(&set->alloc_lock);
	INIT_WORK(&set->reclaim_work, bch_reclaim_work);
	INIT_WORK(&set->rescale_work, bch_rescale_work);
	BUILD_BUG_ON(BCH_MAX_BUCKETS - 1 > U32_MAX);
	bch_for_each_live_member(m, set) {
		m->free_fifo = vmalloc(array_size(m->nbuckets, sizeof(u32)));
		if (!m->free_fifo)
			return -ENOMEM;
	}
	set->prio.initial = 8192;
	set->prio.hit = 32;
	set->prio.seek = 512;
	set->prio.rescale = max_t(u64, 1 << 20, bch_set_sectors(set) / 4);
	return 0;
}

/* Sectors of the set's buckets past the metadata, the journal included. */
u64 bch_set_sectors(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 n = 0;

	bch_for_each_live_member(m, set)
		n += (m->nbuckets - m->first_bucket) * set->bucket_size;
	return n;
}

/* Data buckets of the set: every member's, but metadata and journal. */
u64 bch_set_buckets(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 n = 0;

	bch_for_each_live_member(m, set)
		n += m->nbuckets - m->first_bucket - m->journal_buckets;
	return n;
}

/* Whether fewer than 1/16 of the set's buckets are free (no lock). */
bool bch_set_free_low(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 free = 0;

	bch_for_each_live_member(m, set)
		free += READ_ONCE(m->nr_free);
	return free < div_u64(bch_set_sectors(set), set->bucket_size) / 16;
}

/* Buckets holding data or nodes, for the status line (no lock). */
u64 bch_set_used(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 n = 0;

	bch_for_each_live_member(m, set)
		n += READ_ONCE(m->nr_data) + READ_ONCE(m->nr_btree);
	return n;
}

/*
 * A GC pass starts counting, before it enters the index (btree lock held
 * for read, let go between chunks): an insert meanwhile is ahead of the
 * pass and counts nothing for it. Every key in the index that the pass
 * keeps has at least the gen its bucket had when the walk came by.
 */
void bch_alloc_gc_start(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 i;

	spin_lock(&set->alloc_lock);
	set->gc_running = true;
	set->gc_failed = 0;
	set->gc_failed_seen = 0;
	bch_for_each_member(m, set)
		if (bch_member_failed(m) && !m->removed)
			__set_bit(m->idx, &set->gc_failed);
	bch_for_each_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			bch_alloc_relax_index(set, i);
			b->gc_sectors = 0;
			b->gc_dirty = 0;
			b->gc_start_gen = b->gen;
			WRITE_ONCE(b->gc_seen, false);
		}
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		set->slots[i].gc_dirty = 0;
	spin_unlock(&set->alloc_lock);
}

/* The pass's counts become the running ones; lock held. */
static void bch_alloc_gc_counts(struct bch_cache_set *set, struct bch_bucket *b)
{
	b->sectors = b->gc_sectors;
	b->dirty = b->gc_dirty;
}

/*
 * The pass has been through the whole index (btree lock held for write).
 * It goes on counting what is inserted until its checkpoint is durable.
 */
void bch_alloc_gc_passed(struct bch_cache_set *set)
{
	spin_lock(&set->alloc_lock);
	set->gc_passed = true;
	spin_unlock(&set->alloc_lock);
}

/*
 * The checkpoint the pass is part of is durable (@done; btree lock held
 * for read, let go between chunks), or failed. Only now may the pass's
 * counts replace the running ones: an overwrite it saw may not be in the
 * journal yet, and until the superblock names the new checkpoint, a crash
 * would bring the overwritten key back, in a bucket the pass found empty.
 * Then empty data buckets are freed, and so are node buckets the index
 * does not name (made for a checkpoint a crash cut short, as an open from
 * the bucket states finds them). No key on disk is older than the gens
 * the pass started with. A failed checkpoint drops the pass: the next one
 * runs another.
 */
void bch_alloc_gc_apply(struct bch_cache_set *set, bool done)
{
	unsigned long removed;
	u64 i, orphans = 0;
	struct bch_member *m;

	/* A failed pass drops it with the lock held for write. */
	lockdep_assert_held(&set->btree_lock);
	spin_lock(&set->alloc_lock);
	if (!set->gc_running || !set->gc_passed || !done) {
		set->gc_running = false;
		set->gc_passed = false;
		spin_unlock(&set->alloc_lock);
		return;
	}
	/* The pass answers what was asked before; not what is asked meanwhile. */
	set->need_gc = set->gc_again;
	set->gc_again = false;
	bch_for_each_live_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			bch_alloc_relax_index(set, i);
			b->last_gc = b->gc_start_gen;
			bch_alloc_gc_counts(set, b);
			if (b->state == BCH_B_DATA && !b->sectors &&
			    !atomic_read(&b->pending))
				bch_bucket_invalidate(set, m, i);
			if (b->state == BCH_B_BTREE && !b->gc_seen) {
				b->state = BCH_B_FREEING;
				orphans++;
			}
		}
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		atomic64_set(&set->slots[i].dirty, set->slots[i].gc_dirty);
	set->need_gc |= set->gc_again;
	set->gc_again = false;
	set->gc_running = false;
	set->gc_passed = false;
	removed = set->gc_failed & ~set->gc_failed_seen;
	spin_unlock(&set->alloc_lock);
	if (orphans)
		DMINFO("%s: gc: %llu node buckets the index does not name are freed",
		       set->name, orphans);
	bch_members_removed(set, removed);
}

/* At open, the initial pass's counts, before the allocator starts. */
void bch_alloc_gc_take(struct bch_cache_set *set)
{
	struct bch_member *m;
	u64 i;

	spin_lock(&set->alloc_lock);
	bch_for_each_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			bch_alloc_relax(set, i);
			bch_alloc_gc_counts(set, &m->buckets[i]);
		}
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		atomic64_set(&set->slots[i].dirty, set->slots[i].gc_dirty);
	spin_unlock(&set->alloc_lock);
}

/* A checkpoint starts writing the index: see bch_free_btree(). */
void bch_alloc_checkpoint_start(struct bch_cache_set *set)
{
	spin_lock(&set->alloc_lock);
	set->cp_window = true;
	spin_unlock(&set->alloc_lock);
}

/*
 * The checkpoint is durable (@done) or abandoned. If durable, what it no
 * longer names can go; either way what was freed while it ran waits for
 * the next one. The window closes only after the walk, which lets go of
 * the lock: a bucket freed meanwhile is held for one more checkpoint.
 */
void bch_alloc_checkpoint_end(struct bch_cache_set *set, bool done)
{
	struct bch_member *m;
	u64 i;

	spin_lock(&set->alloc_lock);
	bch_for_each_live_member(m, set) {
		for (i = m->first_bucket; i < m->nbuckets; i++) {
			struct bch_bucket *b = &m->buckets[i];

			bch_alloc_relax(set, i);
			if (b->state == BCH_B_FREEING && done)
				bch_bucket_invalidate(set, m, i);
			else if (b->state == BCH_B_FREEING_NEXT)
				b->state = BCH_B_FREEING;
		}
	}
	set->cp_window = false;
	spin_unlock(&set->alloc_lock);
}

/*
 * At open, after the initial GC counted the loaded index (node buckets
 * marked BTREE): everything else with live data is DATA, the rest FREE.
 */
static void bch_alloc_load_member(struct bch_cache_set *set,
				  struct bch_member *m)
{
	u64 i;

	m->nr_free = 0;
	m->free_head = 0;
	m->nr_data = 0;
	m->nr_btree = 0;
	m->nr_free_inc = 0;
	for (i = 0; i < m->nbuckets; i++) {
		struct bch_bucket *b = &m->buckets[i];

		bch_alloc_relax(set, i);
		if (b->flags & BCH_BUCKET_META) {
			b->state = BCH_B_META;
		} else if (b->flags & BCH_BUCKET_JOURNAL) {
			b->state = BCH_B_JOURNAL;
		} else if (b->state == BCH_B_BTREE) {
			m->nr_btree++;
		} else if (b->sectors) {
			b->state = BCH_B_DATA;
			m->nr_data++;
		} else {
			b->state = BCH_B_FREE;
			bch_fifo_push(m, i);
		}
	}
}

void bch_alloc_load(struct bch_cache_set *set)
{
	struct bch_member *m;

	spin_lock(&set->alloc_lock);
	bch_for_each_live_member(m, set)
		bch_alloc_load_member(set, m);
	set->gc_running = false;
	spin_unlock(&set->alloc_lock);
}
