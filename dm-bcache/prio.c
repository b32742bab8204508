// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the bucket array (priority and generation of every bucket).
 *
 * Two copies live on disk; the superblock names the current one and its
 * checksum. A write fills the other copy and then the superblock, so a
 * torn write leaves the previous copy in force. Every invalidated bucket
 * waits for such a write before it is reused (alloc.c).
 *
 * A copy is 4 bytes a bucket (8 MiB per TiB of 512 KiB buckets). Only the
 * open holds a whole one; a write goes out a chunk at a time.
 */
#include <linux/crc32c.h>
#include <linux/vmalloc.h>

#include "dm-bcache.h"

#define BCH_PRIO_CHUNK	BIT(20)		/* bytes: a multiple of 4 KiB */

static size_t bch_prio_bytes(struct bch_cache_set *set)
{
	return (size_t)le32_to_cpu(set->sb->prio_sectors) << SECTOR_SHIFT;
}

static size_t bch_prio_chunk_bytes(struct bch_cache_set *set)
{
	return min_t(size_t, bch_prio_bytes(set), BCH_PRIO_CHUNK);
}

int bch_prios_read(struct bch_cache_set *set, char **error)
{
	struct bch_sb_disk *sb = set->sb;
	u64 jfirst = le64_to_cpu(sb->journal_first);
	u32 jn = le32_to_cpu(sb->journal_buckets);
	struct bch_bucket_disk *d;
	u64 i;
	int r;

	*error = "cannot allocate the bucket array";
	set->buckets = vzalloc(array_size(set->nbuckets, sizeof(*set->buckets)));
	set->prio_buf = vmalloc(bch_prio_bytes(set));
	set->prio_chunk = kvmalloc(bch_prio_chunk_bytes(set), GFP_KERNEL);
	if (!set->buckets || !set->prio_buf || !set->prio_chunk)
		return -ENOMEM;

	r = bch_meta_read(set, "bucket array", sb->prio_offset,
			  &sb->prio_current, &sb->prio_csum,
			  &sb->prio_csum_other, set->prio_buf,
			  bch_prio_bytes(set));
	if (r) {
		*error = r == -EIO ? "cannot read the bucket array" :
			"bucket array checksum mismatch";
		return r;
	}

	d = set->prio_buf;
	for (i = 0; i < set->nbuckets; i++) {
		struct bch_bucket *b = &set->buckets[i];
		bool meta = i < set->first_bucket;

		b->prio = le16_to_cpu(d[i].prio);
		b->gen = d[i].gen;
		b->last_gc = b->gen;
		b->flags = d[i].flags & (BCH_BUCKET_META | BCH_BUCKET_JOURNAL);
		if (meta != !!(b->flags & BCH_BUCKET_META) ||
		    (i >= jfirst && i < jfirst + jn) !=
		    !!(b->flags & BCH_BUCKET_JOURNAL)) {
			*error = "bucket array disagrees with the superblock layout";
			return -EINVAL;
		}
	}
	return 0;
}

/* The open is done with the copy it read. */
void bch_prios_read_done(struct bch_cache_set *set)
{
	vfree(set->prio_buf);
	set->prio_buf = NULL;
}

/*
 * Take the bucket states the array holds (BCH_BUCKET_STATE), instead of
 * counting the index: valid only if the superblock says so. Metadata
 * and journal buckets have none. Before bch_prios_read_done() only.
 */
bool bch_prios_load_state(struct bch_cache_set *set)
{
	struct bch_bucket_disk *d = set->prio_buf;
	u64 i;

	if (WARN_ON(!d) || !bch_bucket_state_valid(set->sb))
		return false;
	for (i = set->first_bucket; i < set->nbuckets; i++) {
		struct bch_bucket *b = &set->buckets[i];
		u8 f = d[i].flags;

		if (b->flags)
			continue;
		b->last_gc = b->gen - (f & BCH_BUCKET_GC_OLD ?
				       BCH_GC_GEN_MAX - 1 : BCH_GC_GEN_MAX / 2 - 1);
		if (f & BCH_BUCKET_BTREE)
			b->state = BCH_B_BTREE;
		else if (f & (BCH_BUCKET_DATA | BCH_BUCKET_DIRTY))
			b->sectors = set->bucket_size;
		if (f & BCH_BUCKET_DIRTY)
			b->dirty = set->bucket_size;
	}
	return true;
}

/*
 * Fill and write the other copy a chunk at a time, then name it in the
 * superblock. The chunks are filled at different moments; each bucket's
 * entry is what was true when its chunk was filled, and a bucket whose
 * gen moves after that waits for the next write (alloc.c).
 */
int bch_prios_write(struct bch_cache_set *set)
{
	struct bch_sb_disk *sb = set->sb;
	unsigned int next = !le32_to_cpu(sb->prio_current);
	__le32 old_cur = sb->prio_current, old_csum = sb->prio_csum;
	__le32 old_other = sb->prio_csum_other;
	size_t total = bch_prio_bytes(set), chunk = bch_prio_chunk_bytes(set);
	sector_t where = le64_to_cpu(sb->prio_offset[next]);
	u64 per = chunk / sizeof(struct bch_bucket_disk);
	size_t done;
	u32 crc = ~0U;
	int r = 0;

	lockdep_assert_held(&set->lock);
	for (done = 0; done < total && !r; done += chunk) {
		size_t len = min(chunk, total - done);
		u64 first = done / sizeof(struct bch_bucket_disk);

		memset(set->prio_chunk, 0, len);
		if (first < set->nbuckets)
			bch_alloc_persist_fill(set, set->prio_chunk, first,
					       min(per, set->nbuckets - first));
		crc = crc32c(crc, set->prio_chunk, len);
		r = bch_meta_io(set, REQ_OP_WRITE, where + (done >> SECTOR_SHIFT),
				set->prio_chunk, len);
	}
	if (!r) {
		sb->prio_current = cpu_to_le32(next);
		sb->prio_csum_other = sb->prio_csum;
		sb->prio_csum = cpu_to_le32(~crc);
		r = bch_sb_write(set);
		if (r) {
			sb->prio_current = old_cur;
			sb->prio_csum_other = old_other;
			sb->prio_csum = old_csum;
		}
	}
	/* Buckets whose new gen is on disk may be written now. */
	bch_alloc_persist_done(set, !r);
	return r;
}
