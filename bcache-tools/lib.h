/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the dm-bcache userspace tools.
 *
 * Functions returning int give 0 on success and -1 on failure; the reason
 * is then available as a one-line message from bch_strerror().
 */
#ifndef _BCACHE_TOOLS_LIB_H
#define _BCACHE_TOOLS_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bcache_ondisk.h"

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)		__attribute__((format(printf, a, b)))

#define BCH_UUID_STR_LEN	37	/* 36 characters and the NUL */
#define BCH_SIZE_STR_LEN	32

/* Byte offset of the superblock. */
#define BCH_SB_OFFSET		((uint64_t)BCH_SB_SECTOR << BCH_SECTOR_SHIFT)

/* util.c */
__printf(1, 2) int bch_err(const char *fmt, ...);
const char *bch_strerror(void);
/* progress on stderr: when it is a terminal, or always if @force */
void bch_progress_setup(bool force);
__printf(2, 3) void bch_progress(bool last, const char *fmt, ...);
int bch_parse_size(const char *str, uint64_t *bytes);
void bch_format_size(uint64_t bytes, char *buf);
bool bch_is_power_of_2(uint64_t n);

/* uuid.c */
int bch_uuid_generate(uint8_t uuid[16]);
int bch_uuid_parse(const char *str, uint8_t uuid[16]);
void bch_uuid_format(const uint8_t uuid[16], char *buf);
bool bch_uuid_is_nil(const uint8_t uuid[16]);
/* A slot's BCH_UUID_* flags as "valid,attached,...", unknown bits in hex. */
void bch_uuid_print_flags(uint32_t flags);
/*
 * As the kernel's bch_slot_bump_epoch(): drop all of a slot's cached
 * data (its keys carry the old epoch), its fingerprint and its dirty
 * count with it. False once the epoch is exhausted: then bch_slot_free().
 */
bool bch_slot_bump_epoch(struct bch_uuid_disk *u);
/* Free a slot, keeping its epoch (never reset: see dm-bcache/uuids.c). */
void bch_slot_free(struct bch_uuid_disk *u);

/* crc32c.c: crc32c() has the kernel's semantics (no inversion). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t bch_csum(const void *buf, size_t len);

/* dev.c: a block device or a regular file standing in for one. */
struct bch_dev {
	int		fd;
	const char	*path;
	uint64_t	size;		/* bytes */
	unsigned int	lbs;		/* logical block size in bytes */
	bool		blk;
};

int bch_dev_open(struct bch_dev *dev, const char *path, bool rw);
void bch_dev_close(struct bch_dev *dev);
int bch_pread_all(struct bch_dev *dev, void *buf, size_t len, uint64_t off);
int bch_pwrite_all(struct bch_dev *dev, const void *buf, size_t len,
		   uint64_t off);
int bch_dev_sync(struct bch_dev *dev);
/* Is the block device at @path held by someone (a dm table, a mount)? */
bool bch_dev_in_use(const char *path);

/* super.c */
bool bch_sb_has_magic(const struct bch_sb_disk *sb);
uint32_t bch_sb_csum(const struct bch_sb_disk *sb);
int bch_sb_read(struct bch_dev *dev, struct bch_sb_disk *sb);
int bch_sb_validate(const struct bch_sb_disk *sb, uint64_t dev_sectors);
int bch_sb_load(struct bch_dev *dev, struct bch_sb_disk *sb);
/*
 * A tool reading one device reads a set of one: a superblock (validated)
 * naming more than one member ACTIVE or FAILED is refused, as its keys may
 * point to the other members. @doing names what is refused ("checking").
 */
int bch_sb_one_member(const struct bch_sb_disk *sb, const char *path,
		      const char *doing);
int bch_region_csum(struct bch_dev *dev, uint64_t sector, uint64_t sectors,
		    uint32_t *csum);
/*
 * Rewriting metadata with the kernel's two-copy discipline: write the
 * copy that is not the one trusted, then the superblock naming it.
 * bch_uuids_write() writes @uuids (a whole table) over the copy that is
 * not copy @from and names it in @sb as the current one, copy @from's
 * checksum becoming the other's (the fallback), as the kernel's
 * bch_uuids_write() does. bch_sb_write() then flushes what @sb names,
 * writes @sb with its seq one up and a new checksum, and flushes again.
 */
int bch_uuids_write(struct bch_dev *dev, struct bch_sb_disk *sb,
		    const struct bch_uuid_disk *uuids, unsigned int from);
int bch_sb_write(struct bch_dev *dev, struct bch_sb_disk *sb);

/*
 * journal.c: the journal ring read by the replay rule of bcache_ondisk.h,
 * on a superblock that bch_sb_validate() accepted. Positions are ring
 * sectors, counted from the start of bucket journal_first.
 */
struct bch_journal {
	struct bch_dev		*dev;
	const struct bch_sb_disk *sb;
	uint32_t		block_size, bucket_size;
	uint64_t		start;		/* device sector of the ring */
	uint64_t		ring_sectors;
	uint64_t		pos;		/* where the next entry is expected */
	uint64_t		seq;		/* ... and its seq */
	uint64_t		walked;		/* ring sectors passed so far */
	uint64_t		entries, keys;	/* good ones so far */
	bool			ended;
	bool			end_magic;	/* an entry's magic was there */
	char			end_why[512];	/* once ended: what is there */
	/*
	 * Once ended at a bad entry (not after a whole lap), the whole ring
	 * is scanned at every block boundary for good entries of any seq, as
	 * the kernel does: max_seq is the largest seen (0 if none). If one
	 * has a seq from j->seq on, an entry in the middle is damaged (the
	 * kernel then drops the index): damaged, and later_seq/later_pos
	 * name the good one with the smallest such seq.
	 */
	bool			damaged;
	uint64_t		max_seq;
	uint64_t		later_seq, later_pos;
	uint8_t			*buf;
};

struct bch_jentry {
	uint64_t			seq, pos;
	uint32_t			sectors, nkeys;
	bool				skipped;	/* to the next bucket */
	const void			*keys;		/* until the next call */
	uint32_t			key_bytes;	/* of each of them */
};

int bch_journal_open(struct bch_journal *j, struct bch_dev *dev,
		     const struct bch_sb_disk *sb);
/*
 * The next good entry: 1 (in @e), 0 the journal ends (j->end_why says what
 * the two places it could be hold; j->pos and j->seq are then where and
 * with which seq the next entry goes; j->damaged whether a good entry
 * with a seq from j->seq on is elsewhere in the ring), -1 read error.
 */
int bch_journal_next(struct bch_journal *j, struct bch_jentry *e);
void bch_journal_close(struct bch_journal *j);
/*
 * The largest seq of anything that looks like an entry of this cache set
 * at a block boundary of the ring (checksum or not); 0 if none.
 */
int bch_journal_max_seq(struct bch_dev *dev, const struct bch_sb_disk *sb,
			uint64_t *max);
bool bch_journal_bucket(const struct bch_sb_disk *sb, uint64_t bucket);
uint32_t bch_jset_csum(const struct bch_jset_disk *j, uint32_t key_bytes);
/*
 * Why the kernel would refuse a journal key (it then drops the whole
 * index), or NULL: bch_leaf_key_invalid(), the rule for index leaf keys too.
 */
const char *bch_jkey_invalid(const struct bch_sb_disk *sb, const struct bch_jentry *e,
			     uint32_t i);
/* Key @i of entry @e, in CPU order; false if no key of the index can be it. */
bool bch_jentry_key(const struct bch_jentry *e, uint32_t i, struct bch_bkey *k);

#endif /* _BCACHE_TOOLS_LIB_H */
