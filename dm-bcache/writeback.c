// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: writing dirty data back to the origin.
 *
 * In writeback mode a write goes to the cache only, under a dirty key.
 * A worker per target walks the index in origin order from a cursor,
 * takes a batch of dirty extents, copies them from the cache to the
 * origin, flushes the origin and only then marks the keys clean, and
 * only those still the same: a newer write may have replaced one
 * meanwhile. Reclaim never invalidates a bucket holding dirty data.
 *
 * A batch must never land on the origin after a newer write to the same
 * range. So it takes no extent where a write bound for the origin is in
 * flight (track.c, BCH_TRACK_ORIGIN), and while it runs, such a write
 * (bypass, unaligned, a cache full of dirty data) that overlaps it waits
 * for it (bch_writeback_park). Both checks are made under the writeback
 * lock, after the write was counted in, so one of the two always sees
 * the other.
 *
 * A write bound for the origin never drops dirty data from the index: it
 * is held (bch_writeback_hold) until a batch, which takes the held writes'
 * ranges first, has written its range back (request.c, bch_punch).
 *
 * Rate: above writeback_percent of the cache dirty, or when someone waits
 * for a flush, batches follow each other; below, one batch a second, so
 * dirty data drains when the origin is idle.
 */
#include <linux/blkdev.h>
#include <linux/vmalloc.h>

#include "dm-bcache.h"

#define BCH_WB_DELAY		HZ
#define BCH_WB_ERROR_DELAY	(5 * HZ)
#define BCH_WB_RETRY_DELAY	(HZ / 10)
#define BCH_WB_PERCENT_DEFAULT	10

struct bch_wb_extent {
	u64	start;		/* origin */
	u32	size;
	u64	ptr[2];		/* its copies' locations (bch_ptr_loc()) */
	u8	gen[2];
	u8	nptrs;
	u8	use;		/* the copy read: the one the clean key keeps */
	u32	csum;		/* of the key's range, if csum_sectors */
	u16	csum_front;
	u16	csum_sectors;
};

/* Which copies of its key extent @e reads from (a lookup's slice of it). */
static void bch_wb_copies(struct bch_wb_extent *e, const struct bch_bkey *k)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		e->ptr[i] = i < k->nptrs ? bch_ptr_loc(k->ptr[i]) : 0;
		e->gen[i] = i < k->nptrs ? bch_ptr_gen(k->ptr[i]) : 0;
	}
	e->nptrs = k->nptrs;
	e->use = 0;
}

/* Whether @k, looked up again, still has the copies @e was read from. */
static bool bch_wb_same_copies(const struct bch_wb_extent *e,
			       const struct bch_bkey *k)
{
	unsigned int i;

	if (k->nptrs != e->nptrs)
		return false;
	for (i = 0; i < k->nptrs; i++)
		if (bch_ptr_loc(k->ptr[i]) != e->ptr[i] ||
		    bch_ptr_gen(k->ptr[i]) != e->gen[i])
			return false;
	return true;
}

u64 bch_slot_dirty(struct bch_target *bt)
{
	s64 n = atomic64_read(&bt->set->slots[bt->slot].dirty);

	return n > 0 ? n : 0;
}

/* Dirty data on a set of several takes two copies' room: the target too. */
u64 bch_wb_target_of(struct bch_target *bt)
{
	struct bch_cache_set *set = bt->set;

	/* Degraded: dirty data with a copy on the lost member has one left. */
	if (bch_set_degraded(set))
		return 0;
	return div_u64(bch_set_sectors(set) * READ_ONCE(bt->wb.percent),
		       bch_copies_mirrored(set) ? 200 : 100);
}

/*
 * Queue the worker (@now: move it forward) unless the table is suspended:
 * only the live table writes back (bch_writeback_stop()).
 */
static void bch_wb_queue(struct bch_target *bt, unsigned long delay, bool now)
{
	struct bch_writeback *wb = &bt->wb;

	spin_lock(&wb->lock);
	if (!wb->stopped) {
		if (now)
			mod_delayed_work(bt->set->wq, &wb->work, delay);
		else
			queue_delayed_work(bt->set->wq, &wb->work, delay);
	}
	spin_unlock(&wb->lock);
}

void bch_writeback_kick(struct bch_target *bt)
{
	bch_wb_queue(bt, 0, true);
}

/* There is dirty data: make sure a batch comes, at the slow pace. */
void bch_writeback_soon(struct bch_target *bt)
{
	bch_wb_queue(bt, BCH_WB_DELAY, false);
}

/*
 * The table is suspended or going away: no batch may start from here on,
 * whoever kicks the worker. No IO of the table is in flight, so no write
 * waits for a batch.
 */
void bch_writeback_stop(struct bch_target *bt)
{
	spin_lock(&bt->wb.lock);
	bt->wb.stopped = true;
	spin_unlock(&bt->wb.lock);
	cancel_delayed_work_sync(&bt->wb.work);
}

void bch_writeback_start(struct bch_target *bt)
{
	spin_lock(&bt->wb.lock);
	bt->wb.stopped = false;
	spin_unlock(&bt->wb.lock);
}

/*
 * @bio, bound for the origin, found dirty data in its range: it waits
 * until a batch has written that back, then tries again. @later: it
 * could not be indexed (no memory, no bucket), or found dirty data again
 * after a batch: it tries again after the next batch, which need not
 * come at once.
 */
void bch_writeback_hold(struct bch_target *bt, struct bio *bio, bool later)
{
	struct bch_writeback *wb = &bt->wb;

	spin_lock(&wb->lock);
	bio_list_add(&wb->held, bio);
	/* Not stopped: the table is live while one of its writes is held. */
	if (later)
		queue_delayed_work(bt->set->wq, &wb->work, BCH_WB_RETRY_DELAY);
	else
		mod_delayed_work(bt->set->wq, &wb->work, 0);
	spin_unlock(&wb->lock);
}

/*
 * Park @bio, bound for the origin, if it overlaps the batch in flight.
 * Always under the lock: a batch being collected is published only at
 * its end, and a write that counted itself in after the batch checked its
 * range must see that range.
 */
bool bch_writeback_park(struct bch_target *bt, struct bio *bio, u64 start,
			u64 end)
{
	struct bch_writeback *wb = &bt->wb;
	bool parked = false;
	unsigned int i;

	spin_lock(&wb->lock);
	for (i = 0; i < wb->nr_ranges; i++) {
		if (start < wb->ranges[i].end && wb->ranges[i].start < end) {
			bio_list_add(&wb->waiters, bio);
			parked = true;
			break;
		}
	}
	spin_unlock(&wb->lock);
	return parked;
}

static void bch_wb_resubmit_work(struct work_struct *work)
{
	struct bch_writeback *wb = container_of(work, struct bch_writeback,
						resubmit_work);
	struct bio_list list;
	struct bio *bio;

	spin_lock(&wb->lock);
	list = wb->waiters;
	bio_list_init(&wb->waiters);
	bio_list_merge(&list, &wb->held);
	bio_list_init(&wb->held);
	spin_unlock(&wb->lock);
	while ((bio = bio_list_pop(&list)))
		bch_write_resume(bio);
}

/* Keys looked at per batch: the walk holds the btree read lock. */
#define BCH_WB_WALK_MAX		4096

/* A batch being collected. */
struct bch_wb_batch {
	struct bch_wb_extent	ext[BCH_WB_EXTENTS];
	struct bch_wb_range	held[BCH_WB_EXTENTS];	/* writes' ranges */
	unsigned int		nr;
	u64			sectors;
	unsigned int		walked;	/* keys looked at */
	bool			found;	/* dirty data seen, taken or not */
	bool			load;	/* the walk stopped at a missing leaf */
	int			load_error; /* reading the missed leaves failed */
};

static bool bch_wb_full(struct bch_wb_batch *b)
{
	return b->nr == BCH_WB_EXTENTS || b->sectors >= BCH_WB_BATCH_SECTORS ||
	       b->walked >= BCH_WB_WALK_MAX || b->load;
}

/* The leaves of [start, end) this walk missed: the next reads them first. */
static void bch_wb_missed(struct bch_writeback *wb, u64 start, u64 end)
{
	if (wb->nr_loads < BCH_WB_LOADS) {
		wb->loads[wb->nr_loads].start = start;
		wb->loads[wb->nr_loads].end = end;
		wb->nr_loads++;
	}
}

/*
 * Add the dirty extents of [start, end) to @b until it is full; returns
 * where it stopped (@whole: a held range, which starts again from @start
 * each batch). An extent that a write bound for the origin is in
 * flight over is left for a later batch: it goes first. Writes to the
 * cache need no such care: a dirty write that replaces an extent being
 * copied only keeps it from being marked clean.
 *
 * The check and the publication of each range are one section under the
 * writeback lock: a write counts itself in before it looks for ranges
 * under that lock (bch_writeback_park()), so one of the two sees the
 * other.
 */
static u64 bch_wb_collect_range(struct bch_target *bt, u32 inode,
				struct bch_wb_batch *b, u64 start, u64 end,
				bool whole)
{
	struct bch_cache_set *set = bt->set;
	u64 pos = start;
	struct bch_writeback *wb = &bt->wb;
	struct bch_track *t = bch_origin_track_of(bt);
	struct bch_wb_extent *e;
	struct bch_bkey k;
	u64 snap;

	while (pos < end && !bch_wb_full(b)) {
		int r = bch_btree_lookup(&set->btree, inode, pos, end, &k);

		b->walked++;
		if (r < 0) {
			/*
			 * Nothing is live before the leaf it missed: resume
			 * there. Else, with a small node budget, a hole across
			 * a leaf boundary needs both leaves in memory at once,
			 * and each walk would read one while the trim before
			 * it evicts the other. A held range starts again from
			 * its start: all its leaves are read.
			 */
			bch_wb_missed(wb, whole ? start : k.end, k.end + 1);
			pos = k.end;
			b->load = true;
			break;
		}
		/* Lost with its members (member.c): nothing to write back. */
		if (r && (k.flags & BCH_KEY_DIRTY) && !bch_key_lost(set, &k)) {
			b->found = true;
			k.size = min_t(u64, k.size,
				       BCH_WB_BATCH_SECTORS - b->sectors);
			spin_lock(&wb->lock);
			if (bch_track_read(t, pos, k.size, &snap)) {
				e = &b->ext[b->nr];
				e->start = pos;
				e->size = k.size;
				bch_wb_copies(e, &k);
				e->csum = k.csum;
				e->csum_front = k.csum_front;
				e->csum_sectors = k.flags & BCH_KEY_CSUM ?
						  k.csum_sectors : 0;
				wb->ranges[b->nr].start = pos;
				wb->ranges[b->nr].end = pos + k.size;
				b->nr++;
				WRITE_ONCE(wb->nr_ranges, b->nr);
				b->sectors += k.size;
			}
			spin_unlock(&wb->lock);
		}
		if (WARN_ON_ONCE(!k.size))
			break;
		pos += k.size;
	}
	return pos;
}

/*
 * Did the walks of this batch and of those before it in a row go round
 * the whole origin finding nothing dirty, with no dirty key indexed
 * meanwhile? The count may be more than what is dirty (a dirty write
 * over dirty data counts twice, an open from the bucket states counts
 * the journal's keys again), and an index too large for one batch's
 * walk would never be found clean otherwise. Under the btree read lock.
 */
static bool bch_wb_clean_run(struct bch_target *bt, struct bch_wb_batch *b,
			     u64 from, u64 pos, u64 end)
{
	struct bch_writeback *wb = &bt->wb;
	u64 inserts = atomic64_read(&bt->set->slots[bt->slot].dirty_inserts);

	if (b->found || (wb->clean_run && inserts != wb->clean_inserts)) {
		wb->clean_run = false;
		return false;
	}
	if (!wb->clean_run) {
		wb->clean_run = true;
		wb->clean_from = from;
		wb->clean_sectors = 0;
		wb->clean_inserts = inserts;
	}
	wb->clean_sectors += pos >= from ? pos - from : end - from + pos;
	if (wb->clean_sectors < end && bch_wb_full(b))
		return false;
	wb->clean_run = false;
	return true;
}

/*
 * Take the next batch of dirty extents: first those that writes bound for
 * the origin wait for, then, unless @held_only, from the cursor on,
 * wrapping once. Under the btree read lock with the insert gate, so no
 * hole can remove a key between the lookup and the registration of its
 * range, and no dirty key can be indexed or counted meanwhile: a whole
 * walk that found nothing dirty zeroes the count, exactly. True if it did.
 */
static bool bch_wb_collect(struct bch_target *bt, struct bch_wb_batch *b,
			   bool held_only)
{
	struct bch_cache_set *set = bt->set;
	struct bch_writeback *wb = &bt->wb;
	u32 inode = bch_slot_inode(set, bt->slot);
	/* The whole origin: keys past a shorter table are its data too. */
	u64 from = wb->cursor, end = bdev_nr_sectors(bt->origin_dev->bdev);
	unsigned int nr_held = 0, i;
	bool clean = false;
	struct bio *bio;
	u64 pos;

	if (inode == BCH_INODE_NONE)
		return false;
	spin_lock(&wb->lock);
	bio_list_for_each(bio, &wb->held) {
		if (nr_held == BCH_WB_EXTENTS)
			break;
		bch_write_range(bio, &b->held[nr_held].start,
				&b->held[nr_held].end);
		nr_held++;
	}
	spin_unlock(&wb->lock);

	/*
	 * The leaves the last walk missed are read first, with the lock let
	 * go and then under it, and stay for this walk: nothing is evicted
	 * while the read lock is held.
	 */
	if (wb->nr_loads) {
		for (i = 0; i < wb->nr_loads; i++)
			bch_index_read_ahead(set, inode, wb->loads[i].start,
					     wb->loads[i].end, !i);
		down_write(&set->btree_lock);
		for (i = 0; i < wb->nr_loads && !b->load_error; i++)
			b->load_error = bch_btree_load_range(&set->btree, inode,
							     wb->loads[i].start,
							     wb->loads[i].end);
		wb->nr_loads = 0;
		bch_index_downgrade(set);
		if (b->load_error) {
			bch_index_unlock_gated(set);
			DMERR_LIMIT("%s: writeback cannot read the index: %d",
				    set->name, b->load_error);
			return false;
		}
	} else {
		bch_index_read_gated(set);
	}
	/* A held range whose leaf is missing waits; the others go on. */
	for (i = 0; i < nr_held; i++) {
		bch_wb_collect_range(bt, inode, b, b->held[i].start,
				     b->held[i].end, true);
		if (b->load && b->nr < BCH_WB_EXTENTS &&
		    b->sectors < BCH_WB_BATCH_SECTORS) {
			b->load = false;
			b->found = true;	/* not a whole clean walk */
		}
	}
	if (!held_only) {
		if (from >= end)
			from = 0;
		pos = bch_wb_collect_range(bt, inode, b, from, end, false);
		if (pos >= end && from)
			pos = bch_wb_collect_range(bt, inode, b, 0, from, false);
		wb->cursor = pos < end ? pos : 0;
		if (bch_wb_clean_run(bt, b, from, pos, end)) {
			atomic64_set(&set->slots[bt->slot].dirty, 0);
			clean = true;
		}
	}
	bch_index_unlock_gated(set);
	return clean;
}

/* Mark the extents clean where the index still has them dirty. */
static void bch_wb_mark_clean(struct bch_target *bt, struct bch_wb_extent *ext,
			      unsigned int nr)
{
	struct bch_cache_set *set = bt->set;
	u32 inode = bch_slot_inode(set, bt->slot);
	struct bch_bkey k, dirty;
	unsigned int i;

	bch_index_lock(set);
	for (i = 0; i < nr; i++) {
		struct bch_wb_extent *e = &ext[i];

		if (!e->size)
			continue;	/* not written back */
		if (bch_index_lookup(set, inode, e->start, e->start + e->size,
				     &k) != 1 ||
		    k.size != e->size || !bch_wb_same_copies(e, &k) ||
		    !(k.flags & BCH_KEY_DIRTY))
			continue;
		dirty = k;
		k.flags &= ~BCH_KEY_DIRTY;
		/* Clean data keeps one copy: the one written back. */
		if (k.nptrs > 1)
			bch_key_drop_copy(&k, !e->use);
		if (bch_index_insert(set, &k))
			continue;	/* still dirty: the next walk retries */
		bch_alloc_cleaned(set, &dirty);
		bch_journal_add(set, &k, NULL);
		atomic64_sub(k.size, &set->slots[bt->slot].dirty);
		atomic64_add(k.size, &bt->wb.written);
	}
	up_write(&set->btree_lock);
}

/*
 * Read extent @e's copy @c into @buf (@len bytes), verified against its
 * key's checksum: directly if the extent is the whole checksummed range,
 * else that range through the bounce buffer. -EBADMSG if the data is bad;
 * the caller checks first that the bucket was not reused under the read.
 */
static int bch_wb_read_copy(struct bch_target *bt, struct bch_wb_extent *e,
			    unsigned int c, u8 *buf, size_t len, bool *stale)
{
	struct bch_cache_set *set = bt->set;
	size_t range = (size_t)e->csum_sectors << SECTOR_SHIFT;
	bool whole = !e->csum_front && e->csum_sectors == e->size;
	u8 *data = whole ? buf : bt->wb.bounce;
	u64 ptr = e->ptr[c];
	int r;

	if (!e->csum_sectors || !bch_verify(bt)) {
		r = bch_loc_io(set, REQ_OP_READ, ptr, buf, len);
		*stale = !r && bch_ptr_reused(set, ptr, e->gen[c]);
		return r;
	}
	r = bch_loc_io(set, REQ_OP_READ, ptr - e->csum_front, data, range);
	*stale = !r && bch_ptr_reused(set, ptr, e->gen[c]);
	if (r || *stale)
		return r;
	if (bch_crc32c(data, range) != e->csum) {
		bch_csum_error(bt, e->start - e->csum_front, e->csum_sectors,
			       ptr - e->csum_front);
		return -EBADMSG;
	}
	if (!whole)
		memcpy(buf, data + ((size_t)e->csum_front << SECTOR_SHIFT), len);
	return 0;
}

/*
 * Read extent @e into @buf: from its first copy, or, if that cannot be
 * read, is bad or its bucket was reused (a crash brought back a dirty key
 * whose dropped copy's bucket had been reused), from its second (e->use
 * says which served). *@stale if the one read last was reused.
 */
static int bch_wb_read(struct bch_target *bt, struct bch_wb_extent *e,
		       u8 *buf, size_t len, bool *stale)
{
	struct bch_cache_set *set = bt->set;
	int r;

	r = bch_wb_read_copy(bt, e, 0, buf, len, stale);
	if ((!r && !*stale) || e->nptrs < 2)
		return r;
	if (r && r != -EBADMSG)
		bch_member_io_error(set, e->ptr[0], false);
	if (r && !bch_loc_failed(set, e->ptr[0]))
		DMWARN_LIMIT("%s: a copy of dirty data failed (%d): slot %u sectors %llu+%u member %u; written back from the other",
			     set->name, r, bt->slot, e->start, e->size,
			     bch_ptr_dev(e->ptr[0]));
	e->use = 1;
	return bch_wb_read_copy(bt, e, 1, buf, len, stale);
}

/*
 * Copy a batch to the origin. An extent that cannot be read or written
 * gets size 0, and the others go on: one bad range must not hold back the
 * rest. Returns 0, or the first error.
 */
static int bch_wb_copy(struct bch_target *bt, struct bch_wb_extent *ext,
		       unsigned int nr)
{
	struct bch_cache_set *set = bt->set;
	struct block_device *origin = bt->origin_dev->bdev;
	u8 *buf = bt->wb.buf;
	bool fp = false;
	unsigned int i;
	u64 off = 0;
	int r, err = 0;

	for (i = 0; i < nr; i++) {
		size_t len = (size_t)ext[i].size << SECTOR_SHIFT;
		bool stale;

		r = bch_wb_read(bt, &ext[i], buf + off, len, &stale);
		/* Bad data is not the device failing: it is not counted. */
		if (r && r != -EBADMSG)
			bch_member_io_error(set, ext[i].ptr[ext[i].use], false);
		/* A read that raced with the bucket's reuse: not ours. */
		else if (stale)
			goto skip;
		if (!r && ext[i].start < BCH_FINGERPRINT_SECTORS && !fp) {
			r = bch_slot_fp_begin_sync(set, bt->slot);
			fp = !r;
		}
		if (!r)
			r = bch_dev_io(set, origin, REQ_OP_WRITE, ext[i].start,
				       buf + off, len);
		if (r) {
			err = err ?: r;
			goto skip;
		}
		off += len;
		continue;
skip:
		ext[i].size = 0;
	}
	/* Clean keys may be durable only once the origin's data is. */
	r = blkdev_issue_flush(origin);
	if (r) {
		err = err ?: r;
		for (i = 0; i < nr; i++)
			ext[i].size = 0;
	}
	if (fp)
		bch_slot_fp_end(set, bt->slot);
	return err;
}

static bool bch_wb_waiting(struct bch_writeback *wb)
{
	bool waiting;

	spin_lock(&wb->lock);
	waiting = !bio_list_empty(&wb->held);
	spin_unlock(&wb->lock);
	return waiting;
}

static void bch_wb_work(struct work_struct *work)
{
	struct bch_writeback *wb = container_of(to_delayed_work(work),
						struct bch_writeback, work);
	struct bch_target *bt = container_of(wb, struct bch_target, wb);
	struct bch_cache_set *set = bt->set;
	bool waiting = bch_wb_waiting(wb), failed = bch_cache_failed(set);
	bool all = READ_ONCE(wb->running) || atomic_read(&wb->flushing) ||
		   failed;
	unsigned long delay = BCH_WB_DELAY;
	struct bch_wb_batch *b;
	int r = 0;

	/*
	 * A failed cache device goes on being read while its dirty data is
	 * written back; then its slot can be dropped (uuids.c). Paused, the
	 * worker still writes back what writes wait for.
	 */
	if (!bch_slot_dirty(bt) || (!all && !waiting)) {
		/* Writes waiting for a batch try again: they go now. */
		if (waiting)
			queue_work(set->wq, &wb->resubmit_work);
		if (failed && !bch_slot_dirty(bt))
			queue_work(set->wq, &set->uuid_work);
		goto out;
	}
	b = kzalloc(sizeof(*b), GFP_NOIO);
	if (!wb->buf)
		wb->buf = __vmalloc(BCH_WB_BATCH_SECTORS << SECTOR_SHIFT,
				    GFP_NOIO);
	if (!wb->bounce && bch_csums(set))
		wb->bounce = __vmalloc(BCH_CSUM_MAX_SECTORS << SECTOR_SHIFT,
				       GFP_NOIO);
	if (!b || !wb->buf || (!wb->bounce && bch_csums(set))) {
		kfree(b);
		delay = HZ / 10;
		goto again;
	}

	if (bch_wb_collect(bt, b, !all)) {
		/* Nothing dirty is left: the count is exact now. */
		kfree(b);
		if (waiting)
			queue_work(set->wq, &wb->resubmit_work);
		goto out;
	}
	if (b->nr) {
		r = bch_wb_copy(bt, b->ext, b->nr);
		bch_wb_mark_clean(bt, b->ext, b->nr);
	}
	/* A leaf that cannot be read fails the batch, as a bad copy would. */
	if (!r)
		r = b->load_error;
	/* Before the writes that waited look at it (bch_write_origin()). */
	WRITE_ONCE(wb->error, r);
	spin_lock(&wb->lock);
	WRITE_ONCE(wb->nr_ranges, 0);
	spin_unlock(&wb->lock);
	queue_work(set->wq, &wb->resubmit_work);
	if (r) {
		DMERR_LIMIT("%s: writeback of slot %u failed: %d",
			    set->name, bt->slot, r);
		delay = BCH_WB_ERROR_DELAY;
	} else if (waiting || atomic_read(&wb->flushing) ||
		   bch_slot_dirty(bt) > bch_wb_target_of(bt) ||
		   bch_set_free_low(set)) {
		delay = b->nr || b->walked >= BCH_WB_WALK_MAX ||
			wb->nr_loads ? 0 : HZ / 100;
	}
	kfree(b);
again:
	bch_wb_queue(bt, delay, false);
out:
	wake_up_all(&wb->wait);
}

/* Write back everything dirty; -EINTR, or the error that stopped it. */
int bch_writeback_flush(struct bch_target *bt)
{
	struct bch_writeback *wb = &bt->wb;
	int r;

	if (!bch_slot_dirty(bt))
		return 0;
	if (READ_ONCE(wb->stopped))
		return -EBUSY;	/* suspended: nothing would write back */
	/* An error of an earlier batch is not this flush's. */
	WRITE_ONCE(wb->error, 0);
	atomic_inc(&wb->flushing);
	bch_writeback_kick(bt);
	r = wait_event_interruptible(wb->wait, !bch_slot_dirty(bt) ||
				     READ_ONCE(wb->error));
	atomic_dec(&wb->flushing);
	if (r)
		return -EINTR;
	return bch_slot_dirty(bt) ? READ_ONCE(wb->error) : 0;
}

int bch_writeback_init(struct bch_target *bt)
{
	struct bch_writeback *wb = &bt->wb;

	INIT_DELAYED_WORK(&wb->work, bch_wb_work);
	INIT_WORK(&wb->resubmit_work, bch_wb_resubmit_work);
	spin_lock_init(&wb->lock);
	bio_list_init(&wb->waiters);
	bio_list_init(&wb->held);
	init_waitqueue_head(&wb->wait);
	wb->stopped = true;	/* until the table is resumed */
	wb->percent = BCH_WB_PERCENT_DEFAULT;
	wb->running = true;
	return 0;
}

/* No IO is left: the worker and the parked writes are done. */
void bch_writeback_exit(struct bch_target *bt)
{
	cancel_delayed_work_sync(&bt->wb.work);
	flush_work(&bt->wb.resubmit_work);
	vfree(bt->wb.buf);
	bt->wb.buf = NULL;
	vfree(bt->wb.bounce);
	bt->wb.bounce = NULL;
}
