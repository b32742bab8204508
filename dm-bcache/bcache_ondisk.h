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
 * - reserved bytes are written as zero;
 * - version 3: a set of one or more members (cache devices), each laid
 *   out as above with its own superblock; bch_sb_members_invalid() is
 *   the rule for the member table every superblock carries.
 */
#ifndef _BCACHE_ONDISK_H
#define _BCACHE_ONDISK_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <asm/byteorder.h>
#define bch_le16(x)	le16_to_cpu(x)
#define bch_le32(x)	le32_to_cpu(x)
#define bch_le64(x)	le64_to_cpu(x)
#define bch_cpu16(x)	cpu_to_le16(x)
#define bch_cpu32(x)	cpu_to_le32(x)
#define bch_cpu64(x)	cpu_to_le64(x)
#else
#include <assert.h>
#include <endian.h>
#include <stddef.h>
#include <string.h>
#define __packed	__attribute__((packed))
#ifndef BIT
#define BIT(n)		(1U << (n))
#define BIT_ULL(n)	(1ULL << (n))
#endif
#define bch_le16(x)	le16toh(x)
#define bch_le32(x)	le32toh(x)
#define bch_le64(x)	le64toh(x)
#define bch_cpu16(x)	htole16(x)
#define bch_cpu32(x)	htole32(x)
#define bch_cpu64(x)	htole64(x)
#endif

#define BCH_SECTOR_SHIFT	9
#define BCH_SECTOR_SIZE		BIT(BCH_SECTOR_SHIFT)

#define BCH_SB_SECTOR		8
#define BCH_SB_SIZE		4096U
#define BCH_META_START		16	/* first sector after the superblock */

/*
 * Version 3 keys have two pointers, each naming a member of the cache set,
 * and a checksummed range; version 2 keys one pointer and no checksum. A
 * cache keeps the key layout of its version: both are read and written.
 */
#define BCH_SB_VERSION		3
#define BCH_SB_VERSION_MIN	2

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

/* A version 2 key: 32 bytes. */
struct bch_bkey_disk {
	__le32	inode;		/* (slot epoch << 8) | slot index */
	__le32	size;		/* extent length in sectors */
	__le64	offset;		/* END of the extent in origin sectors */
	__le64	ptr;		/* first sector of the data on the cache */
	__u8	gen;		/* generation of the bucket holding ptr */
	__u8	flags;		/* BCH_KEY_* */
	__le16	pad;
	__le32	csum;		/* written as 0 */
} __packed;

#define BCH_KEY_DIRTY		BIT(0)
#define BCH_KEY_CSUM		BIT(1)	/* version 3: csum is valid */
#define BCH_KEY_HOLE		BIT(2)	/* no data: hides older keys */

/*
 * A version 3 key: 48 bytes. Each pointer is bch_ptr(member, gen,
 * sector). A hole has no pointer, a data or node key one or two, on
 * distinct members. The checksum covers csum_sectors of data starting
 * csum_front sectors before the key's start (the key may be a part of
 * what was checksummed, since newer keys cut older ones).
 */
#define BCH_KEY_PTRS		2
#define BCH_CSUM_MAX_SECTORS	128	/* 64 KiB: see format-v3.rst */

struct bch_bkey3_disk {
	__le32	inode;
	__le32	size;
	__le64	offset;
	__le64	ptr[BCH_KEY_PTRS];
	__le32	csum;		/* crc32c of the range, if BCH_KEY_CSUM */
	__le16	csum_sectors;
	__le16	csum_front;
	__u8	flags;
	__u8	nptrs;
	__u8	pad[6];
} __packed;

#define BCH_KEY_BYTES_V2	32
#define BCH_KEY_BYTES_V3	48

/* A pointer: bits 0-47 the sector on the member, 48-55 gen, 56-63 member. */
#define BCH_PTR_SECTOR_BITS	48
#define BCH_PTR_SECTOR_MASK	((1ULL << BCH_PTR_SECTOR_BITS) - 1)
#define BCH_PTR_GEN_SHIFT	48
#define BCH_PTR_DEV_SHIFT	56
#define BCH_MAX_MEMBERS		8

static inline __u64 bch_ptr(__u8 dev, __u8 gen, __u64 sector)
{
	return (__u64)dev << BCH_PTR_DEV_SHIFT | (__u64)gen << BCH_PTR_GEN_SHIFT |
		(sector & BCH_PTR_SECTOR_MASK);
}

static inline __u64 bch_ptr_sector(__u64 p)
{
	return p & BCH_PTR_SECTOR_MASK;
}

static inline __u8 bch_ptr_gen(__u64 p)
{
	return (__u8)(p >> BCH_PTR_GEN_SHIFT);
}

static inline __u8 bch_ptr_dev(__u64 p)
{
	return (__u8)(p >> BCH_PTR_DEV_SHIFT);
}

/* Where a pointer points, whatever the gen: member and sector. */
static inline __u64 bch_ptr_loc(__u64 p)
{
	return p & ~(0xffULL << BCH_PTR_GEN_SHIFT);
}

/* Key inodes: the slot index in the low bits, the slot's epoch above. */
#define BCH_INODE_SLOT_BITS	8
#define BCH_INODE_EPOCH_MAX	((1U << (32 - BCH_INODE_SLOT_BITS)) - 1)

/*
 * A member of a version 3 cache set, as every member's superblock names
 * it. The newest superblock among the members decides which are ACTIVE.
 */
struct bch_member_disk {
	__u8	uuid[16];	/* the member's superblock uuid */
	__le64	nbuckets;
	__le32	bucket_size;
	__le32	state;		/* BCH_MEMBER_* */
} __packed;

#define BCH_MEMBER_NONE		0	/* no member has this index */
#define BCH_MEMBER_ACTIVE	1	/* in use */
#define BCH_MEMBER_FAILED	2	/* lost: its pointers are ignored */
#define BCH_MEMBER_REMOVED	3	/* failed, no pointer left: reusable */
#define BCH_MEMBER_STATES	4

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

	/* Version 3: the checkpoint's root (btree_root is zero). */
	struct bch_bkey3_disk btree_root3;

	/*
	 * Version 3: the set's members. Every member's superblock carries
	 * the whole table; the fields above that describe a device (uuid,
	 * sizes, bucket arrays, journal ring) are this member's (dev_idx).
	 * Version 2: all zero.
	 */
	__le32	dev_idx;
	__le32	members_pad;
	struct bch_member_disk members[BCH_MAX_MEMBERS];

	__u8	reserved[BCH_SB_SIZE - 608];
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
	__le16	key_bytes;	/* 0 in version 2, else BCH_KEY_BYTES_V3 */
	__u8	pad[6];
	/* nkeys keys of the cache's layout */
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
	__le32	csum;		/* crc32c of bytes [4, 32 + key bytes * nkeys) */
	__le32	magic;		/* BCH_JSET_MAGIC */
	__le64	seq;
	__le32	nkeys;
	__le32	sectors;	/* ring space the entry takes */
	__u8	set_uuid[8];	/* first bytes of the sb's set_uuid */
	/* nkeys keys of the cache's layout */
} __packed;

#define BCH_JSET_MAGIC		0x6a736574	/* "jset": version 2 */
#define BCH_JSET_MAGIC_V3	0x6a737433	/* "jst3" */
#define BCH_JSET_MAX_SECTORS	128		/* 64 KiB */

/* Are the bucket states and slot dirty counts valid (BCH_BUCKET_STATE)? */
static inline int bch_bucket_state_valid(const struct bch_sb_disk *sb)
{
	return sb->state_seq && sb->state_seq == sb->seq;
}

static_assert(sizeof(struct bch_bkey_disk) == BCH_KEY_BYTES_V2, "bkey size");
static_assert(sizeof(struct bch_bkey3_disk) == BCH_KEY_BYTES_V3, "bkey3 size");
static_assert(sizeof(struct bch_sb_disk) == BCH_SB_SIZE, "sb size");
static_assert(sizeof(struct bch_member_disk) == 32, "member size");
static_assert(offsetof(struct bch_sb_disk, members) == 352, "member table");
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

/* Bytes of a journal entry's header and @nkeys keys of @key_bytes. */
static inline __u32 bch_jset_bytes(__u32 nkeys, __u32 key_bytes)
{
	return sizeof(struct bch_jset_disk) + nkeys * key_bytes;
}

/* Keys of @key_bytes that one set filling a node of @bucket_bytes holds. */
static inline __u32 bch_node_keys(__u64 bucket_bytes, __u32 key_bytes)
{
	return (__u32)((bucket_bytes - sizeof(struct bch_bset_disk)) / key_bytes);
}

/* Keys that fit in an entry of @sectors. */
static inline __u32 bch_jset_max_keys(__u32 sectors, __u32 key_bytes)
{
	return ((sectors << BCH_SECTOR_SHIFT) - sizeof(struct bch_jset_disk)) /
		key_bytes;
}

/*
 * A key in CPU byte order, whatever its layout on disk: the index works on
 * these. A version 2 key reads as one pointer on member 0 and no checksum.
 */
struct bch_bkey {
	__u32	inode;
	__u32	size;		/* sectors; 0 = deleted */
	__u64	end;		/* END of the extent in origin sectors */
	__u64	ptr[BCH_KEY_PTRS];	/* bch_ptr(); nptrs of them */
	__u32	csum;
	__u16	csum_sectors;
	__u16	csum_front;
	__u8	flags;		/* BCH_KEY_* */
	__u8	nptrs;
	__u8	pad[6];
};

static inline __u32 bch_key_bytes(__u32 version)
{
	return version == 2 ? BCH_KEY_BYTES_V2 : BCH_KEY_BYTES_V3;
}

/*
 * Read a key of @key_bytes' layout. False if it cannot be one of the
 * index's keys: a version 2 pointer past 2^48 sectors, more than
 * BCH_KEY_PTRS pointers (what version 2 allows beyond that, the rules
 * below check).
 */
static inline int bch_bkey_unpack(struct bch_bkey *k, const void *disk,
				  __u32 key_bytes)
{
	const struct bch_bkey3_disk *d3;
	unsigned int i;

	k->ptr[0] = 0;
	k->ptr[1] = 0;
	for (i = 0; i < sizeof(k->pad); i++)
		k->pad[i] = 0;
	if (key_bytes == BCH_KEY_BYTES_V2) {
		const struct bch_bkey_disk *d = disk;
		__u64 ptr = bch_le64(d->ptr);

		k->inode = bch_le32(d->inode);
		k->size = bch_le32(d->size);
		k->end = bch_le64(d->offset);
		k->flags = d->flags;
		k->csum = 0;
		k->csum_sectors = 0;
		k->csum_front = 0;
		k->nptrs = 0;
		if (d->flags & BCH_KEY_HOLE)
			return 1;	/* a version 2 hole's ptr means nothing */
		if (ptr > BCH_PTR_SECTOR_MASK)
			return 0;
		k->ptr[0] = bch_ptr(0, d->gen, ptr);
		k->nptrs = 1;
		return 1;
	}
	d3 = disk;
	k->inode = bch_le32(d3->inode);
	k->size = bch_le32(d3->size);
	k->end = bch_le64(d3->offset);
	k->flags = d3->flags;
	k->csum = bch_le32(d3->csum);
	k->csum_sectors = bch_le16(d3->csum_sectors);
	k->csum_front = bch_le16(d3->csum_front);
	k->nptrs = d3->nptrs;
	if (k->nptrs > BCH_KEY_PTRS)
		return 0;
	for (i = 0; i < k->nptrs; i++)
		k->ptr[i] = bch_le64(d3->ptr[i]);
	return 1;
}

/*
 * Can @k be written in @key_bytes' layout with nothing lost? Version 2 has
 * one pointer and no checksum fields (its flags byte is written as is: a
 * checksum flag there is for the rules to refuse).
 */
static inline int bch_bkey_fits(const struct bch_bkey *k, __u32 key_bytes)
{
	return key_bytes != BCH_KEY_BYTES_V2 ||
	       (k->nptrs <= 1 && !k->csum && !k->csum_sectors && !k->csum_front);
}

/* Write @k in @key_bytes' layout (version 2: only if bch_bkey_fits()). */
static inline void bch_bkey_pack(void *disk, const struct bch_bkey *k,
				 __u32 key_bytes)
{
	unsigned int i;

	if (key_bytes == BCH_KEY_BYTES_V2) {
		struct bch_bkey_disk *d = disk;

		d->inode = bch_cpu32(k->inode);
		d->size = bch_cpu32(k->size);
		d->offset = bch_cpu64(k->end);
		d->ptr = bch_cpu64(k->nptrs ? bch_ptr_sector(k->ptr[0]) : 0);
		d->gen = k->nptrs ? bch_ptr_gen(k->ptr[0]) : 0;
		d->flags = k->flags;
		d->pad = 0;
		d->csum = 0;
	} else {
		struct bch_bkey3_disk *d = disk;

		d->inode = bch_cpu32(k->inode);
		d->size = bch_cpu32(k->size);
		d->offset = bch_cpu64(k->end);
		for (i = 0; i < BCH_KEY_PTRS; i++)
			d->ptr[i] = bch_cpu64(i < k->nptrs ? k->ptr[i] : 0);
		d->csum = bch_cpu32(k->csum);
		d->csum_sectors = bch_cpu16(k->csum_sectors);
		d->csum_front = bch_cpu16(k->csum_front);
		d->flags = k->flags;
		d->nptrs = k->nptrs;
		for (i = 0; i < sizeof(d->pad); i++)
			d->pad[i] = 0;
	}
}

/* The checkpoint's root key, of either version (size 0: no index yet). */
static inline int bch_sb_root(const struct bch_sb_disk *sb, struct bch_bkey *k)
{
	if (bch_le32(sb->version) == 2)
		return bch_bkey_unpack(k, &sb->btree_root, BCH_KEY_BYTES_V2);
	return bch_bkey_unpack(k, &sb->btree_root3, BCH_KEY_BYTES_V3);
}

/* Has an index been written (a root of size other than 0)? */
static inline int bch_sb_has_root(const struct bch_sb_disk *sb)
{
	return bch_le32(sb->version) == 2 ? !!sb->btree_root.size : !!sb->btree_root3.size;
}

/* No index: both versions' root fields zero. */
static inline void bch_sb_clear_root(struct bch_sb_disk *sb)
{
	__u8 *a = (__u8 *)&sb->btree_root, *b = (__u8 *)&sb->btree_root3;
	unsigned int i;

	for (i = 0; i < sizeof(sb->btree_root); i++)
		a[i] = 0;
	for (i = 0; i < sizeof(sb->btree_root3); i++)
		b[i] = 0;
}

static inline void bch_sb_set_root(struct bch_sb_disk *sb, const struct bch_bkey *k)
{
	if (bch_le32(sb->version) == 2)
		bch_bkey_pack(&sb->btree_root, k, BCH_KEY_BYTES_V2);
	else
		bch_bkey_pack(&sb->btree_root3, k, BCH_KEY_BYTES_V3);
}

/* What the rules need to know of one member of the set. */
struct bch_member_geom {
	__u32	bucket_size;
	__u32	journal_buckets;
	__u64	first_bucket;
	__u64	nbuckets;
	__u64	journal_first;
};

/* Member geometry from a superblock that validated. */
static inline void bch_sb_geom(const struct bch_sb_disk *sb, struct bch_member_geom *g)
{
	g->bucket_size = bch_le32(sb->bucket_size);
	g->journal_buckets = bch_le32(sb->journal_buckets);
	g->first_bucket = bch_le64(sb->first_bucket);
	g->nbuckets = bch_le64(sb->nbuckets);
	g->journal_first = bch_le64(sb->journal_first);
}

/*
 * The rule for the member table: why the superblock cannot be trusted, or
 * NULL. Version 2 has none (all zero). In version 3 this member (dev_idx)
 * is ACTIVE and its entry is the superblock's own uuid and geometry;
 * every entry is in a known state; every member that is or was in use
 * has the set's bucket size (nodes are a bucket, whichever member holds
 * them), a bucket count and a distinct uuid. This member's geometry is
 * checked first by the caller.
 */
static inline const char *bch_sb_members_invalid(const struct bch_sb_disk *sb)
{
	static const __u8 zero[sizeof(sb->members)];
	__u32 idx = bch_le32(sb->dev_idx);
	const struct bch_member_disk *me;
	unsigned int i, j;

	if (bch_le32(sb->version) == 2)
		return sb->dev_idx || sb->members_pad ||
		       memcmp(sb->members, zero, sizeof(zero)) ?
		       "version 2 superblock has a member table" : NULL;
	if (idx >= BCH_MAX_MEMBERS || sb->members_pad)
		return "superblock has a bad member index";
	me = &sb->members[idx];
	if (bch_le32(me->state) != BCH_MEMBER_ACTIVE ||
	    memcmp(me->uuid, sb->uuid, 16) || me->nbuckets != sb->nbuckets ||
	    me->bucket_size != sb->bucket_size)
		return "member table disagrees with its own superblock";
	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		const struct bch_member_disk *m = &sb->members[i];
		__u32 state = bch_le32(m->state), bucket = bch_le32(m->bucket_size);
		__u64 n = bch_le64(m->nbuckets);

		if (state >= BCH_MEMBER_STATES)
			return "member table has a member in an unknown state";
		if (state != BCH_MEMBER_ACTIVE && state != BCH_MEMBER_FAILED)
			continue;
		if (bucket != bch_le32(sb->bucket_size))
			return "member table has a member of another bucket size";
		if (!n || n > BCH_MAX_BUCKETS)
			return "member table has a member of bad geometry";
		for (j = 0; j < i; j++)
			if (sb->members[j].state != bch_cpu32(BCH_MEMBER_NONE) &&
			    !memcmp(sb->members[j].uuid, m->uuid, 16))
				return "member table names one device twice";
	}
	return NULL;
}

/* Members in use (ACTIVE) and ever in use but lost (FAILED). */
static inline unsigned int bch_sb_members(const struct bch_sb_disk *sb,
					  __u32 state)
{
	unsigned int i, n = 0;

	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		n += bch_le32(sb->members[i].state) == state;
	return n;
}

static inline __u32 bch_sb_key_bytes(const struct bch_sb_disk *sb)
{
	return bch_key_bytes(bch_le32(sb->version));
}

/* The magic of the journal entries of a cache of @version. */
static inline __u32 bch_jset_magic(__u32 version)
{
	return version == 2 ? BCH_JSET_MAGIC : BCH_JSET_MAGIC_V3;
}

/*
 * The rule for a leaf key, of an index node or of a journal entry: why the
 * index that holds it cannot be trusted, or NULL. Known flags only, and
 * BCH_KEY_CSUM only in version 3; a size, and no start before origin
 * sector 0; a hole has no pointer; a data key has one or two, on distinct
 * members of the set, each inside one bucket that is neither metadata nor
 * journal; a checksummed range holds the key, is at most
 * BCH_CSUM_MAX_SECTORS and lies in the key's bucket. @m: the geometry of
 * each of @nmembers members, from superblocks that validated.
 */
static inline const char *bch_leaf_key_invalid(const struct bch_bkey *k,
					       __u32 version,
					       const struct bch_member_geom *m,
					       unsigned int nmembers)
{
	unsigned int i;

	if (!k->size)
		return "size 0";
	if (k->size > k->end)
		return "starts before origin sector 0";
	if (k->flags & ~(BCH_KEY_HOLE | BCH_KEY_DIRTY | BCH_KEY_CSUM) ||
	    (version == 2 && (k->flags & BCH_KEY_CSUM)))
		return "has unknown flags";
	if (k->flags & BCH_KEY_HOLE)
		return k->nptrs ? "is a hole with a pointer" :
		       k->flags & BCH_KEY_CSUM ? "is a hole with a checksum" : NULL;
	if (!k->nptrs)
		return "has no pointer";
	if (k->nptrs == 2 && bch_ptr_dev(k->ptr[0]) == bch_ptr_dev(k->ptr[1]))
		return "has two pointers on one member";
	if ((k->flags & BCH_KEY_CSUM) &&
	    (k->csum_sectors > BCH_CSUM_MAX_SECTORS ||
	     (__u64)k->csum_front + k->size > k->csum_sectors))
		return "has a checksummed range that does not hold it";
	for (i = 0; i < k->nptrs; i++) {
		unsigned int dev = bch_ptr_dev(k->ptr[i]);
		__u64 sector = bch_ptr_sector(k->ptr[i]), bucket;
		const struct bch_member_geom *g;

		if (dev >= nmembers)
			return "points to a member the set does not have";
		g = &m[dev];
		bucket = sector / g->bucket_size;
		if (bucket < g->first_bucket)
			return "points into the metadata";
		if (bucket >= g->nbuckets)
			return "points past the last bucket";
		if (bucket >= g->journal_first &&
		    bucket - g->journal_first < g->journal_buckets)
			return "points into a journal bucket";
		if (sector % g->bucket_size + k->size > g->bucket_size)
			return "crosses the end of its bucket";
		/* Read whole to verify it, checked against this bucket's gen. */
		if ((k->flags & BCH_KEY_CSUM) &&
		    (sector % g->bucket_size < k->csum_front ||
		     sector % g->bucket_size - k->csum_front + k->csum_sectors >
		     g->bucket_size))
			return "has a checksummed range outside its bucket";
	}
	return NULL;
}

#endif /* _BCACHE_ONDISK_H */
