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

static size_t bch_prio_bytes(struct bch_member *m)
{
	return (size_t)le32_to_cpu(m->sb->prio_sectors) << SECTOR_SHIFT;
}

static size_t bch_prio_chunk_bytes(struct bch_member *m)
{
	return min_t(size_t, bch_prio_bytes(m), BCH_PRIO_CHUNK);
}

/* Read member @m's bucket array (its superblock validated). */
int bch_prios_read(struct bch_cache_set *set, struct bch_member *m,
		   char **error)
{
	struct bch_sb_disk *sb = m->sb;
	u64 jfirst = le64_to_cpu(sb->journal_first);
	u32 jn = le32_to_cpu(sb->journal_buckets);
	struct bch_bucket_disk *d;
	u64 i;
	int r;

	*error = "cannot allocate the bucket array";
	m->buckets = vzalloc(array_size(m->nbuckets, sizeof(*m->buckets)));
	m->prio_buf = vmalloc(bch_prio_bytes(m));
	m->prio_chunk = kvmalloc(bch_prio_chunk_bytes(m), GFP_KERNEL);
	if (!m->buckets || !m->prio_buf || !m->prio_chunk)
		return -ENOMEM;

	r = bch_meta_read(set, m, "bucket array", sb->prio_offset,
			  &sb->prio_current, &sb->prio_csum,
			  &sb->prio_csum_other, m->prio_buf,
			  bch_prio_bytes(m));
	if (r) {
		*error = r == -EIO ? "cannot read the bucket array" :
			"bucket array checksum mismatch";
		return r;
	}

	d = m->prio_buf;
	for (i = 0; i < m->nbuckets; i++) {
		struct bch_bucket *b = &m->buckets[i];
		bool meta = i < m->first_bucket;

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

/* The open is done with the copies it read. */
void bch_prios_read_done(struct bch_cache_set *set)
{
	struct bch_member *m;

	bch_for_each_member(m, set) {
		vfree(m->prio_buf);
		m->prio_buf = NULL;
	}
}

/* Take member @m's bucket states (bch_prios_load_state()). */
static void bch_prios_load_member(struct bch_cache_set *set,
				  struct bch_member *m)
{
	struct bch_bucket_disk *d = m->prio_buf;
	u64 i;

	for (i = m->first_bucket; i < m->nbuckets; i++) {
		struct bch_bucket *b = &m->buckets[i];
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
}

/*
 * Take the bucket states the array holds (BCH_BUCKET_STATE), instead of
 * counting the index: valid only if the superblock says so and every
 * member's superblock had the last write (members_behind). Metadata and
 * journal buckets have none, nor a missing member (bch_member_missing()).
 * Before bch_prios_read_done() only.
 */
bool bch_prios_load_state(struct bch_cache_set *set)
{
	struct bch_member *m;

	if (!bch_bucket_state_valid(set->sb) || set->members_behind)
		return false;
	/* The whole index is read when one is missing: none of it there. */
	bch_for_each_member(m, set)
		if (!m->bdev && !m->removed)
			return false;
	bch_for_each_live_member(m, set)
		if (WARN_ON(!m->prio_buf))
			return false;
	bch_for_each_live_member(m, set)
		bch_prios_load_member(set, m);
	return true;
}

/*
 * Fill and write member @m's other copy a chunk at a time: its checksum
 * in @csum. The chunks are filled at different moments; each bucket's
 * entry is what was true when its chunk was filled, and a bucket whose
 * gen moves after that waits for the next write (alloc.c).
 */
static int bch_prios_write_member(struct bch_cache_set *set,
				  struct bch_member *m, u32 *csum)
{
	unsigned int next = !le32_to_cpu(m->sb->prio_current);
	size_t total = bch_prio_bytes(m), chunk = bch_prio_chunk_bytes(m);
	sector_t where = le64_to_cpu(m->sb->prio_offset[next]);
	u64 per = chunk / sizeof(struct bch_bucket_disk);
	size_t done;
	u32 crc = ~0U;
	int r = 0;

	for (done = 0; done < total && !r; done += chunk) {
		size_t len = min(chunk, total - done);
		u64 first = done / sizeof(struct bch_bucket_disk);

		memset(m->prio_chunk, 0, len);
		if (first < m->nbuckets)
			bch_alloc_persist_fill(set, m, m->prio_chunk, first,
					       min(per, m->nbuckets - first));
		crc = crc32c(crc, m->prio_chunk, len);
		r = bch_member_io(set, m, REQ_OP_WRITE,
				  where + (done >> SECTOR_SHIFT),
				  m->prio_chunk, len);
	}
	*csum = ~crc;
	return r;
}

/*
 * Write every member's other copy, then name them in the superblocks: a
 * crash before that leaves every member's previous copy in force.
 */
int bch_prios_write(struct bch_cache_set *set)
{
	struct {
		__le32	cur, csum, other;
	} old[BCH_MAX_MEMBERS];
	u32 csum[BCH_MAX_MEMBERS];
	struct bch_sb_disk *sb;
	struct bch_member *m;
	int r = 0;

	lockdep_assert_held(&set->lock);
	bch_for_each_live_member(m, set) {
		r = bch_prios_write_member(set, m, &csum[m->idx]);
		if (r && !m->idx)
			break;
		if (r)
			bch_member_fail(set, m);	/* its superblock is not written */
		r = 0;
	}
	if (!r) {
		bch_for_each_live_member(m, set) {
			sb = m->sb;
			old[m->idx].cur = sb->prio_current;
			old[m->idx].csum = sb->prio_csum;
			old[m->idx].other = sb->prio_csum_other;
			sb->prio_current = cpu_to_le32(!le32_to_cpu(sb->prio_current));
			sb->prio_csum_other = sb->prio_csum;
			sb->prio_csum = cpu_to_le32(csum[m->idx]);
		}
		r = bch_sb_write(set);
		if (r) {
			bch_for_each_live_member(m, set) {
				sb = m->sb;
				sb->prio_current = old[m->idx].cur;
				sb->prio_csum = old[m->idx].csum;
				sb->prio_csum_other = old[m->idx].other;
			}
		}
	}
	/* Buckets whose new gen is on disk may be written now. */
	bch_alloc_persist_done(set, !r);
	return r;
}
