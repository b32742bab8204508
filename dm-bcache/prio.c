// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the bucket array (priority and generation of every bucket).
 *
 * Two copies live on disk; the superblock names the current one and its
 * checksum. A write fills the other copy and then the superblock, so a
 * torn write leaves the previous copy in force. Every invalidated bucket
 * waits for such a write before it is reused (alloc.c).
 */
#include <linux/vmalloc.h>

#include "dm-bcache.h"

static size_t bch_prio_bytes(struct bch_cache_set *set)
{
	return (size_t)le32_to_cpu(set->sb->prio_sectors) << SECTOR_SHIFT;
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
	if (!set->buckets || !set->prio_buf)
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

/*
 * Take the bucket states the array holds (BCH_BUCKET_STATE), instead of
 * counting the index: valid only if the superblock says so. Metadata
 * and journal buckets have none.
 */
bool bch_prios_load_state(struct bch_cache_set *set)
{
	struct bch_bucket_disk *d = set->prio_buf;
	u64 i;

	if (!bch_bucket_state_valid(set->sb))
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

int bch_prios_write(struct bch_cache_set *set)
{
	struct bch_sb_disk *sb = set->sb;
	unsigned int next = !le32_to_cpu(sb->prio_current);
	__le32 old_cur = sb->prio_current, old_csum = sb->prio_csum;
	__le32 old_other = sb->prio_csum_other;
	int r;

	lockdep_assert_held(&set->lock);
	memset(set->prio_buf, 0, bch_prio_bytes(set));
	bch_alloc_persist_fill(set, set->prio_buf);
	r = bch_meta_io(set, REQ_OP_WRITE, le64_to_cpu(sb->prio_offset[next]),
			set->prio_buf, bch_prio_bytes(set));
	if (!r) {
		sb->prio_current = cpu_to_le32(next);
		sb->prio_csum_other = sb->prio_csum;
		sb->prio_csum = cpu_to_le32(bch_crc32c(set->prio_buf,
						       bch_prio_bytes(set)));
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
