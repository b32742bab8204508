// SPDX-License-Identifier: GPL-2.0
/* Reading and validating the dm-bcache superblock. */
#include <endian.h>
#include <string.h>

#include "lib.h"

bool bch_sb_has_magic(const struct bch_sb_disk *sb)
{
	return !memcmp(sb->magic, BCH_SB_MAGIC, BCH_MAGIC_LEN);
}

uint32_t bch_sb_csum(const struct bch_sb_disk *sb)
{
	return bch_csum((const uint8_t *)sb + sizeof(sb->csum),
			BCH_SB_SIZE - sizeof(sb->csum));
}

/* Raw read, no checks beyond the device being big enough. */
int bch_sb_read(struct bch_dev *dev, struct bch_sb_disk *sb)
{
	if (dev->size < BCH_SB_OFFSET + BCH_SB_SIZE)
		return bch_err("no dm-bcache superblock (device is only %llu bytes)",
			       (unsigned long long)dev->size);
	return bch_pread_all(dev, sb, BCH_SB_SIZE, BCH_SB_OFFSET);
}

struct region {
	const char	*name;
	uint64_t	start, len;
};

/* Each metadata copy must sit between the superblock and first_bucket. */
static int check_regions(const struct bch_sb_disk *sb, uint64_t meta_end)
{
	struct region r[4] = {
		{ "bucket array copy 0", le64toh(sb->prio_offset[0]),
		  le32toh(sb->prio_sectors) },
		{ "bucket array copy 1", le64toh(sb->prio_offset[1]),
		  le32toh(sb->prio_sectors) },
		{ "UUID table copy 0", le64toh(sb->uuid_offset[0]),
		  le32toh(sb->uuid_sectors) },
		{ "UUID table copy 1", le64toh(sb->uuid_offset[1]),
		  le32toh(sb->uuid_sectors) },
	};
	unsigned int i, j;

	for (i = 0; i < 4; i++) {
		if (r[i].start < BCH_META_START || r[i].start > meta_end ||
		    r[i].len > meta_end - r[i].start)
			return bch_err("%s at sector %llu is outside the metadata area [%u, %llu)",
				       r[i].name,
				       (unsigned long long)r[i].start,
				       BCH_META_START,
				       (unsigned long long)meta_end);
		for (j = 0; j < i; j++)
			if (r[i].start < r[j].start + r[j].len &&
			    r[j].start < r[i].start + r[i].len)
				return bch_err("%s overlaps %s", r[i].name,
					       r[j].name);
	}
	return 0;
}

/*
 * The ring within [first_bucket, nbuckets), leaving enough data buckets;
 * replay starting on a block boundary inside it.
 */
static int check_journal(const struct bch_sb_disk *sb)
{
	uint64_t first = le64toh(sb->journal_first);
	uint32_t n = le32toh(sb->journal_buckets);
	uint64_t nbuckets = le64toh(sb->nbuckets);
	uint64_t first_bucket = le64toh(sb->first_bucket);
	uint64_t pos = le64toh(sb->journal_pos);
	uint64_t ring = (uint64_t)n * le32toh(sb->bucket_size);

	if (n < BCH_MIN_JOURNAL_BUCKETS || n > BCH_MAX_JOURNAL_BUCKETS)
		return bch_err("journal of %u buckets (must be %u to %u)", n,
			       BCH_MIN_JOURNAL_BUCKETS, BCH_MAX_JOURNAL_BUCKETS);
	if (first < first_bucket || first > nbuckets || n > nbuckets - first)
		return bch_err("journal buckets %llu to %llu are outside the buckets [%llu, %llu)",
			       (unsigned long long)first,
			       (unsigned long long)(first + n - 1),
			       (unsigned long long)first_bucket,
			       (unsigned long long)nbuckets);
	if (nbuckets - first_bucket - n < BCH_MIN_DATA_BUCKETS)
		return bch_err("only %llu data buckets besides the journal (minimum %u)",
			       (unsigned long long)(nbuckets - first_bucket - n),
			       BCH_MIN_DATA_BUCKETS);
	if (pos >= ring || pos % le32toh(sb->block_size))
		return bch_err("journal position %llu is not a block of the %llu sector ring",
			       (unsigned long long)pos, (unsigned long long)ring);
	if (!le64toh(sb->journal_seq))
		return bch_err("journal seq 0 (seqs start at 1)");
	return 0;
}

/*
 * The root of a set of several may be on another member: only what this
 * superblock knows of it (an ACTIVE member, bucket aligned, within its
 * bucket count); its member's superblock has the rest of its layout.
 */
static int check_root_other(const struct bch_sb_disk *sb, unsigned int dev, uint64_t ptr)
{
	uint32_t bucket_size = le32toh(sb->bucket_size);
	const struct bch_member_disk *m;

	if (dev >= BCH_MAX_MEMBERS || le32toh(sb->version) == 2)
		return bch_err("btree root is on member %u, which the set does not have", dev);
	m = &sb->members[dev];
	if (le32toh(m->state) != BCH_MEMBER_ACTIVE)
		return bch_err("btree root is on member %u, which is not an active member", dev);
	if (ptr % bucket_size)
		return bch_err("btree root at sector %llu of member %u is not bucket aligned",
			       (unsigned long long)ptr, dev);
	if (ptr / bucket_size >= le64toh(m->nbuckets))
		return bch_err("btree root bucket %llu of member %u is past its last bucket",
			       (unsigned long long)(ptr / bucket_size), dev);
	return 0;
}

/*
 * The root (the index checkpoint, whatever BCH_SB_CLEAN says) must point
 * at the start of a data bucket.
 */
static int check_root(const struct bch_sb_disk *sb)
{
	uint32_t bucket_size = le32toh(sb->bucket_size);
	struct bch_bkey k;
	uint64_t ptr, b;

	if (!bch_sb_root(sb, &k))
		return bch_err("btree root is not a key of this format");
	if (!k.size)
		return 0;
	if (k.nptrs != 1)
		return bch_err("btree root has %u pointers, on member %u", k.nptrs,
			       bch_ptr_dev(k.ptr[0]));
	ptr = bch_ptr_sector(k.ptr[0]);
	if (bch_ptr_dev(k.ptr[0]) != le32toh(sb->dev_idx))
		return check_root_other(sb, bch_ptr_dev(k.ptr[0]), ptr);
	b = ptr / bucket_size;
	if (ptr % bucket_size)
		return bch_err("btree root at sector %llu is not bucket aligned",
			       (unsigned long long)ptr);
	if (b < le64toh(sb->first_bucket) || b >= le64toh(sb->nbuckets) ||
	    bch_journal_bucket(sb, b))
		return bch_err("btree root bucket %llu is not a data bucket",
			       (unsigned long long)b);
	return 0;
}

int bch_sb_validate(const struct bch_sb_disk *sb, uint64_t dev_sectors)
{
	uint32_t block_size = le32toh(sb->block_size);
	uint32_t bucket_size = le32toh(sb->bucket_size);
	uint64_t nbuckets = le64toh(sb->nbuckets);
	uint64_t first_bucket = le64toh(sb->first_bucket);
	uint64_t sb_sectors = le64toh(sb->device_sectors);
	const char *why;
	uint32_t csum;

	if (!bch_sb_has_magic(sb))
		return bch_err("no dm-bcache superblock (bad magic)");
	csum = bch_sb_csum(sb);
	if (csum != le32toh(sb->csum))
		return bch_err("superblock checksum mismatch (stored 0x%08x, computed 0x%08x)",
			       le32toh(sb->csum), csum);
	if (le32toh(sb->version) < BCH_SB_VERSION_MIN ||
	    le32toh(sb->version) > BCH_SB_VERSION)
		return bch_err("unsupported version %u (this tool knows %u to %u)",
			       le32toh(sb->version), BCH_SB_VERSION_MIN, BCH_SB_VERSION);

	if (!bch_is_power_of_2(block_size) ||
	    block_size < BCH_MIN_BLOCK_SECTORS ||
	    block_size > BCH_MAX_BLOCK_SECTORS)
		return bch_err("invalid block size %u sectors", block_size);
	if (!bch_is_power_of_2(bucket_size) || bucket_size < block_size ||
	    bucket_size > BCH_MAX_BUCKET_SECTORS)
		return bch_err("invalid bucket size %u sectors (block size %u)",
			       bucket_size, block_size);
	if (!nbuckets || nbuckets > BCH_MAX_BUCKETS)
		return bch_err("invalid bucket count %llu",
			       (unsigned long long)nbuckets);
	if (first_bucket < bch_first_bucket(nbuckets, bucket_size))
		return bch_err("first bucket %llu overlaps the metadata (needs >= %llu)",
			       (unsigned long long)first_bucket,
			       (unsigned long long)bch_first_bucket(nbuckets,
								    bucket_size));
	if (first_bucket >= nbuckets ||
	    nbuckets - first_bucket < BCH_MIN_DATA_BUCKETS)
		return bch_err("only %lld data buckets (minimum %u)",
			       (long long)(nbuckets - first_bucket),
			       BCH_MIN_DATA_BUCKETS);
	if (sb_sectors < nbuckets * bucket_size)
		return bch_err("%llu buckets do not fit in %llu device sectors",
			       (unsigned long long)nbuckets,
			       (unsigned long long)sb_sectors);
	if (dev_sectors < sb_sectors)
		return bch_err("device smaller than the superblock says (%llu sectors, superblock says %llu)",
			       (unsigned long long)dev_sectors,
			       (unsigned long long)sb_sectors);

	if (le32toh(sb->prio_sectors) != bch_prio_sectors(nbuckets))
		return bch_err("bucket array size %u sectors, expected %llu",
			       le32toh(sb->prio_sectors),
			       (unsigned long long)bch_prio_sectors(nbuckets));
	if (le32toh(sb->uuid_sectors) != bch_uuid_sectors())
		return bch_err("UUID table size %u sectors, expected %llu",
			       le32toh(sb->uuid_sectors),
			       (unsigned long long)bch_uuid_sectors());
	if (check_regions(sb, first_bucket * bucket_size))
		return -1;
	if (le32toh(sb->prio_current) > 1)
		return bch_err("invalid current bucket array copy %u",
			       le32toh(sb->prio_current));
	if (le32toh(sb->uuid_current) > 1)
		return bch_err("invalid current UUID table copy %u",
			       le32toh(sb->uuid_current));
	if (check_journal(sb))
		return -1;
	why = bch_sb_members_invalid(sb);
	if (why)
		return bch_err("%s", why);
	return check_root(sb);
}

/* Read and fully validate; the usual entry point. */
int bch_sb_load(struct bch_dev *dev, struct bch_sb_disk *sb)
{
	if (bch_sb_read(dev, sb))
		return -1;
	return bch_sb_validate(sb, dev->size >> BCH_SECTOR_SHIFT);
}

int bch_sb_one_member(const struct bch_sb_disk *sb, const char *path,
		      const char *doing)
{
	unsigned int n = bch_sb_members(sb, BCH_MEMBER_ACTIVE) +
			 bch_sb_members(sb, BCH_MEMBER_FAILED);

	if (le32toh(sb->version) == 2 || n <= 1)
		return 0;
	return bch_err("%s is member %u of a set of %u members: %s a set of several devices is not supported yet",
		       path, le32toh(sb->dev_idx), n, doing);
}

/* Checksum of a metadata region, read in chunks to bound memory. */
int bch_region_csum(struct bch_dev *dev, uint64_t sector, uint64_t sectors,
		    uint32_t *csum)
{
	static uint8_t buf[1 << 20];
	uint64_t off = sector << BCH_SECTOR_SHIFT;
	uint64_t left = sectors << BCH_SECTOR_SHIFT;
	uint32_t crc = ~0U;
	size_t n;

	while (left) {
		n = left < sizeof(buf) ? left : sizeof(buf);
		if (bch_pread_all(dev, buf, n, off))
			return -1;
		crc = crc32c(crc, buf, n);
		off += n;
		left -= n;
	}
	*csum = ~crc;
	return 0;
}

int bch_uuids_write(struct bch_dev *dev, struct bch_sb_disk *sb,
		    const struct bch_uuid_disk *uuids, unsigned int from)
{
	size_t len = (size_t)le32toh(sb->uuid_sectors) << BCH_SECTOR_SHIFT;
	__le32 from_csum = from == le32toh(sb->uuid_current) ? sb->uuid_csum :
			   sb->uuid_csum_other;

	/* Never over copy @from: it stays whole until the superblock names the new one. */
	if (bch_pwrite_all(dev, uuids, len,
			   le64toh(sb->uuid_offset[!from]) << BCH_SECTOR_SHIFT))
		return -1;
	sb->uuid_current = htole32(!from);
	sb->uuid_csum_other = from_csum;
	sb->uuid_csum = htole32(bch_csum(uuids, len));
	return 0;
}

int bch_sb_write(struct bch_dev *dev, struct bch_sb_disk *sb)
{
	/* What the superblock will name must be on the media first. */
	if (bch_dev_sync(dev))
		return -1;
	sb->seq = htole64(le64toh(sb->seq) + 1);
	sb->csum = htole32(bch_sb_csum(sb));
	if (bch_pwrite_all(dev, sb, sizeof(*sb), BCH_SB_OFFSET))
		return -1;
	return bch_dev_sync(dev);
}
