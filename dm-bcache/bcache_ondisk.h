/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache on-disk format, shared by the kernel target and bcache-tools.
 *
 * Everything is little-endian with fixed-width fields; every structure has
 * a static size assertion. Units are 512-byte sectors unless a name says
 * otherwise.
 *
 * Layout of a cache device (sector offsets):
 *
 *   0                reserved (partition tables, boot loaders)
 *   8                superblock, 4 KiB, crc32c-protected
 *   16               bucket array copy 0 (prio + gen per bucket)
 *   16 + P           bucket array copy 1
 *   16 + 2P          UUID table copy 0 (256 slots of 128 bytes)
 *   16 + 2P + U      UUID table copy 1
 *   first_bucket * bucket_size ... journal, data and btree buckets
 *
 * The journal is a ring of journal_buckets buckets from journal_first,
 * flagged BCH_BUCKET_JOURNAL in the bucket array (see "The journal"
 * below). Version 2 added it; version 1 caches are refused.
 *
 * Metadata that is rewritten in place (bucket array, UUID table) has two
 * copies. A writer fills the copy that is not current, flushes, then
 * writes the superblock with FUA naming the new copy and its checksum, so
 * a torn write never leaves the cache without a valid copy. (The
 * superblock itself is one 4 KiB write: a torn one fails its checksum and
 * the cache is refused, never misread.)
 *
 * Conventions:
 * - every checksum is standard CRC-32C: ~crc32c(~0, data, len);
 * - prio_csum and uuid_csum cover the whole copy, prio_sectors or
 *   uuid_sectors long, zero tail included; the *_csum_other fields are
 *   those of the other copy, so a bad current copy can fall back to it;
 * - first_bucket is exactly bch_first_bucket(nbuckets, bucket_size);
 * - a btree_root with size 0 means no index has been written; the root
 *   is the index checkpoint, valid whatever BCH_SB_CLEAN says;
 * - the journal ring lies within [first_bucket, nbuckets), holds
 *   BCH_MIN_JOURNAL_BUCKETS to BCH_MAX_JOURNAL_BUCKETS buckets and leaves
 *   at least BCH_MIN_DATA_BUCKETS others; make-bcache puts it at
 *   first_bucket and starts it empty: journal_seq 1, journal_pos 0;
 * - reserved bytes are written as zero.
 */
#ifndef _BCACHE_ONDISK_H
#define _BCACHE_ONDISK_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/stddef.h>
#else
#include <assert.h>
#include <stddef.h>
#define __packed	__attribute__((packed))
#ifndef BIT
#define BIT(n)		(1U << (n))
#define BIT_ULL(n)	(1ULL << (n))
#endif
#endif

#define BCH_SECTOR_SHIFT	9
#define BCH_SECTOR_SIZE		BIT(BCH_SECTOR_SHIFT)

#define BCH_SB_SECTOR		8
#define BCH_SB_SIZE		4096U
#define BCH_META_START		16	/* first sector after the superblock */

#define BCH_SB_VERSION		2

/* 15 characters and the NUL: all 16 bytes of the magic field */
#define BCH_SB_MAGIC		"dm-bcache-cache"
#define BCH_MAGIC_LEN		16

#define BCH_MIN_BLOCK_SECTORS	8		/* 4 KiB */
#define BCH_MAX_BLOCK_SECTORS	128		/* 64 KiB */
#define BCH_DEFAULT_BUCKET_SECTORS 1024		/* 512 KiB */
#define BCH_MAX_BUCKET_SECTORS	BIT(16)	/* 32 MiB */
#define BCH_MIN_DATA_BUCKETS	16		/* below this nothing works */
#define BCH_MIN_JOURNAL_BUCKETS	2
#define BCH_MAX_JOURNAL_BUCKETS	256
#define BCH_MAX_BUCKETS		BIT_ULL(32)	/* inclusive */

#define BCH_UUID_SLOTS		256

/* Superblock flags */
#define BCH_SB_CLEAN		BIT_ULL(0)	/* shut down cleanly */

struct bch_bkey_disk {
	__le32	inode;		/* (slot epoch << 8) | slot index */
	__le32	size;		/* extent length in sectors */
	__le64	offset;		/* END of the extent in origin sectors */
	__le64	ptr;		/* first sector of the data on the cache */
	__u8	gen;		/* generation of the bucket holding ptr */
	__u8	flags;		/* BCH_KEY_* */
	__le16	pad;
	__le32	csum;		/* data checksum, if BCH_KEY_CSUM */
} __packed;

#define BCH_KEY_DIRTY		BIT(0)
#define BCH_KEY_CSUM		BIT(1)
#define BCH_KEY_HOLE		BIT(2)	/* no data: hides older keys */

/* Key inodes: the slot index in the low bits, the slot's epoch above. */
#define BCH_INODE_SLOT_BITS	8
#define BCH_INODE_EPOCH_MAX	((1U << (32 - BCH_INODE_SLOT_BITS)) - 1)

struct bch_sb_disk {
	__le32	csum;		/* crc32c of bytes [4, BCH_SB_SIZE) */
	__le32	version;
	__u8	magic[BCH_MAGIC_LEN];
	__u8	uuid[16];	/* this cache device */
	__u8	set_uuid[16];	/* the cache set it belongs to */
	__u8	label[32];

	__le64	flags;		/* BCH_SB_* */
	__le64	seq;		/* incremented by every superblock write */
	__le64	created;	/* seconds since the epoch */
	__le64	last_attach;

	__le32	block_size;	/* sectors */
	__le32	bucket_size;	/* sectors */
	__le64	nbuckets;	/* buckets on the device, metadata included */
	__le64	first_bucket;	/* first bucket usable for data or btree */
	__le64	device_sectors;	/* device size when formatted */

	__le64	prio_offset[2];	/* sector of each bucket array copy */
	__le32	prio_sectors;	/* size of one copy */
	__le32	prio_current;	/* 0 or 1 */
	__le32	prio_csum;	/* crc32c of the current copy */
	__le32	uuid_sectors;
	__le64	uuid_offset[2];
	__le32	uuid_current;
	__le32	uuid_csum;

	/* the index checkpoint: the journal is replayed over it */
	struct bch_bkey_disk btree_root;
	__le32	btree_level;
	__le32	btree_pad;

	/* Checksums of the copies that are not current (the previous ones). */
	__le32	prio_csum_other;
	__le32	uuid_csum_other;

	/* The journal ring, and where replay over the checkpoint starts. */
	__le64	journal_first;	/* first bucket of the ring */
	__le32	journal_buckets;
	__le32	journal_pad;
	__le64	journal_seq;	/* seq of the first entry to replay */
	__le64	journal_pos;	/* its sector, counted from the ring start */

	/* If it equals seq, the bucket states are valid (BCH_BUCKET_STATE). */
	__le64	state_seq;

	__u8	reserved[BCH_SB_SIZE - 296];
} __packed;

/* One entry per bucket, on disk next to the superblock. */
struct bch_bucket_disk {
	__le16	prio;
	__u8	gen;
	__u8	flags;		/* BCH_BUCKET_* */
} __packed;

#define BCH_BUCKET_META		BIT(0)	/* holds sb/array/uuids */
#define BCH_BUCKET_JOURNAL	BIT(1)	/* part of the journal ring */
/*
 * Bucket states, so that an open need not read the whole index: they are
 * valid only while the superblock's state_seq equals its own seq (0 never
 * does). A writer that keeps them valid sets it so at every superblock
 * write; any other write (an older version's, a repair's) leaves it
 * behind, or sets it to 0.
 * While valid, every bucket holding a node of the checkpoint is BTREE;
 * every bucket holding the data of a key of the checkpoint that the
 * journal does not overwrite and that matches the bucket's gen is DATA,
 * and DIRTY if such a key is dirty; no key of the checkpoint or the
 * journal pointing into a data bucket has a gen more than 31 below the
 * bucket's (63 if GC_OLD); and each slot's dirty field is at least the
 * dirty sectors of its epoch among those keys. Dirty data already
 * written back to the origin may be left out of DIRTY and of the slot's
 * count. The journal's own keys are counted at open as they are
 * replayed. More may be marked than holds.
 */
#define BCH_BUCKET_BTREE	BIT(2)
#define BCH_BUCKET_DATA		BIT(3)
#define BCH_BUCKET_DIRTY	BIT(4)
#define BCH_BUCKET_GC_OLD	BIT(5)
#define BCH_BUCKET_STATE	(BCH_BUCKET_BTREE | BCH_BUCKET_DATA | \
				 BCH_BUCKET_DIRTY | BCH_BUCKET_GC_OLD)

/* One slot per origin. */
struct bch_uuid_disk {
	__u8	uuid[16];	/* the origin's identity (table origin_uuid) */
	__u8	label[32];
	__le64	sectors;	/* origin size when last attached */
	__le64	first_attach;
	__le64	last_attach;
	__le32	epoch;		/* bumped to invalidate all the slot's data */
	__le32	flags;		/* BCH_UUID_* */
	__le32	fingerprint;	/* crc32c of origin sectors [0, 8) at detach */
	__le64	dirty;		/* dirty sectors (see BCH_BUCKET_STATE) */
	__u8	pad[36];
} __packed;

#define BCH_UUID_VALID		BIT(0)	/* slot in use */
#define BCH_UUID_EPHEMERAL	BIT(1)	/* no origin_uuid: never reused */
#define BCH_UUID_ATTACHED	BIT(2)	/* a table holds it right now */
#define BCH_UUID_FINGERPRINT	BIT(3)	/* fingerprint is valid */
/* The cache writes the origin's first 4 KiB: no fingerprint check. */
#define BCH_UUID_FP_WRITING	BIT(4)

#define BCH_UUID_TABLE_BYTES	(BCH_UUID_SLOTS * sizeof(struct bch_uuid_disk))

/*
 * Btree nodes fill one bucket. A node is a series of sets written in
 * order, each starting on a block boundary; a set is this header and
 * nkeys sorted keys. All sets of one node share the node's random seq,
 * so sets left over from an earlier use of the bucket are recognised.
 */
struct bch_bset_disk {
	__le32	csum;		/* crc32c of the set after this field */
	__le32	magic;		/* BCH_BSET_MAGIC */
	__le64	seq;		/* the node's seq */
	__le32	nkeys;
	__le16	level;		/* 0 = leaf */
	__le16	set;		/* index of the set within the node */
	__le64	pad;
	struct bch_bkey_disk keys[];
} __packed;

#define BCH_BSET_MAGIC		0x62736574	/* "bset" */

/*
 * The journal: every key inserted into the index since the checkpoint,
 * in insert order, as entries appended to the ring. An entry starts on a
 * block boundary, takes @sectors (a block multiple, at most
 * BCH_JSET_MAX_SECTORS) and never crosses a bucket boundary: an entry
 * that does not fit in the rest of a bucket goes to the start of the
 * next one (the ring wraps). Entries are written one at a time with
 * PREFLUSH|FUA, so data a key points to is durable before the key.
 *
 * Replay starts at ring sector journal_pos expecting seq journal_seq
 * (never 0). An entry is good if magic, set_uuid, seq (the one
 * expected), sectors and csum are; after a good entry the next is
 * expected right behind it, else, if that place does not start a bucket,
 * at the start of the next bucket, unless that is a whole ring from
 * journal_pos; the journal ends at the first place where neither holds a
 * good entry. Replaying inserts each entry's keys into the index in
 * order, as if they were inserted anew. Every key must pass
 * bch_leaf_key_invalid(), as every leaf key of an index node must:
 * anything else means the index cannot be trusted.
 */
struct bch_jset_disk {
	__le32	csum;		/* crc32c of bytes [4, 32 + 32 * nkeys) */
	__le32	magic;		/* BCH_JSET_MAGIC */
	__le64	seq;
	__le32	nkeys;
	__le32	sectors;	/* ring space the entry takes */
	__u8	set_uuid[8];	/* first bytes of the sb's set_uuid */
	struct bch_bkey_disk keys[];
} __packed;

#define BCH_JSET_MAGIC		0x6a736574	/* "jset" */
#define BCH_JSET_MAX_SECTORS	128		/* 64 KiB */

/* Are the bucket states and slot dirty counts valid (BCH_BUCKET_STATE)? */
static inline int bch_bucket_state_valid(const struct bch_sb_disk *sb)
{
	return sb->state_seq && sb->state_seq == sb->seq;
}

static_assert(sizeof(struct bch_bkey_disk) == 32, "bkey size");
static_assert(sizeof(struct bch_sb_disk) == BCH_SB_SIZE, "sb size");
static_assert(sizeof(struct bch_bucket_disk) == 4, "bucket size");
static_assert(sizeof(struct bch_uuid_disk) == 128, "uuid slot size");
static_assert(sizeof(struct bch_bset_disk) == 32, "bset header size");
static_assert(sizeof(struct bch_jset_disk) == 32, "jset header size");

static inline __u64 bch_round_up(__u64 n, __u64 d)
{
	return (n + d - 1) / d * d;
}

/* Size of one copy of the bucket array, rounded to 4 KiB. */
static inline __u64 bch_prio_sectors(__u64 nbuckets)
{
	return bch_round_up(nbuckets * sizeof(struct bch_bucket_disk),
			    4096) >> BCH_SECTOR_SHIFT;
}

static inline __u64 bch_uuid_sectors(void)
{
	return BCH_UUID_TABLE_BYTES >> BCH_SECTOR_SHIFT;
}

/* End of the fixed metadata, in sectors. */
static inline __u64 bch_meta_end(__u64 nbuckets)
{
	return BCH_META_START + 2 * bch_prio_sectors(nbuckets) +
		2 * bch_uuid_sectors();
}

static inline __u64 bch_first_bucket(__u64 nbuckets, __u32 bucket_size)
{
	return (bch_meta_end(nbuckets) + bucket_size - 1) / bucket_size;
}

/* Default journal size: 1/128 of the buckets, within the limits. */
static inline __u32 bch_journal_default_buckets(__u64 nbuckets)
{
	__u64 n = nbuckets >> 7;

	if (n < 4)
		n = 4;
	if (n > BCH_MAX_JOURNAL_BUCKETS)
		n = BCH_MAX_JOURNAL_BUCKETS;
	return (__u32)n;
}

/* Keys that fit in an entry of @sectors. */
static inline __u32 bch_jset_max_keys(__u32 sectors)
{
	return ((sectors << BCH_SECTOR_SHIFT) - sizeof(struct bch_jset_disk)) /
		sizeof(struct bch_bkey_disk);
}

/*
 * The rule for a leaf key, of an index node or of a journal entry: why the
 * index that holds it cannot be trusted, or NULL. No flag but
 * BCH_KEY_HOLE and BCH_KEY_DIRTY (nothing writes BCH_KEY_CSUM yet); a
 * size, and no start before origin sector 0; a data key lies inside one
 * bucket that is neither metadata nor journal. The key's fields in CPU
 * order; the rest from a superblock that validated.
 */
static inline const char *bch_leaf_key_invalid(__u32 size, __u64 end, __u64 ptr,
					       __u8 flags, __u32 bucket_size,
					       __u64 first_bucket, __u64 nbuckets,
					       __u64 journal_first,
					       __u32 journal_buckets)
{
	__u64 bucket = ptr / bucket_size;

	if (!size)
		return "size 0";
	if (size > end)
		return "starts before origin sector 0";
	if (flags & ~(BCH_KEY_HOLE | BCH_KEY_DIRTY))
		return "has flags other than hole and dirty";
	if (flags & BCH_KEY_HOLE)
		return NULL;		/* points nowhere */
	if (bucket < first_bucket)
		return "points into the metadata";
	if (bucket >= nbuckets)
		return "points past the last bucket";
	if (bucket >= journal_first && bucket - journal_first < journal_buckets)
		return "points into a journal bucket";
	if (ptr % bucket_size + size > bucket_size)
		return "crosses the end of its bucket";
	return NULL;
}

#endif /* _BCACHE_ONDISK_H */
