// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the journal.
 *
 * Every key inserted into the index is also appended to an entry in
 * memory; entries are written one at a time, in order, to a ring of
 * buckets (the format is in bcache_ondisk.h). At open the entries since
 * the last checkpoint are replayed over it, so the index survives a
 * crash. A checkpoint (index.c) writes the index and moves the replay
 * start past everything written so far, which frees the ring.
 *
 * Ordering: entries go out with PREFLUSH|FUA, so cached data a key points
 * to is durable before the key, and a write that punched cached data out
 * of the index is held here (parked) until the hole is durable: only then
 * may the origin get new data that the old cached copy would contradict.
 *
 * When the ring or both buffers are full the journal overflows: keys are
 * left out (the index has them) and parked writes wait for the next
 * checkpoint instead, which writes the index itself. What is on disk is
 * then still a prefix of the insert order, so a replay is always a state
 * the index had.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "bset.h"
#include "dm-bcache.h"

/* Keys without a parked write may wait this long for company. */
static unsigned long bch_journal_delay(void)
{
	unsigned int ms = bch_fault_wait_ms(BCH_WAIT_JOURNAL_HOLD);

	return msecs_to_jiffies(ms ?: 20);
}

static void bch_journal_write_work(struct work_struct *work);
static void bch_journal_done_work(struct work_struct *work);
static void bch_journal_write(struct bch_journal *j);

static void *bch_jset_key(struct bch_jset_disk *d, const struct bch_cache_set *set, u32 i)
{
	return (u8 *)(d + 1) + (size_t)set->key_bytes * i;
}

static void bch_journal_want_cp(struct bch_cache_set *set)
{
	queue_work(set->wq, &set->gc_work);
}

bool bch_journal_want_checkpoint(struct bch_cache_set *set)
{
	struct bch_journal *j = &set->journal;

	/* A checkpoint under way frees what it found (cp_used) already. */
	return READ_ONCE(j->overflow) ||
	       READ_ONCE(j->used) > READ_ONCE(j->cp_used) + j->ring_sectors / 2;
}

int bch_journal_init(struct bch_cache_set *set)
{
	struct bch_journal *j = &set->journal;
	struct bch_sb_disk *sb = set->sb;
	unsigned int i;

	j->set = set;
	j->member = set->members[0];
	spin_lock_init(&j->lock);
	init_waitqueue_head(&j->idle);
	bio_list_init(&j->cp_waiters);
	INIT_DELAYED_WORK(&j->write_work, bch_journal_write_work);
	INIT_WORK(&j->done_work, bch_journal_done_work);
	j->ring_start = le64_to_cpu(sb->journal_first) * set->bucket_size;
	j->ring_sectors = (u64)le32_to_cpu(sb->journal_buckets) *
		set->bucket_size;
	j->max_sectors = min_t(u32, BCH_JSET_MAX_SECTORS, set->bucket_size);
	j->max_keys = bch_jset_max_keys(j->max_sectors, set->key_bytes);
	j->seq = le64_to_cpu(sb->journal_seq);
	j->pos = le64_to_cpu(sb->journal_pos);
	for (i = 0; i < ARRAY_SIZE(j->buf); i++) {
		j->buf[i].data = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO,
				get_order(BCH_JSET_MAX_SECTORS << SECTOR_SHIFT));
		if (!j->buf[i].data)
			return -ENOMEM;
		bio_list_init(&j->buf[i].waiters);
	}
	j->cur = &j->buf[0];
	j->wq = alloc_workqueue("dm-bcache-journal", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				1);
	return j->wq ? 0 : -ENOMEM;
}

/*
 * No table is left (or none came), so no key is added any more. The
 * entry in flight, if any, must end before its buffer and the done work
 * it queues go away: only a checkpoint waited for it, and a set that
 * failed, or failed to open, takes none. Blocked, the journal seals no
 * entry; one sealed already is written, which the work may not have done.
 * The done work may queue a checkpoint: the caller cancels it after this.
 */
void bch_journal_stop(struct bch_cache_set *set)
{
	struct bch_journal *j = &set->journal;

	if (!j->wq)
		return;
	spin_lock(&j->lock);
	j->blocked = true;
	spin_unlock(&j->lock);
	bch_journal_write(j);
	wait_event(j->idle, !READ_ONCE(j->wbuf));
	cancel_delayed_work_sync(&j->write_work);
	/* The done work that woke us may still run. */
	flush_workqueue(j->wq);
}

/* After bch_journal_stop(), and fine after a failed init. */
void bch_journal_exit(struct bch_cache_set *set)
{
	struct bch_journal *j = &set->journal;
	unsigned int i;

	if (j->wq)
		destroy_workqueue(j->wq);
	for (i = 0; i < ARRAY_SIZE(j->buf); i++)
		free_pages((unsigned long)j->buf[i].data,
			   get_order(BCH_JSET_MAX_SECTORS << SECTOR_SHIFT));
}

/* Reading, at open. */

/*
 * The number of keys of a good entry in @d (@room sectors) whose seq is
 * @seq, or at least @seq if @later; else -1.
 */
static int bch_jset_check(struct bch_cache_set *set, struct bch_jset_disk *d,
			  u64 seq, bool later, u32 room)
{
	u32 sectors = le32_to_cpu(d->sectors), nkeys = le32_to_cpu(d->nkeys);
	u64 s = le64_to_cpu(d->seq);

	if (le32_to_cpu(d->magic) != bch_jset_magic(set->version) ||
	    memcmp(d->set_uuid, set->sb->set_uuid, sizeof(d->set_uuid)) ||
	    (later ? s < seq : s != seq) || !sectors || sectors > room ||
	    sectors & (set->block_size - 1) ||
	    nkeys > bch_jset_max_keys(sectors, set->key_bytes))
		return -1;
	if (bch_crc32c((u8 *)d + sizeof(d->csum),
		       bch_jset_bytes(nkeys, set->key_bytes) - sizeof(d->csum)) !=
	    le32_to_cpu(d->csum))
		return -1;
	return nkeys;
}

/*
 * The on-disk rule for a leaf key (bcache_ondisk.h), for the journal's
 * keys at replay and the index's at load alike. The bucket array's
 * metadata and journal flags were checked against this layout at open.
 */
const char *bch_key_invalid(struct bch_cache_set *set, const struct bch_bkey *k)
{
	return bch_leaf_key_invalid(k, set->version, set->geom, set->nr_members);
}

/* Read the good entry with @seq at ring sector @pos into the first buffer. */
static int bch_jset_read(struct bch_cache_set *set, u64 pos, u64 seq)
{
	struct bch_journal *j = &set->journal;
	u32 room = min_t(u64, j->max_sectors,
			 set->bucket_size - pos % set->bucket_size);
	int r;

	r = bch_member_io(set, j->member, REQ_OP_READ, j->ring_start + pos,
			  j->buf[0].data, (size_t)room << SECTOR_SHIFT);
	if (r)
		return r;
	return bch_jset_check(set, j->buf[0].data, seq, false, room) < 0 ?
		-ENOENT : 0;
}

/*
 * The journal ended at a bad entry: normal if the crash tore it, or if
 * it is what an earlier lap of the ring left. But if any good entry with
 * a seq from there on is anywhere in the ring, an entry in the middle is
 * damaged, and the keys after it (holes of writes the origin has) are
 * lost: the index cannot be trusted. Notes in @end the largest seq seen,
 * so that a journal started afresh never reuses one.
 */
static int bch_journal_check_end(struct bch_cache_set *set,
				 struct bch_jpos *end)
{
	struct bch_jset_disk *d;
	struct bch_journal *j = &set->journal;
	u32 bucket_bytes = set->bucket_size << SECTOR_SHIFT;
	u32 block = set->block_size, off;
	u64 b;
	u8 *buf;
	int r = 0;

	buf = vmalloc(bucket_bytes);
	if (!buf)
		return -ENOMEM;
	for (b = 0; !r && b < j->ring_sectors; b += set->bucket_size) {
		r = bch_member_io(set, j->member, REQ_OP_READ,
				  j->ring_start + b, buf, bucket_bytes);
		for (off = 0; !r && off < set->bucket_size; off += block) {
			d = (void *)(buf + (off << SECTOR_SHIFT));
			if (bch_jset_check(set, d, 0, true,
					   min(j->max_sectors,
					       set->bucket_size - off)) >= 0)
				end->max_seq = max(end->max_seq,
						   le64_to_cpu(d->seq));
		}
	}
	vfree(buf);
	if (r)
		return r;
	if (end->max_seq >= end->seq) {
		DMWARN("%s: journal damaged before entry %llu", set->name,
		       end->seq);
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Walk the entries from the superblock's replay start, calling @fn for
 * every key in order, and say in @end where the journal ends. After a
 * bad key or an error of @fn, @fn is not called again but the walk goes
 * on to the end. Returns the first error of @fn or of a key, or -EIO.
 */
int bch_journal_walk(struct bch_cache_set *set,
		     int (*fn)(struct bch_cache_set *set,
			       const struct bch_bkey *k, void *arg),
		     void *arg, struct bch_jpos *end)
{
	struct bch_journal *j = &set->journal;
	struct bch_jset_disk *d = j->buf[0].data;
	u64 pos = le64_to_cpu(set->sb->journal_pos), used = 0, skip;
	struct bch_bkey k;
	int r, err = 0;
	u32 i;

	memset(end, 0, sizeof(*end));
	end->seq = le64_to_cpu(set->sb->journal_seq);
	end->pos = pos;
	while (used < j->ring_sectors) {
		r = bch_jset_read(set, pos, end->seq);
		skip = 0;
		if (r == -ENOENT && pos % set->bucket_size) {
			/* The writer moves on to the next bucket when full. */
			skip = set->bucket_size - pos % set->bucket_size;
			if (used + skip >= j->ring_sectors)
				break;
			r = bch_jset_read(set, (pos + skip) % j->ring_sectors,
					  end->seq);
		}
		if (r == -ENOENT)
			break;
		if (r)
			return -EIO;
		pos = (pos + skip) % j->ring_sectors;
		for (i = 0; i < le32_to_cpu(d->nkeys); i++) {
			if (!err && (!bch_bkey_unpack(&k, bch_jset_key(d, set, i),
						      set->key_bytes) ||
				     bch_key_invalid(set, &k)))
				err = -EINVAL;
			if (!err)
				err = fn(set, &k, arg);
		}
		used += skip + le32_to_cpu(d->sectors);
		pos = (pos + le32_to_cpu(d->sectors)) % j->ring_sectors;
		end->keys += le32_to_cpu(d->nkeys);
		end->entries++;
		end->seq++;
		end->pos = pos;
		end->used = used;
	}
	r = used < j->ring_sectors ? bch_journal_check_end(set, end) : 0;
	return err ?: r;
}

/* Appending; once the index is loaded. */

void bch_journal_start(struct bch_cache_set *set, const struct bch_jpos *end)
{
	struct bch_journal *j = &set->journal;

	j->seq = end->seq;
	j->pos = end->pos;
	j->used = end->used;
}

/*
 * Seal the current entry: give it its place in the ring and make it the
 * one to write. False if the ring has no room: the journal overflows.
 */
static bool bch_journal_seal(struct bch_journal *j)
{
	struct bch_cache_set *set = j->set;
	struct bch_jbuf *jb = j->cur;
	struct bch_jset_disk *d = jb->data;
	u32 block = set->block_size << SECTOR_SHIFT, bytes;
	u64 skip = 0;

	lockdep_assert_held(&j->lock);
	bytes = bch_jset_bytes(jb->nkeys, set->key_bytes);
	jb->sectors = round_up(bytes, block) >> SECTOR_SHIFT;
	if (j->pos % set->bucket_size + jb->sectors > set->bucket_size)
		skip = set->bucket_size - j->pos % set->bucket_size;
	if (j->used + skip + jb->sectors > j->ring_sectors ||
	    bch_fault(BCH_FAULT_JOURNAL))
		return false;

	j->pos = (j->pos + skip) % j->ring_sectors;
	jb->sector = j->ring_start + j->pos;
	d->magic = cpu_to_le32(bch_jset_magic(set->version));
	d->seq = cpu_to_le64(j->seq);
	d->nkeys = cpu_to_le32(jb->nkeys);
	d->sectors = cpu_to_le32(jb->sectors);
	memcpy(d->set_uuid, set->sb->set_uuid, sizeof(d->set_uuid));
	memset((u8 *)d + bytes, 0, (jb->sectors << SECTOR_SHIFT) - bytes);
	d->csum = cpu_to_le32(bch_crc32c((u8 *)d + sizeof(d->csum),
					 bytes - sizeof(d->csum)));
	j->pos = (j->pos + jb->sectors) % j->ring_sectors;
	j->used += skip + jb->sectors;
	j->seq++;
	j->wbuf = jb;
	j->cur = jb == &j->buf[0] ? &j->buf[1] : &j->buf[0];
	j->cur->nkeys = 0;
	return true;
}

/* Leave the current entry's keys to the checkpoint, and its writes too. */
static void bch_journal_overflow(struct bch_journal *j)
{
	lockdep_assert_held(&j->lock);
	bio_list_merge(&j->cp_waiters, &j->cur->waiters);
	bio_list_init(&j->cur->waiters);
	j->cur->nkeys = 0;
	if (!j->overflow) {
		j->overflow = true;
		j->overflows++;
	}
	bch_journal_want_cp(j->set);
}

static void bch_journal_endio(struct bio *bio)
{
	struct bch_journal *j = bio->bi_private;

	if (bio->bi_status)
		bch_cache_io_error(j->set, true);
	queue_work(j->wq, &j->done_work);
}

static void bch_journal_submit(struct bch_journal *j, struct bch_jbuf *jb)
{
	struct bch_cache_set *set = j->set;
	u32 bytes = jb->sectors << SECTOR_SHIFT, off;

	/* The entry's keys may name data on the other members. */
	if (!bch_cache_failed(set) && bch_flush_others(set, j->member))
		bch_cache_io_error(set, true);
	if (bch_cache_failed(set)) {
		/* Nothing can be made durable: only let the writes go. */
		queue_work(j->wq, &j->done_work);
		return;
	}
	bio_init(&jb->bio, j->member->bdev, jb->bvecs, ARRAY_SIZE(jb->bvecs),
		 REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA | REQ_SYNC | REQ_META);
	jb->bio.bi_iter.bi_sector = jb->sector;
	for (off = 0; off < bytes; off += PAGE_SIZE)
		__bio_add_page(&jb->bio, virt_to_page((u8 *)jb->data + off),
			       min_t(u32, PAGE_SIZE, bytes - off), 0);
	jb->bio.bi_end_io = bch_journal_endio;
	jb->bio.bi_private = j;
	submit_bio(&jb->bio);
}

/* Write the current entry if it has keys and nothing else is in flight. */
static void bch_journal_write(struct bch_journal *j)
{
	struct bch_jbuf *jb = NULL;

	spin_lock(&j->lock);
	if (!j->wbuf && !j->blocked && j->cur->nkeys && !bch_journal_seal(j))
		bch_journal_overflow(j);
	if (j->wbuf && !j->submitted) {
		jb = j->wbuf;
		j->submitted = true;
	}
	spin_unlock(&j->lock);
	if (jb)
		bch_journal_submit(j, jb);
	if (bch_journal_want_checkpoint(j->set))
		bch_journal_want_cp(j->set);
}

static void bch_journal_write_work(struct work_struct *work)
{
	bch_journal_write(container_of(to_delayed_work(work),
				       struct bch_journal, write_work));
}

static void bch_submit_list(struct bio_list *list, blk_status_t status)
{
	struct bio *bio;

	while ((bio = bio_list_pop(list)))
		bch_release_bio(bio, status);
}

static void bch_journal_done_work(struct work_struct *work)
{
	struct bch_journal *j = container_of(work, struct bch_journal,
					     done_work);
	blk_status_t status;
	struct bio_list done;

	spin_lock(&j->lock);
	/* Not written (a failed cache) counts as failed. */
	status = j->submitted && !bch_cache_failed(j->set) ?
		j->wbuf->bio.bi_status : BLK_STS_IOERR;
	done = j->wbuf->waiters;
	bio_list_init(&j->wbuf->waiters);
	j->wbuf = NULL;
	j->submitted = false;
	j->entries++;
	spin_unlock(&j->lock);
	wake_up(&j->idle);
	bch_submit_list(&done, status);
	bch_journal_write(j);
}

/*
 * Journal @k, just inserted into the index (the btree lock is held for
 * write, or for read with the leaf's lock: either way entries of keys
 * that overlap follow their insert order). @waiter, if any, is a bio that
 * must not be issued before @k is durable: it is parked and sent on
 * from here.
 */
void bch_journal_add(struct bch_cache_set *set, const struct bch_bkey *k,
		     struct bio *waiter)
{
	struct bch_journal *j = &set->journal;
	bool now = waiter;
	struct bch_jbuf *jb;

	lockdep_assert_held(&set->btree_lock);
	spin_lock(&j->lock);
	if (!j->overflow && j->cur->nkeys == j->max_keys) {
		/* Full: seal it for the worker, or give up on the journal. */
		if (j->wbuf || j->blocked || !bch_journal_seal(j))
			bch_journal_overflow(j);
		now = true;
	}
	if (j->overflow) {
		if (waiter)
			bio_list_add(&j->cp_waiters, waiter);
		spin_unlock(&j->lock);
		return;
	}
	jb = j->cur;
	WARN_ON(!bch_bkey_fits(k, j->set->key_bytes));
	bch_bkey_pack(bch_jset_key(jb->data, j->set, jb->nkeys++), k, j->set->key_bytes);
	if (waiter)
		bio_list_add(&jb->waiters, waiter);
	spin_unlock(&j->lock);

	if (now)
		mod_delayed_work(j->wq, &j->write_work, 0);
	else
		queue_delayed_work(j->wq, &j->write_work, bch_journal_delay());
}

/*
 * Park @bio until every key added so far is durable; false if they all
 * are already. Entries are written in order, so the last one will do.
 */
bool bch_journal_barrier(struct bch_cache_set *set, struct bio *bio)
{
	struct bch_journal *j = &set->journal;
	bool parked = true;

	spin_lock(&j->lock);
	/*
	 * A checkpoint under way took the current entry's keys: they are
	 * durable only once its superblock is.
	 */
	if (j->overflow || j->blocked)
		bio_list_add(&j->cp_waiters, bio);
	else if (j->cur->nkeys)
		bio_list_add(&j->cur->waiters, bio);
	else if (j->wbuf)
		bio_list_add(&j->wbuf->waiters, bio);
	else
		parked = false;
	spin_unlock(&j->lock);
	if (parked)
		mod_delayed_work(j->wq, &j->write_work, 0);
	return parked;
}

/* A flush came: write what is pending now rather than later. */
void bch_journal_kick(struct bch_cache_set *set)
{
	struct bch_journal *j = &set->journal;

	if (READ_ONCE(j->cur->nkeys))
		mod_delayed_work(j->wq, &j->write_work, 0);
}

/*
 * A checkpoint is about to write the index (btree lock held for write, so
 * no key is added meanwhile). Replay will start at *@seq, *@pos.
 *
 * Normally the current entry is written first and the journal goes on
 * while the checkpoint runs: every key added from now on is in an entry
 * the replay reads, so the caller may let go of the lock between nodes
 * (returns true). After an overflow the entries on disk stop short of
 * keys the index has, and no later entry may follow them: the journal is
 * blocked until the checkpoint ends, the current entry's keys and writes
 * go to it, and the index must not change until then (returns false).
 */
bool bch_journal_checkpoint_start(struct bch_cache_set *set, u64 *seq,
				  u64 *pos)
{
	struct bch_journal *j = &set->journal;

	lockdep_assert_held_write(&set->btree_lock);
	for (;;) {
		wait_event(j->idle, !READ_ONCE(j->wbuf));
		spin_lock(&j->lock);
		if (j->overflow || j->blocked)
			break;
		if (!j->wbuf && !j->cur->nkeys) {
			*seq = j->seq;
			*pos = j->pos;
			j->cp_used = j->used;
			spin_unlock(&j->lock);
			return true;
		}
		spin_unlock(&j->lock);
		/* Seals and sends it, or overflows. */
		bch_journal_write(j);
	}
	j->blocked = true;
	spin_unlock(&j->lock);
	wait_event(j->idle, !READ_ONCE(j->wbuf));

	spin_lock(&j->lock);
	bio_list_merge(&j->cp_waiters, &j->cur->waiters);
	bio_list_init(&j->cur->waiters);
	j->cur->nkeys = 0;
	*seq = j->seq;
	*pos = j->pos;
	spin_unlock(&j->lock);
	return false;
}

/*
 * The checkpoint is durable (!@r) or failed. The writes it held are
 * handed back in @waiters, for bch_journal_checkpoint_release() once the
 * btree lock is gone.
 *
 * A @fuzzy one held none: the journal went on meanwhile, and what it
 * wrote since the start stays for the replay. If it overflowed meanwhile,
 * its keys and writes are left to the next checkpoint, which the overflow
 * asked for. Only if the device failed do those writes go now, failed.
 *
 * Otherwise it is called before the index may change again: a key added
 * after that must be journaled, and a flush parked after that must wait
 * for its entry, not for this checkpoint, which does not hold the key.
 * If it failed for want of memory or buckets, the keys it took from the
 * current entry are in no entry: the journal overflows, so that what is
 * on disk stays a prefix of the insert order, and the writes stay held
 * for the retry.
 */
void bch_journal_checkpoint_end(struct bch_cache_set *set, bool fuzzy, int r,
				struct bio_list *waiters)
{
	struct bch_journal *j = &set->journal;

	bio_list_init(waiters);
	spin_lock(&j->lock);
	if (fuzzy) {
		if (!r)
			j->used -= j->cp_used;
		j->cp_used = 0;
		if (!r || bch_checkpoint_retry(r)) {
			spin_unlock(&j->lock);
			return;
		}
	} else {
		lockdep_assert_held(&set->btree_lock);
		j->blocked = false;
		if (!r) {
			j->used = 0;
			j->overflow = false;
		} else if (bch_checkpoint_retry(r)) {
			if (!j->overflow) {
				j->overflow = true;
				j->overflows++;
			}
			spin_unlock(&j->lock);
			return;
		}
	}
	*waiters = j->cp_waiters;
	bio_list_init(&j->cp_waiters);
	spin_unlock(&j->lock);
}

/*
 * Send on the writes a checkpoint held: either way they go, as a device
 * that failed a checkpoint has its clean cached data invalidated (index.c;
 * dirty data stays, and is written back from the failed device). One that
 * failed for want of memory kept them for its retry.
 */
void bch_journal_checkpoint_release(struct bch_cache_set *set, bool ok,
				    struct bio_list *waiters)
{
	bch_submit_list(waiters, ok ? BLK_STS_OK : BLK_STS_IOERR);
	bch_journal_kick(set);
}
