// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: cache sets, the superblock and synchronous metadata IO.
 *
 * A cache set is opened by the first table that names its cache device
 * and closed by the last one. While open, the on-disk superblock has
 * BCH_SB_CLEAN cleared; after a crash the journal is replayed.
 */
#include <linux/crc32c.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dm-bcache.h"

static LIST_HEAD(bch_cache_sets);
static DEFINE_MUTEX(bch_sets_lock);

/*
 * Cache sets that failed in this boot before their origins could be
 * invalidated on disk: if the device comes back, its index is behind the
 * origins, so the next open starts cold. (Across a reboot nothing can
 * tell; the failure message says to reformat or bcache-check --repair.)
 */
struct bch_failed_set {
	struct list_head	list;
	u8			set_uuid[16];
};

static LIST_HEAD(bch_failed_sets);	/* under bch_sets_lock */

static void bch_failed_add(struct bch_cache_set *set)
{
	struct bch_failed_set *f = kmalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return;
	memcpy(f->set_uuid, set->sb->set_uuid, 16);
	list_add(&f->list, &bch_failed_sets);
}

/* Did @set fail earlier? The entry goes once the open has invalidated. */
static struct bch_failed_set *bch_failed_find(struct bch_cache_set *set)
{
	struct bch_failed_set *f;

	list_for_each_entry(f, &bch_failed_sets, list)
		if (!memcmp(f->set_uuid, set->sb->set_uuid, 16))
			return f;
	return NULL;
}

void bch_failed_exit(void)
{
	struct bch_failed_set *f, *n;

	list_for_each_entry_safe(f, n, &bch_failed_sets, list)
		kfree(f);
}

u32 bch_crc32c(const void *buf, size_t len)
{
	return ~crc32c(~0U, buf, len);
}

/* Synchronous IO of @len bytes at @sector of @bdev (the cache or an origin). */
int bch_dev_io(struct bch_cache_set *set, struct block_device *bdev,
	       blk_opf_t opf, sector_t sector, void *buf, size_t len)
{
	struct dm_io_region where = {
		.bdev	= bdev,
		.sector	= sector,
		.count	= len >> SECTOR_SHIFT,
	};
	struct dm_io_request req = {
		.bi_opf		= opf,
		.mem.type	= is_vmalloc_addr(buf) ? DM_IO_VMA : DM_IO_KMEM,
		.mem.ptr.addr	= buf,
		.client		= set->io,
	};
	unsigned long error_bits = 0;
	int r;

	if (req.mem.type == DM_IO_VMA)
		req.mem.ptr.vma = buf;
	r = dm_io(&req, 1, &where, &error_bits, IOPRIO_DEFAULT);
	if (!r && error_bits)
		r = -EIO;
	return r;
}

/* IO of a member's metadata at @sector of it. */
int bch_member_io(struct bch_cache_set *set, struct bch_member *m,
		  blk_opf_t opf, sector_t sector, void *buf, size_t len)
{
	return bch_dev_io(set, m->bdev, opf, sector, buf, len);
}

/*
 * Make what every member but @except has written durable: a write with
 * PREFLUSH flushes its own device only, and what it makes durable (a
 * journal entry, a node's appended set) may name data and nodes on the
 * others. A member other than 0 that cannot flush is lost, and so marked
 * on disk before anything naming its copies is made durable. Process
 * context.
 */
int bch_flush_others(struct bch_cache_set *set, struct bch_member *except)
{
	struct bch_member *m;
	int r;

	bch_for_each_live_member(m, set) {
		if (m == except)
			continue;
		r = blkdev_issue_flush(m->bdev);
		if (r && !m->idx)
			return r;
		if (r)
			bch_member_fail(set, m);
	}
	return bch_members_mark_sync(set);
}

/* IO at @loc, a location (bch_ptr_loc()): cached data. */
int bch_loc_io(struct bch_cache_set *set, blk_opf_t opf, u64 loc, void *buf,
	       size_t len)
{
	if (bch_loc_failed(set, loc))
		return -EIO;
	return bch_dev_io(set, bch_ptr_bdev(set, loc), opf, bch_ptr_sector(loc),
			  buf, len);
}

/*
 * The cache device returned an error. A writethrough cache loses nothing
 * by going around a failing device, so after a write error, or a few read
 * errors, every IO of the set bypasses it. The index is kept (memory only)
 * but never trusted again: the set is not closed cleanly.
 */
void bch_cache_io_error(struct bch_cache_set *set, bool write)
{
	int n = atomic_inc_return(&set->io_errors);

	if (bch_cache_failed(set) || (!write && n < BCH_READ_ERRORS_MAX))
		return;
	WRITE_ONCE(set->failed, true);
	DMERR("%s: cache device failing (%d errors): all IO bypasses it now",
	      set->name, n);
	DMERR("%s: reformat it, or run bcache-check --repair, before reusing it",
	      set->name);
	/* Try to drop every origin's data on disk too (uuids.c). */
	queue_work(set->wq, &set->uuid_work);
}

/*
 * Read the current copy of a two-copy metadata area (@what) into @buf.
 * If it is bad but the other copy is good, the other copy becomes the
 * current one and the set opens cold (meta_fallback). Returns -EIO if
 * the device cannot be read, -EINVAL if neither copy is good.
 */
int bch_meta_read(struct bch_cache_set *set, struct bch_member *m,
		  const char *what, const __le64 *offset, __le32 *cur,
		  __le32 *csum, __le32 *csum_other, void *buf, size_t len)
{
	unsigned int i = le32_to_cpu(*cur);

	if (bch_member_io(set, m, REQ_OP_READ, le64_to_cpu(offset[i]), buf, len))
		return -EIO;
	if (bch_crc32c(buf, len) == le32_to_cpu(*csum))
		return 0;
	if (bch_member_io(set, m, REQ_OP_READ, le64_to_cpu(offset[!i]), buf,
			  len))
		return -EIO;
	if (bch_crc32c(buf, len) != le32_to_cpu(*csum_other))
		return -EINVAL;
	DMWARN("%s: current %s is bad: using the other copy", set->name, what);
	set->meta_fallback = true;
	*cur = cpu_to_le32(!i);
	swap(*csum, *csum_other);
	return 0;
}

static u32 bch_sb_csum(const struct bch_sb_disk *sb)
{
	return bch_crc32c((const u8 *)sb + sizeof(sb->csum),
			  BCH_SB_SIZE - sizeof(sb->csum));
}

/*
 * The fields of a superblock that are the set's, alike on every member
 * (Documentation/format-v3.rst): copied from @from, member 0's, into @to
 * before it is written. Not the journal's place: the journal is member
 * 0's alone so far, and each superblock's journal fields are its own
 * ring's (bch_sb_validate_journal()).
 */
static void bch_sb_set_fields(struct bch_sb_disk *to,
			      const struct bch_sb_disk *from)
{
	to->flags = from->flags;
	to->seq = from->seq;
	to->last_attach = from->last_attach;
	to->btree_root = from->btree_root;
	to->btree_level = from->btree_level;
	to->btree_root3 = from->btree_root3;
	to->uuid_current = from->uuid_current;
	to->uuid_csum = from->uuid_csum;
	to->uuid_csum_other = from->uuid_csum_other;
	to->state_seq = from->state_seq;
	memcpy(to->members, from->members, sizeof(to->members));
}

/*
 * Write the in-core superblock. The preflush makes every metadata write
 * issued before it durable first, so the superblock never names a copy
 * of the UUID table or bucket array that is not on the media.
 */
int bch_sb_write(struct bch_cache_set *set)
{
	struct bch_sb_disk *sb = set->sb;
	struct bch_member *m;
	unsigned int i;
	int r = 0, gen;

	lockdep_assert_held(&set->lock);
	/* Every write carries the members lost or removed so far (member.c). */
	gen = atomic_read(&set->marks_gen);
	bch_members_mark(set);
	le64_add_cpu(&sb->seq, 1);
	/* The bucket states on disk hold for the checkpoint it names. */
	sb->state_seq = set->states_ok ? sb->seq : 0;
	/*
	 * Member by member, each with the set's fields and its own, member 0
	 * last: it decides at the next open (the journal is its alone), so
	 * a crash between two leaves the set as member 0 says, and the
	 * others' newer bucket arrays only newer gens (nothing is reused
	 * before the whole write returns). A lost member is left as it is;
	 * one lost now is marked FAILED by the next write (member.c).
	 */
	for (i = set->nr_members; i-- > 0;) {
		m = set->members[i];
		if (bch_member_failed(m))
			continue;
		if (m->sb != sb)
			bch_sb_set_fields(m->sb, sb);
		m->sb->csum = cpu_to_le32(bch_sb_csum(m->sb));
		r = bch_member_io(set, m, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA |
				  REQ_SYNC, BCH_SB_SECTOR, m->sb, BCH_SB_SIZE);
		if (r) {
			DMERR("%s: superblock write of member %u failed: %d",
			      set->name, m->idx, r);
			if (!i)
				break;
			bch_member_fail(set, m);
			r = 0;
		}
		if (i && bch_fault_wait_ms(BCH_WAIT_SB_MEMBER))
			msleep(bch_fault_wait_ms(BCH_WAIT_SB_MEMBER));
	}
	if (!r) {
		set->marks_done = gen;
		/* As written: not one lost after bch_members_mark() above. */
		bch_for_each_member(m, set)
			if (le32_to_cpu(sb->members[m->idx].state) !=
			    BCH_MEMBER_ACTIVE)
				WRITE_ONCE(m->marked, true);
	}
	return r;
}

static bool is_pow2_in(u32 v, u32 lo, u32 hi)
{
	return v >= lo && v <= hi && is_power_of_2(v);
}

static const char *bch_sb_validate_journal(struct bch_sb_disk *sb,
					   u64 nbuckets, u32 bucket, u32 block)
{
	u64 first = le64_to_cpu(sb->journal_first);
	u32 n = le32_to_cpu(sb->journal_buckets);
	u64 pos = le64_to_cpu(sb->journal_pos);

	if (n < BCH_MIN_JOURNAL_BUCKETS || n > BCH_MAX_JOURNAL_BUCKETS ||
	    first < le64_to_cpu(sb->first_bucket) || first + n > nbuckets ||
	    nbuckets - le64_to_cpu(sb->first_bucket) - n < BCH_MIN_DATA_BUCKETS)
		return "cache superblock has a bad journal layout";
	if (pos >= (u64)n * bucket || pos & (block - 1) ||
	    !le64_to_cpu(sb->journal_seq))
		return "cache superblock has a bad journal position";
	return NULL;
}

/* Check everything the rest of the code trusts about the superblock. */
static const char *bch_sb_validate(struct block_device *bdev,
				   struct bch_sb_disk *sb)
{
	sector_t dev_sectors = bdev_nr_sectors(bdev);
	u32 block = le32_to_cpu(sb->block_size);
	u32 bucket = le32_to_cpu(sb->bucket_size);
	u64 nbuckets = le64_to_cpu(sb->nbuckets);
	u64 prio_sectors, uuid_sectors, meta;
	const char *why;

	if (memcmp(sb->magic, BCH_SB_MAGIC, BCH_MAGIC_LEN))
		return "cache device has no dm-bcache superblock (bad magic)";
	if (le32_to_cpu(sb->csum) != bch_sb_csum(sb))
		return "cache superblock checksum mismatch";
	if (le32_to_cpu(sb->version) < BCH_SB_VERSION_MIN ||
	    le32_to_cpu(sb->version) > BCH_SB_VERSION)
		return "unsupported cache superblock version";
	if (!is_pow2_in(block, BCH_MIN_BLOCK_SECTORS, BCH_MAX_BLOCK_SECTORS) ||
	    (block << SECTOR_SHIFT) < bdev_logical_block_size(bdev))
		return "cache superblock has a bad block size";
	if (!is_pow2_in(bucket, block, BCH_MAX_BUCKET_SECTORS))
		return "cache superblock has a bad bucket size";
	if (!nbuckets || nbuckets > BCH_MAX_BUCKETS ||
	    nbuckets * bucket > le64_to_cpu(sb->device_sectors))
		return "cache superblock has a bad bucket count";
	if (nbuckets * bucket > dev_sectors)
		return "cache device is smaller than its superblock says";
	if (le64_to_cpu(sb->first_bucket) != bch_first_bucket(nbuckets, bucket) ||
	    nbuckets < le64_to_cpu(sb->first_bucket) + BCH_MIN_DATA_BUCKETS)
		return "cache superblock has a bad metadata layout";

	prio_sectors = bch_prio_sectors(nbuckets);
	uuid_sectors = bch_uuid_sectors();
	meta = BCH_META_START;
	if (le32_to_cpu(sb->prio_sectors) != prio_sectors ||
	    le64_to_cpu(sb->prio_offset[0]) != meta ||
	    le64_to_cpu(sb->prio_offset[1]) != meta + prio_sectors ||
	    le32_to_cpu(sb->prio_current) > 1)
		return "cache superblock has a bad bucket array layout";
	meta += 2 * prio_sectors;
	if (le32_to_cpu(sb->uuid_sectors) != uuid_sectors ||
	    le64_to_cpu(sb->uuid_offset[0]) != meta ||
	    le64_to_cpu(sb->uuid_offset[1]) != meta + uuid_sectors ||
	    le32_to_cpu(sb->uuid_current) > 1)
		return "cache superblock has a bad UUID table layout";
	why = bch_sb_validate_journal(sb, nbuckets, bucket, block);
	if (!why)
		why = bch_sb_members_invalid(sb);
	return why;
}

static void bch_member_free(struct bch_member *m)
{
	if (!m)
		return;
	vfree(m->prio_buf);
	kvfree(m->prio_chunk);
	vfree(m->buckets);
	vfree(m->free_fifo);
	kfree(m->sb);
	kfree(m);
}

static void bch_set_free(struct bch_cache_set *set)
{
	unsigned int i;

	/*
	 * Checkpoints use the journal, whose work queues checkpoints: the
	 * entry in flight ends first, then no checkpoint runs or comes.
	 */
	bch_journal_stop(set);
	if (set->wq)
		cancel_work_sync(&set->gc_work);
	bch_journal_exit(set);
	if (set->wq) {
		/* Nothing queued may run on a set being freed. */
		cancel_work_sync(&set->gc_work);
		cancel_work_sync(&set->reclaim_work);
		cancel_work_sync(&set->rescale_work);
		cancel_work_sync(&set->uuid_work);
		cancel_work_sync(&set->member_work);
		destroy_workqueue(set->wq);
	}
	bch_index_free(set);
	mempool_destroy(set->reread_pool);
	kvfree(set->uuids);
	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		bch_member_free(set->members[i]);
	if (set->io)
		dm_io_client_destroy(set->io);
	kfree(set);
}

/* Read and check the superblock of @bdev, to be a member of @set. */
static int bch_member_read(struct bch_cache_set *set, struct block_device *bdev,
			   struct bch_member **mp, char **error)
{
	struct bch_member *m;
	const char *why;
	int r;

	*error = "cannot allocate cache set";
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	*mp = m;
	m->bdev = bdev;
	m->sb = kmalloc(BCH_SB_SIZE, GFP_KERNEL);
	if (!m->sb)
		return -ENOMEM;
	if (bdev_nr_sectors(bdev) < BCH_META_START) {
		*error = "cache device too small to hold a superblock";
		return -EINVAL;
	}
	if (bdev_read_only(bdev)) {
		*error = "cache device is read-only";
		return -EINVAL;
	}
	r = bch_member_io(set, m, REQ_OP_READ, BCH_SB_SECTOR, m->sb, BCH_SB_SIZE);
	if (r) {
		*error = "cannot read the cache superblock";
		return r;
	}
	why = bch_sb_validate(bdev, m->sb);
	if (why) {
		*error = (char *)why;
		return -EINVAL;
	}
	m->idx = le32_to_cpu(m->sb->dev_idx);
	m->nbuckets = le64_to_cpu(m->sb->nbuckets);
	m->first_bucket = le64_to_cpu(m->sb->first_bucket);
	m->journal_buckets = le32_to_cpu(m->sb->journal_buckets);
	return 0;
}

/*
 * Whether member @m was formatted by make-bcache --add and never opened:
 * its superblock was never written by a set (seq 0). It joins the set at
 * an index that no key can point to (NONE, or REMOVED: bch_gc_apply()).
 */
static bool bch_member_joining(const struct bch_member *m)
{
	return !le64_to_cpu(m->sb->seq);
}

/* Is @m, named by a table, the member of @sb0's set it says? */
static int bch_member_check(struct bch_cache_set *set, struct bch_member *m,
			    const struct bch_sb_disk *sb0, char **error)
{
	const struct bch_sb_disk *sb = m->sb;
	const struct bch_member_disk *e = &sb0->members[m->idx];
	u32 state = le32_to_cpu(e->state);
	u64 seq0 = le64_to_cpu(sb0->seq);

	if (memcmp(sb->set_uuid, sb0->set_uuid, 16) ||
	    sb->version != sb0->version ||
	    sb->block_size != sb0->block_size ||
	    sb->bucket_size != sb0->bucket_size) {
		*error = "cache devices of different cache sets";
		return -EINVAL;
	}
	if (bch_member_joining(m)) {
		if (state == BCH_MEMBER_NONE || state == BCH_MEMBER_REMOVED)
			return 0;
		*error = "a new member's index is in use: format it again with make-bcache --add";
		return -EINVAL;
	}
	/* Its superblock stopped being written when it was lost. */
	if (state == BCH_MEMBER_FAILED) {
		*error = "a cache device is a member its set marked failed (name it -)";
		return -EINVAL;
	}
	if (state == BCH_MEMBER_REMOVED) {
		*error = "a cache device is a member its set removed: make-bcache --add it again";
		return -EINVAL;
	}
	if (state != BCH_MEMBER_ACTIVE || memcmp(e->uuid, sb->uuid, 16) ||
	    e->nbuckets != sb->nbuckets) {
		*error = "a cache device is not the member of the set it says";
		return -EINVAL;
	}
	/*
	 * Member 0 is written last: a crash between two members' writes
	 * leaves the others one write ahead of it. Anything else is not this
	 * set as it last ran (a device restored from an older image, or a
	 * member whose writes failed).
	 */
	if (le64_to_cpu(sb->seq) == seq0 + 1) {
		set->members_behind = true;
	} else if (le64_to_cpu(sb->seq) != seq0) {
		*error = "a cache set member is not at its set's last superblock write";
		return -EINVAL;
	}
	return 0;
}

/*
 * Member @i, which the table does not name: "-" for one ACTIVE or FAILED
 * in member 0's superblock (@sb0), nothing for one REMOVED. Lost either
 * way (bch_member_missing()).
 */
static int bch_member_place_missing(struct bch_cache_set *set, unsigned int i,
				    const struct bch_sb_disk *sb0, char **error)
{
	const struct bch_member_disk *e = &sb0->members[i];
	struct bch_member_geom *g = &set->geom[i];
	struct bch_member *m;

	if (le32_to_cpu(e->state) == BCH_MEMBER_NONE) {
		*error = "cache set members not numbered from 0: not supported yet";
		return -EINVAL;
	}
	m = bch_member_missing(set, i, e);
	if (!m) {
		*error = "cannot allocate cache set";
		return -ENOMEM;
	}
	set->members[i] = m;
	g->bucket_size = le32_to_cpu(sb0->bucket_size);
	g->nbuckets = m->nbuckets;
	g->first_bucket = m->first_bucket;
	return 0;
}

/*
 * The @n devices a table names, read (@m, in the table's order; NULL
 * where it says "-"), are the set: member 0's superblock (written last,
 * bch_sb_write()) decides. Every member it has ACTIVE or FAILED is named,
 * a FAILED one as "-"; a member make-bcache --add formatted joins. They
 * go to set->members[] by index, and take member 0's set fields; a "-",
 * and a REMOVED index, get a lost member.
 */
static int bch_members_place(struct bch_cache_set *set, struct bch_member **m,
			     unsigned int n, char **error)
{
	const struct bch_sb_disk *sb0 = NULL;
	unsigned int i, named = 0, nr = 0;
	int r;

	for (i = 0; i < n; i++)
		if (m[i] && !m[i]->idx)
			sb0 = m[i]->sb;
	if (!sb0) {
		for (i = 0; i < n && m[i]; i++)
			;
		*error = i < n ?
			"member 0 of a cache set cannot be missing: it holds the index" :
			"the table names no member 0 of the cache set";
		return -EINVAL;
	}
	/* Version 2 has no member table: one device, member 0. */
	if (le32_to_cpu(sb0->version) == 2) {
		if (n > 1) {
			*error = "a cache set of several devices needs format version 3";
			return -EINVAL;
		}
		set->members[0] = m[0];
		m[0] = NULL;
		set->nr_members = 1;
		set->nr_named = 1;
		bch_sb_geom(set->members[0]->sb, &set->geom[0]);
		return 0;
	}
	/*
	 * A REMOVED member keeps its index: a set of several stays one,
	 * degraded with a member left, whose dirty writes need two.
	 */
	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		u32 state = le32_to_cpu(sb0->members[i].state);

		if (state == BCH_MEMBER_ACTIVE || state == BCH_MEMBER_FAILED)
			named++;
		if (state != BCH_MEMBER_NONE)
			nr = i + 1;
	}
	for (i = 0; i < n; i++) {
		if (!m[i])
			continue;
		r = bch_member_check(set, m[i], sb0, error);
		if (r)
			return r;
		if (set->members[m[i]->idx]) {
			*error = "two cache devices are one member";
			return -EINVAL;
		}
		m[i]->joining = bch_member_joining(m[i]);
		if (m[i]->joining) {
			named++;
			nr = max(nr, m[i]->idx + 1);
		}
		set->members[m[i]->idx] = m[i];
		m[i] = NULL;
	}
	if (named != n) {
		*error = "the table must name every member of the cache set";
		return -EINVAL;
	}
	set->nr_members = nr;
	set->nr_named = n;
	for (i = 0; i < nr; i++) {
		struct bch_member *mi = set->members[i];

		if (!mi) {
			r = bch_member_place_missing(set, i, sb0, error);
			if (r)
				return r;
			continue;
		}
		if (mi->sb != sb0)
			bch_sb_set_fields(mi->sb, sb0);
		bch_sb_geom(mi->sb, &set->geom[i]);
	}
	return 0;
}

/* Is the cache set @uuid open already (bch_sets_lock held)? */
static bool bch_set_uuid_open(const u8 *uuid)
{
	struct bch_cache_set *set;

	lockdep_assert_held(&bch_sets_lock);
	list_for_each_entry(set, &bch_cache_sets, list)
		if (!memcmp(set->sb->set_uuid, uuid, 16))
			return true;
	return false;
}

static struct bch_cache_set *bch_set_open(struct block_device **bdevs,
					  unsigned int n, char **error)
{
	struct bch_member *named[BCH_MAX_MEMBERS] = { };
	struct bch_failed_set *failed;
	struct bch_cache_set *set;
	struct bch_member *m;
	bool trusted, lost;
	unsigned int i;
	int r = -ENOMEM;

	set = kzalloc(sizeof(*set), GFP_KERNEL);
	if (!set) {
		*error = "cannot allocate cache set";
		return ERR_PTR(-ENOMEM);
	}
	refcount_set(&set->ref, 1);
	mutex_init(&set->lock);
	spin_lock_init(&set->uuid_waiters_lock);
	bio_list_init(&set->fp_waiters);
	set->io = dm_io_client_create();
	if (IS_ERR(set->io)) {
		r = PTR_ERR(set->io);
		set->io = NULL;
		*error = "cannot allocate cache set";
		goto err;
	}
	for (i = 0; i < n; i++) {
		r = bdevs[i] ? bch_member_read(set, bdevs[i], &named[i], error) : 0;
		if (r)
			goto err;
	}
	r = bch_members_place(set, named, n, error);
	if (r)
		goto err;
	m = set->members[0];
	set->sb = m->sb;
	if (bch_set_uuid_open(set->sb->set_uuid)) {
		*error = "cache set is already open through other devices";
		r = -EBUSY;
		goto err;
	}
	snprintf(set->name, sizeof(set->name), "%pg", m->bdev);
	if (set->members_behind)
		DMINFO("%s: a member is one superblock write ahead of member 0 (a crash between them): brought level",
		       set->name);
	set->block_size = le32_to_cpu(set->sb->block_size);
	set->bucket_size = le32_to_cpu(set->sb->bucket_size);
	set->version = le32_to_cpu(set->sb->version);
	set->key_bytes = bch_key_bytes(set->version);

	bch_for_each_live_member(m, set) {
		r = bch_prios_read(set, m, error);
		if (r)
			goto err;
	}
	r = bch_uuids_read(set, error);
	if (r)
		goto err;

	*error = "cannot set up the cache set";
	set->reread_pool = mempool_create_kmalloc_pool(1, BCH_CSUM_MAX_SECTORS <<
						       SECTOR_SHIFT);
	set->wq = alloc_workqueue("dm-bcache", WQ_MEM_RECLAIM, 0);
	if (!set->wq || !set->reread_pool) {
		r = -ENOMEM;
		goto err;
	}
	INIT_WORK(&set->uuid_work, bch_uuids_work);
	bch_member_init(set);
	bch_gc_init(set);
	r = bch_alloc_init(set);
	if (!r)
		r = bch_journal_init(set);
	if (r)
		goto err;

	if (!(le64_to_cpu(set->sb->flags) & BCH_SB_CLEAN))
		DMINFO("%s: cache was not shut down cleanly: replaying the journal",
		       set->name);
	/*
	 * An older copy of the bucket array may have older gens than keys
	 * rely on, an older UUID table older epochs: start cold.
	 */
	trusted = !set->meta_fallback;
	failed = bch_failed_find(set);
	if (failed) {
		DMWARN("%s: cache device failed earlier: cached data invalidated",
		       set->name);
		trusted = false;
	}
	/* Before the index is counted, so dropped origins count as dead. */
	bch_uuids_recover(set, trusted);
	r = bch_index_open(set, trusted, &lost);
	if (r) {
		*error = r == -ENXIO ?
			"the index has nodes on a member the table names -: name its device" :
			"cannot set up the cache index";
		goto err;
	}
	if (lost)
		bch_uuids_recover(set, false);

	mutex_lock(&set->lock);
	bch_members_open(set);
	/*
	 * A member one write ahead names the UUID table copy the next
	 * write goes to: bring it level with member 0 first.
	 */
	r = set->members_behind ? bch_sb_write(set) : 0;
	if (!r)
		r = bch_uuids_write(set);
	if (!r) {
		/* Informational: the journal makes a crash recoverable. */
		set->sb->flags &= ~cpu_to_le64(BCH_SB_CLEAN);
		set->sb->last_attach = cpu_to_le64(ktime_get_real_seconds());
		r = bch_sb_write(set);
	}
	mutex_unlock(&set->lock);
	/*
	 * The replayed index on disk and the journal empty. The counts the
	 * replay added to may count some sectors twice: the next checkpoint's
	 * GC pass, which runs beside the IO, makes them exact.
	 */
	if (!r)
		r = bch_checkpoint_sync(set, false);
	if (!r) {
		spin_lock(&set->alloc_lock);
		set->need_gc = true;
		spin_unlock(&set->alloc_lock);
	}
	if (r) {
		*error = "cannot write the cache metadata";
		goto err;
	}
	if (failed) {
		list_del(&failed->list);
		kfree(failed);
	}

	DMINFO("%s: cache set opened: %llu buckets of %u sectors on %u device%s",
	       set->name, bch_set_buckets(set), set->bucket_size,
	       bch_set_live(set), bch_set_live(set) > 1 ? "s" : "");
	return set;
err:
	for (i = 0; i < n; i++)
		bch_member_free(named[i]);
	bch_set_free(set);
	return ERR_PTR(r);
}

static void bch_set_close(struct bch_cache_set *set)
{
	int r;

	/* No table is left, so no IO: only background work remains. */
	flush_workqueue(set->wq);
	cancel_work_sync(&set->member_work);
	cancel_work_sync(&set->gc_work);
	cancel_work_sync(&set->reclaim_work);
	cancel_work_sync(&set->rescale_work);
	cancel_work_sync(&set->uuid_work);

	if (bch_cache_failed(set)) {
		/* What the failed device holds may be behind the origin. */
		bch_index_lock(set);
		if (!set->failed_dropped && bch_slot_invalidate_all(set))
			bch_failed_add(set);
		up_write(&set->btree_lock);
		r = -EIO;
	} else {
		r = bch_checkpoint_sync(set, false);
		/*
		 * A node a split freed while the last checkpoint was ending
		 * waits for one more (bch_free_btree()): take it, so that
		 * the bucket array names no node the index does not.
		 */
		if (!r)
			r = bch_checkpoint_sync(set, false);
	}
	mutex_lock(&set->lock);
	if (!r)
		r = bch_prios_write(set);
	if (!r)
		r = bch_uuids_write(set);
	if (!r) {
		set->sb->flags |= cpu_to_le64(BCH_SB_CLEAN);
		r = bch_sb_write(set);
	}
	mutex_unlock(&set->lock);
	if (r)
		DMERR("%s: cache set not closed cleanly (%d)", set->name, r);
	else
		DMINFO("%s: cache set closed", set->name);
	bch_set_free(set);
}

/*
 * Find the open cache set of the @n devices @bdevs or open it. A table
 * of an open set names all its members, in any order. The caller holds
 * the devices through its table for as long as it holds the set, so the
 * set never outlives every opener of them.
 */
struct bch_cache_set *bch_set_get(struct dm_target *ti,
				  struct block_device **bdevs, unsigned int n,
				  char **error)
{
	unsigned int i, found, holes = 0, missing;
	struct bch_cache_set *set;
	struct bch_member *m;

	for (i = 0; i < n; i++)
		holes += !bdevs[i];
	mutex_lock(&bch_sets_lock);
	list_for_each_entry(set, &bch_cache_sets, list) {
		found = 0;
		missing = 0;
		bch_for_each_member(m, set) {
			missing += !m->bdev;
			for (i = 0; i < n; i++)
				found += m->bdev && m->bdev == bdevs[i];
		}
		if (!found)
			continue;
		/* As many "-" as members missing at its open (not REMOVED). */
		missing -= set->nr_members - set->nr_named;
		if (found + holes != n || n != set->nr_named ||
		    holes != missing) {
			*error = "the table must name every member of the cache set";
			set = ERR_PTR(-EINVAL);
		} else {
			refcount_inc(&set->ref);
		}
		goto out;
	}
	set = bch_set_open(bdevs, n, error);
	if (!IS_ERR(set))
		list_add(&set->list, &bch_cache_sets);
out:
	mutex_unlock(&bch_sets_lock);
	return set;
}

/*
 * Is @origin cached by a device other than @md, in any cache set? Writes
 * through one device would leave the other's cached data stale.
 */
bool bch_origin_busy(dev_t origin, struct mapped_device *md)
{
	struct bch_cache_set *set;
	bool busy = false;
	unsigned int i;

	mutex_lock(&bch_sets_lock);
	list_for_each_entry(set, &bch_cache_sets, list) {
		mutex_lock(&set->lock);
		for (i = 0; i < BCH_UUID_SLOTS; i++) {
			struct bch_slot *s = &set->slots[i];

			if (s->holders && s->origin == origin && s->md != md)
				busy = true;
		}
		mutex_unlock(&set->lock);
	}
	mutex_unlock(&bch_sets_lock);
	return busy;
}

void bch_set_put(struct bch_cache_set *set)
{
	if (!refcount_dec_and_mutex_lock(&set->ref, &bch_sets_lock))
		return;
	/* Closed under the lock: a concurrent open must see the clean sb. */
	list_del(&set->list);
	bch_set_close(set);
	mutex_unlock(&bch_sets_lock);
}
