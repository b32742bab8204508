// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: UUID slots, one per origin a cache set holds.
 *
 * An origin is known by the origin_uuid its table gives, never by its
 * device name or by what it contains: names change with device order and
 * filesystem UUIDs are copied by every dd or snapshot clone. Cached keys
 * carry the slot index and the slot's epoch; bumping the epoch drops all
 * of an origin's cached data at once, as bumping a bucket's gen drops the
 * bucket's. The epoch is never reset, so a reused slot never matches keys
 * of its earlier tenant.
 *
 * Defence in depth against a table that names the wrong device under a
 * right origin_uuid: the slot remembers the origin's size and a checksum
 * of its first 4 KiB; either differing at attach invalidates. The
 * checksum is taken at attach and retaken after every write to those
 * sectors, so it still holds after a crash; a write whose new checksum
 * did not make it to disk only invalidates the slot at the next attach.
 */
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uuid.h>

#include "dm-bcache.h"

static size_t bch_uuid_bytes(struct bch_cache_set *set)
{
	return (size_t)le32_to_cpu(set->sb->uuid_sectors) << SECTOR_SHIFT;
}

int bch_uuids_read(struct bch_cache_set *set, char **error)
{
	struct bch_sb_disk *sb = set->sb;
	unsigned int i;
	int r;

	/* Nothing published yet: the first publish drops nothing. */
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		set->slots[i].inode = BCH_INODE_NONE;
	*error = "cannot allocate the UUID table";
	set->uuids = kvmalloc(bch_uuid_bytes(set), GFP_KERNEL);
	if (!set->uuids)
		return -ENOMEM;
	r = bch_meta_read(set, set->members[0], "UUID table", sb->uuid_offset,
			  &sb->uuid_current, &sb->uuid_csum,
			  &sb->uuid_csum_other, set->uuids, bch_uuid_bytes(set));
	if (r) {
		*error = r == -EIO ? "cannot read the UUID table" :
			"UUID table checksum mismatch";
		return r;
	}
	/*
	 * Nothing writes an epoch past the last one (bch_slot_bump_epoch()):
	 * a larger one would alias a smaller in key inodes, and the bump
	 * would wrap. A table that has one is corrupt, as bcache-check says.
	 */
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		if (le32_to_cpu(set->uuids[i].epoch) >= BCH_INODE_EPOCH_MAX) {
			DMERR("%s: UUID slot %u: epoch %u is out of range",
			      set->name, i, le32_to_cpu(set->uuids[i].epoch));
			*error = "UUID table has an epoch out of range";
			return -EUCLEAN;
		}
	}
	return 0;
}

static bool bch_slot_valid(struct bch_uuid_disk *u)
{
	return le32_to_cpu(u->flags) & BCH_UUID_VALID;
}

/* The inode of the slot's keys now; one no key has for a free slot. */
u32 bch_slot_inode(struct bch_cache_set *set, unsigned int slot)
{
	return READ_ONCE(set->slots[slot].inode);
}

/*
 * Make the table's epochs the ones the index and the IO path go by. Only
 * once they are on disk (or at open, before any IO): a write that found
 * nothing to punch under a new epoch, then a crash before the table was
 * written, would bring the old epoch back with data older than the write.
 */
static void bch_slots_publish(struct bch_cache_set *set)
{
	bool dropped = false;
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];
		u32 inode = BCH_INODE_NONE;

		if (bch_slot_valid(u))
			inode = le32_to_cpu(u->epoch) << BCH_INODE_SLOT_BITS | i;
		if (set->slots[i].inode != BCH_INODE_NONE &&
		    set->slots[i].inode != inode)
			dropped = true;
		WRITE_ONCE(set->slots[i].inode, inode);
	}
	/*
	 * What an old epoch cached is dead: the next checkpoint's GC frees
	 * it. A pass under way may have counted some of it already.
	 */
	if (dropped) {
		spin_lock(&set->alloc_lock);
		set->need_gc = true;
		set->gc_again = set->gc_running;
		spin_unlock(&set->alloc_lock);
	}
}

/*
 * Each slot's dirty count goes with the table (BCH_BUCKET_STATE): it may
 * only count too much, and an epoch bumped since has none.
 */
static void bch_uuids_fill_dirty(struct bch_cache_set *set)
{
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];
		s64 n = atomic64_read(&set->slots[i].dirty);

		if (bch_slot_valid(u) &&
		    bch_slot_inode(set, i) == (le32_to_cpu(u->epoch) << BCH_INODE_SLOT_BITS | i))
			u->dirty = cpu_to_le64(n > 0 ? n : 0);
	}
}

/* At open, from the table: valid only with the bucket states. */
void bch_uuids_load_dirty(struct bch_cache_set *set)
{
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++)
		atomic64_set(&set->slots[i].dirty,
			     bch_slot_valid(&set->uuids[i]) ?
			     le64_to_cpu(set->uuids[i].dirty) : 0);
}

int bch_uuids_write(struct bch_cache_set *set)
{
	struct bch_sb_disk *sb = set->sb;
	unsigned int next = !le32_to_cpu(sb->uuid_current);
	__le32 old_current, old_csum, old_other;
	struct bch_member *m;
	int r;

	lockdep_assert_held(&set->lock);
	bch_uuids_fill_dirty(set);
	/* Every member holds the table, in the copy the set names. */
	bch_for_each_live_member(m, set) {
		r = bch_member_io(set, m, REQ_OP_WRITE,
				  le64_to_cpu(m->sb->uuid_offset[next]),
				  set->uuids, bch_uuid_bytes(set));
		if (r && !m->idx)
			return r;
		if (r)
			bch_member_fail(set, m);
	}
	old_current = sb->uuid_current;
	old_csum = sb->uuid_csum;
	old_other = sb->uuid_csum_other;
	sb->uuid_current = cpu_to_le32(next);
	sb->uuid_csum_other = sb->uuid_csum;
	sb->uuid_csum = cpu_to_le32(bch_crc32c(set->uuids,
					       bch_uuid_bytes(set)));
	r = bch_sb_write(set);
	if (r) {
		/* The superblock on disk still names the other copy. */
		sb->uuid_current = old_current;
		sb->uuid_csum = old_csum;
		sb->uuid_csum_other = old_other;
		return r;
	}
	bch_slots_publish(set);
	return 0;
}

/*
 * Drop all of a slot's cached data. False once the epoch is exhausted:
 * the last epoch is never used, so bch_slot_inode() has a value no key
 * can carry.
 */
static bool bch_slot_bump_epoch(struct bch_uuid_disk *u)
{
	u32 epoch = le32_to_cpu(u->epoch);

	if (epoch + 1 >= BCH_INODE_EPOCH_MAX)
		return false;
	u->epoch = cpu_to_le32(epoch + 1);
	u->flags &= ~cpu_to_le32(BCH_UUID_FINGERPRINT);
	u->dirty = 0;		/* the new epoch has none */
	return true;
}

static void bch_slot_free(struct bch_uuid_disk *u)
{
	u32 epoch = le32_to_cpu(u->epoch);

	memset(u, 0, sizeof(*u));
	u->epoch = cpu_to_le32(epoch);
}

/*
 * Called when a cache set is opened: no table holds any slot yet.
 * Ephemeral slots are freed; if the index is not @trusted, every slot's
 * data is dropped. A slot still marked attached was held at a crash: its
 * data stands, the fingerprint is checked at the next attach.
 */
void bch_uuids_recover(struct bch_cache_set *set, bool trusted)
{
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];
		u32 flags = le32_to_cpu(u->flags);

		if (!(flags & BCH_UUID_VALID))
			continue;
		if (flags & BCH_UUID_EPHEMERAL) {
			bch_slot_free(u);
			continue;
		}
		if (!trusted && !bch_slot_bump_epoch(u))
			bch_slot_free(u);
		u->flags &= ~cpu_to_le32(BCH_UUID_ATTACHED);
	}
	bch_slots_publish(set);
}

static int bch_slot_find(struct bch_cache_set *set, const u8 *uuid)
{
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];

		if (bch_slot_valid(u) &&
		    !(le32_to_cpu(u->flags) & BCH_UUID_EPHEMERAL) &&
		    !memcmp(u->uuid, uuid, 16))
			return i;
	}
	return -ENOENT;
}

/* A free slot whose epoch can still be bumped, claimed for a new origin. */
static int bch_slot_new(struct bch_cache_set *set, const u8 *uuid, u32 flags)
{
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];

		if (bch_slot_valid(u) || !bch_slot_bump_epoch(u))
			continue;
		memcpy(u->uuid, uuid, 16);
		u->flags = cpu_to_le32(BCH_UUID_VALID | flags);
		u->first_attach = cpu_to_le64(ktime_get_real_seconds());
		return i;
	}
	return -ENOSPC;
}

static int bch_origin_fingerprint(struct bch_cache_set *set,
				  struct block_device *origin, u32 *fp)
{
	size_t len = BCH_FINGERPRINT_SECTORS << SECTOR_SHIFT;
	void *buf;
	int r;

	if (bdev_nr_sectors(origin) < BCH_FINGERPRINT_SECTORS)
		return -ENOSPC;
	/* Under set->lock, which the journal may wait for (member.c). */
	buf = kmalloc(len, GFP_NOIO);
	if (!buf)
		return -ENOMEM;
	r = bch_dev_io(set, origin, REQ_OP_READ, 0, buf, len);
	if (!r)
		*fp = bch_crc32c(buf, len);
	kfree(buf);
	return r;
}

/* Record the fingerprint of slot @i's origin as it is now. */
static void bch_slot_fingerprint(struct bch_cache_set *set, unsigned int i)
{
	struct bch_uuid_disk *u = &set->uuids[i];
	u32 fp;

	lockdep_assert_held(&set->lock);
	if (bch_origin_fingerprint(set, set->slots[i].bdev, &fp)) {
		u->flags &= ~cpu_to_le32(BCH_UUID_FINGERPRINT);
		return;
	}
	u->fingerprint = cpu_to_le32(fp);
	u->flags |= cpu_to_le32(BCH_UUID_FINGERPRINT);
}

/*
 * Keep the slot's data only if the origin looks like the one we left.
 * Dirty data is dropped only if it plainly is not: an origin that could
 * not be read, at detach or now, is no proof, and dropping would lose
 * the writes it holds (its count is never too low).
 */
static void bch_slot_check_origin(struct bch_cache_set *set, unsigned int i,
				  struct block_device *origin)
{
	struct bch_uuid_disk *u = &set->uuids[i];
	bool dirty = bch_slot_dirty_left(set, i);
	const char *why = NULL;
	bool unread = false;
	u32 fp;

	if (le64_to_cpu(u->sectors) != bdev_nr_sectors(origin)) {
		why = "origin size changed";
	} else if (le32_to_cpu(u->flags) & BCH_UUID_FP_WRITING) {
		/*
		 * A crash cut our own writes to the first 4 KiB: the old
		 * fingerprint may not match, and dirty data must not go.
		 */
		DMINFO("%s: slot %u: first 4 KiB written at a crash: fingerprint not checked",
		       set->name, i);
		return;
	} else if (!(le32_to_cpu(u->flags) & BCH_UUID_FINGERPRINT)) {
		why = "origin was not detached cleanly";
		unread = true;
	} else if (bch_origin_fingerprint(set, origin, &fp)) {
		why = "origin's first 4 KiB cannot be read";
		unread = true;
	} else if (fp != le32_to_cpu(u->fingerprint)) {
		why = "origin's first 4 KiB changed while detached";
	}
	if (!why)
		return;
	if (unread && dirty) {
		DMWARN("%s: slot %u (%pUb): %s: dirty data kept, the origin not checked",
		       set->name, i, u->uuid, why);
		return;
	}
	DMWARN("%s: slot %u (%pUb): %s: cached data invalidated",
	       set->name, i, u->uuid, why);
	if (!bch_slot_bump_epoch(u))
		bch_slot_free(u);
}

/*
 * Give @bt a slot: the one holding @uuid, or a new one (ephemeral when
 * @uuid is NULL). A table reload of the same device may hold the slot
 * twice for a moment; any other device naming the same uuid is refused.
 */
int bch_slot_attach(struct bch_cache_set *set, struct bch_target *bt,
		    const u8 *uuid, char **error)
{
	struct mapped_device *md = dm_table_get_md(bt->ti->table);
	struct block_device *origin = bt->origin_dev->bdev;
	struct bch_uuid_disk *u;
	struct bch_slot *s;
	u8 random[16];
	int i, r = 0;

	mutex_lock(&set->lock);
	i = uuid ? bch_slot_find(set, uuid) : -ENOENT;
	if (i >= 0) {
		s = &set->slots[i];
		if (s->holders && (s->md != md || s->origin != origin->bd_dev)) {
			*error = "origin_uuid is already in use by another device";
			r = -EBUSY;
			goto out;
		}
		if (!s->holders)
			bch_slot_check_origin(set, i, origin);
		if (!bch_slot_valid(&set->uuids[i]))
			i = -ENOENT;
	}
	if (i < 0) {
		if (!uuid) {
			generate_random_uuid(random);
			uuid = random;
		}
		i = bch_slot_new(set, uuid, bt->persistent ? 0 : BCH_UUID_EPHEMERAL);
		if (i < 0) {
			*error = "all UUID slots of the cache set are in use";
			r = i;
			goto out;
		}
	}

	s = &set->slots[i];
	u = &set->uuids[i];
	bt->slot = i;
	if (s->holders)
		goto held;
	/* Under set->lock, which the journal may wait for (member.c). */
	s->track = kcalloc(BCH_TRACKS, sizeof(*s->track), GFP_NOIO);
	if (!s->track) {
		*error = "cannot allocate the write tracker";
		r = -ENOMEM;
		goto out;
	}
	bch_track_init(&s->track[BCH_TRACK_ALL]);
	bch_track_init(&s->track[BCH_TRACK_ORIGIN]);
	s->md = md;
	s->origin = origin->bd_dev;
	s->bdev = origin;
	spin_lock_irq(&set->uuid_waiters_lock);
	s->fp_stale = false;
	s->fp_flagged = false;
	s->fp_wanted = false;
	s->fp_writes = 0;
	spin_unlock_irq(&set->uuid_waiters_lock);
	u->flags &= ~cpu_to_le32(BCH_UUID_FP_WRITING);
	u->sectors = cpu_to_le64(bdev_nr_sectors(origin));
	u->last_attach = cpu_to_le64(ktime_get_real_seconds());
	u->flags |= cpu_to_le32(BCH_UUID_ATTACHED);
	bch_slot_fingerprint(set, i);
	r = bch_uuids_write(set);
	if (r) {
		*error = "cannot write the UUID table";
		kfree(s->track);
		s->track = NULL;
		goto out;
	}
held:
	s->holders++;
out:
	mutex_unlock(&set->lock);
	return r;
}

/*
 * Release @bt's slot. @live means the table is going away while its device
 * stays in use (a reload to another target): writes will reach the origin
 * behind the cache's back, so the slot's data is dropped.
 */
void bch_slot_detach(struct bch_cache_set *set, struct bch_target *bt,
		     bool live)
{
	struct bch_uuid_disk *u = &set->uuids[bt->slot];
	struct bch_slot *s = &set->slots[bt->slot];

	mutex_lock(&set->lock);
	if (--s->holders)
		goto out;
	s->md = NULL;
	kfree(s->track);
	s->track = NULL;
	if (le32_to_cpu(u->flags) & BCH_UUID_EPHEMERAL) {
		bch_slot_free(u);
	} else if (live) {
		DMINFO("%s: slot %u (%pUb): caching turned off while live: data invalidated",
		       set->name, bt->slot, u->uuid);
		if (!bch_slot_bump_epoch(u))
			bch_slot_free(u);
	} else {
		bch_slot_fingerprint(set, bt->slot);
	}
	/* No IO is left: the fingerprint is the origin's. */
	u->flags &= ~cpu_to_le32(BCH_UUID_FP_WRITING);
	s->fp_flagged = false;
	s->bdev = NULL;
	u->flags &= ~cpu_to_le32(BCH_UUID_ATTACHED);
	if (bch_uuids_write(set))
		DMERR("%s: cannot write the UUID table at detach", set->name);
out:
	mutex_unlock(&set->lock);
}

/*
 * Drop a slot's data; the IO path sees the new epoch once it is on disk.
 * The caller holds the btree lock for write, having found no dirty data:
 * none can be indexed under the old epoch until the new one is published.
 */
int bch_slot_invalidate(struct bch_cache_set *set, unsigned int slot)
{
	struct bch_uuid_disk *u = &set->uuids[slot];
	struct bch_uuid_disk old;
	int r = -EOVERFLOW;

	lockdep_assert_held_write(&set->btree_lock);
	mutex_lock(&set->lock);
	old = *u;
	if (bch_slot_bump_epoch(u)) {
		r = bch_uuids_write(set);
		if (r)
			*u = old;	/* what is on disk stays in force */
	}
	mutex_unlock(&set->lock);
	return r;
}

/*
 * The cache device failed: drop every slot's data, on disk as well if
 * the device still takes it, except the dirty data still to be written
 * back (writeback.c goes on while it can): dropped, a read would find
 * the origin's older data. Returns the slots left, or an error.
 */
int bch_slot_invalidate_all(struct bch_cache_set *set)
{
	unsigned int i, left = 0;
	int r;

	/* No dirty key is indexed between the count and the publish. */
	lockdep_assert_held_write(&set->btree_lock);
	mutex_lock(&set->lock);
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_uuid_disk *u = &set->uuids[i];

		if (!bch_slot_valid(u) || bch_slot_dirty_left(set, i))
			continue;
		if (!bch_slot_bump_epoch(u))
			u->flags &= ~cpu_to_le32(BCH_UUID_VALID);
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		left += bch_slot_valid(&set->uuids[i]) &&
			bch_slot_dirty_left(set, i);
	r = bch_uuids_write(set);
	if (r)
		DMERR_LIMIT("%s: cannot write the UUID table: cached data may be stale on disk",
			    set->name);
	/* Written or not: the failed device serves nothing clean. */
	bch_slots_publish(set);
	mutex_unlock(&set->lock);
	return r ?: left;
}

/*
 * Writes to the first sectors of an origin. The slot's fingerprint of them
 * tells at attach whether the origin changed while it was detached; after
 * a crash amid our own writes there it would not match, and the slot's
 * data, dirty data too, would be dropped. So such a write goes only once
 * BCH_UUID_FP_WRITING is on disk, and the flag is cleared (with a fresh
 * fingerprint) only when none is in flight.
 *
 * For the IO path: true if @bio may go now (bch_slot_fp_end() follows its
 * completion); else it is parked, and bch_write_resume()d once the flag
 * is on disk.
 */
bool bch_slot_fp_begin(struct bch_cache_set *set, unsigned int slot,
		       struct bio *bio)
{
	struct bch_slot *s = &set->slots[slot];
	unsigned long flags;
	bool go;

	spin_lock_irqsave(&set->uuid_waiters_lock, flags);
	go = s->fp_flagged;
	if (go) {
		s->fp_writes++;
	} else {
		s->fp_wanted = true;
		bio_list_add(&set->fp_waiters, bio);
	}
	spin_unlock_irqrestore(&set->uuid_waiters_lock, flags);
	if (!go)
		queue_work(set->wq, &set->uuid_work);
	return go;
}

/* The same for the writeback worker, which may wait. */
int bch_slot_fp_begin_sync(struct bch_cache_set *set, unsigned int slot)
{
	struct bch_uuid_disk *u = &set->uuids[slot];
	struct bch_slot *s = &set->slots[slot];
	int r = 0;

	mutex_lock(&set->lock);
	spin_lock_irq(&set->uuid_waiters_lock);
	/* A failed device takes no flag: its dirty data goes back anyway. */
	if (s->fp_flagged || bch_cache_failed(set)) {
		s->fp_writes++;
		goto out;
	}
	spin_unlock_irq(&set->uuid_waiters_lock);
	u->flags |= cpu_to_le32(BCH_UUID_FP_WRITING);
	r = bch_uuids_write(set);
	spin_lock_irq(&set->uuid_waiters_lock);
	if (!r) {
		s->fp_flagged = true;
		s->fp_writes++;
	}
out:
	spin_unlock_irq(&set->uuid_waiters_lock);
	mutex_unlock(&set->lock);
	return r;
}

/*
 * A write let go by bch_slot_fp_begin*() completed (endio: any context).
 * The fingerprint is retaken once the last one in flight is done: only
 * then is there work for bch_uuids_work().
 */
void bch_slot_fp_end(struct bch_cache_set *set, unsigned int slot)
{
	struct bch_slot *s = &set->slots[slot];
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&set->uuid_waiters_lock, flags);
	s->fp_stale = true;
	last = !--s->fp_writes;
	spin_unlock_irqrestore(&set->uuid_waiters_lock, flags);
	if (last)
		queue_work(set->wq, &set->uuid_work);
}

/*
 * Write the UUID table for the IO path: for writes waiting for
 * BCH_UUID_FP_WRITING, for fingerprints that changed, or for a cache
 * device that failed.
 */
void bch_uuids_work(struct work_struct *work)
{
	struct bch_cache_set *set = container_of(work, struct bch_cache_set,
						 uuid_work);
	DECLARE_BITMAP(flag, BCH_UUID_SLOTS);
	DECLARE_BITMAP(refresh, BCH_UUID_SLOTS);
	struct bio_list fp_waiters;
	unsigned int i, noio;
	struct bio *bio;
	int r;

	/* Writes to the origin's first 4 KiB wait for this work. */
	noio = memalloc_noio_save();
	if (bch_cache_failed(set) && !set->failed_dropped) {
		bch_index_lock(set);
		if (!bch_slot_invalidate_all(set))
			set->failed_dropped = true;	/* no dirty data left */
		up_write(&set->btree_lock);
	}

	bitmap_zero(flag, BCH_UUID_SLOTS);
	bitmap_zero(refresh, BCH_UUID_SLOTS);
	mutex_lock(&set->lock);
	spin_lock_irq(&set->uuid_waiters_lock);
	fp_waiters = set->fp_waiters;
	bio_list_init(&set->fp_waiters);
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		struct bch_slot *s = &set->slots[i];

		if (!s->holders)
			continue;
		if (s->fp_wanted) {
			s->fp_wanted = false;
			__set_bit(i, flag);
		} else if (s->fp_stale && !s->fp_writes) {
			/* Writes that come now wait for the next flag. */
			s->fp_stale = false;
			s->fp_flagged = false;
			__set_bit(i, refresh);
		}
	}
	spin_unlock_irq(&set->uuid_waiters_lock);

	for_each_set_bit(i, flag, BCH_UUID_SLOTS)
		set->uuids[i].flags |= cpu_to_le32(BCH_UUID_FP_WRITING);
	for_each_set_bit(i, refresh, BCH_UUID_SLOTS) {
		bch_slot_fingerprint(set, i);
		set->uuids[i].flags &= ~cpu_to_le32(BCH_UUID_FP_WRITING);
	}
	r = bch_uuids_write(set);
	if (r) {
		DMERR("%s: cannot write the UUID table", set->name);
		/* The waiting writes bypass a failed cache. */
		bch_cache_io_error(set, true);
	}
	spin_lock_irq(&set->uuid_waiters_lock);
	for_each_set_bit(i, flag, BCH_UUID_SLOTS)
		set->slots[i].fp_flagged = true;
	spin_unlock_irq(&set->uuid_waiters_lock);
	mutex_unlock(&set->lock);

	while ((bio = bio_list_pop(&fp_waiters)))
		bch_write_resume(bio);
	memalloc_noio_restore(noio);
}
