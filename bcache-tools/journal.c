// SPDX-License-Identifier: GPL-2.0
/*
 * The journal ring, read exactly as the kernel replays it (the rule is in
 * bcache_ondisk.h; where it ends is judged as dm-bcache/journal.c's
 * bch_journal_check_end() does): one reader for bcache-check, bcache-dump
 * and the test fixtures, so that what they report is what the next attach
 * replays.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

bool bch_journal_bucket(const struct bch_sb_disk *sb, uint64_t bucket)
{
	uint64_t first = le64toh(sb->journal_first);

	return bucket >= first && bucket - first < le32toh(sb->journal_buckets);
}

uint32_t bch_jset_csum(const struct bch_jset_disk *j, uint32_t key_bytes)
{
	return bch_csum((const uint8_t *)j + sizeof(j->csum),
			bch_jset_bytes(le32toh(j->nkeys), key_bytes) - sizeof(j->csum));
}

const char *bch_jkey_invalid(const struct bch_sb_disk *sb, const struct bch_jentry *e,
			     uint32_t i)
{
	struct bch_member_geom g;
	struct bch_bkey k;

	if (!bch_jentry_key(e, i, &k))
		return "is not a key of this format";
	bch_sb_geom(sb, &g);
	return bch_leaf_key_invalid(&k, le32toh(sb->version), &g, 1);
}

bool bch_jentry_key(const struct bch_jentry *e, uint32_t i, struct bch_bkey *k)
{
	return bch_bkey_unpack(k, (const uint8_t *)e->keys + (size_t)e->key_bytes * i,
			       e->key_bytes);
}

int bch_journal_open(struct bch_journal *j, struct bch_dev *dev, const struct bch_sb_disk *sb)
{
	memset(j, 0, sizeof(*j));
	j->dev = dev;
	j->sb = sb;
	j->block_size = le32toh(sb->block_size);
	j->bucket_size = le32toh(sb->bucket_size);
	j->ring_sectors = (uint64_t)le32toh(sb->journal_buckets) * j->bucket_size;
	j->start = (uint64_t)le64toh(sb->journal_first) * j->bucket_size;
	j->pos = le64toh(sb->journal_pos);
	j->seq = le64toh(sb->journal_seq);
	j->buf = malloc((size_t)BCH_JSET_MAX_SECTORS << BCH_SECTOR_SHIFT);
	if (!j->buf)
		return bch_err("out of memory");
	return 0;
}

void bch_journal_close(struct bch_journal *j)
{
	free(j->buf);
	j->buf = NULL;
}

/*
 * Is there a good entry with seq @seq at ring sector @pos? 1 yes (in
 * j->buf), 0 no (@why says why), -1 read error.
 */
static int entry_at(struct bch_journal *j, uint64_t pos, uint64_t seq, char *why, size_t len)
{
	const struct bch_jset_disk *e = (const void *)j->buf;
	uint32_t room = j->bucket_size - pos % j->bucket_size, sectors, nkeys;
	uint32_t n = room < BCH_JSET_MAX_SECTORS ? room : BCH_JSET_MAX_SECTORS;

	if (bch_pread_all(j->dev, j->buf, (size_t)n << BCH_SECTOR_SHIFT,
			  (j->start + pos) << BCH_SECTOR_SHIFT))
		return -1;
	sectors = le32toh(e->sectors);
	nkeys = le32toh(e->nkeys);
	if (le32toh(e->magic) != bch_jset_magic(le32toh(j->sb->version))) {
		snprintf(why, len, "no entry (bad magic)");
		return 0;
	}
	j->end_magic = true;
	if (memcmp(e->set_uuid, j->sb->set_uuid, sizeof(e->set_uuid))) {
		snprintf(why, len, "an entry of another cache set");
	} else if (le64toh(e->seq) != seq) {
		snprintf(why, len, "an entry with seq %llu",
			 (unsigned long long)le64toh(e->seq));
	} else if (!sectors || sectors % j->block_size || sectors > n ||
		   nkeys > bch_jset_max_keys(sectors, bch_sb_key_bytes(j->sb))) {
		snprintf(why, len, "an entry of invalid size (%u sectors, %u keys)",
			 sectors, nkeys);
	} else if (bch_jset_csum(e, bch_sb_key_bytes(j->sb)) != le32toh(e->csum)) {
		snprintf(why, len, "a checksum mismatch (a torn write)");
	} else {
		return 1;
	}
	return 0;
}

/*
 * Is @e, at a block boundary with @room sectors to the end of its bucket
 * (at most BCH_JSET_MAX_SECTORS), a good entry of this cache set, of any
 * seq? As the kernel's bch_jset_check() with @later and seq 0.
 */
static bool jset_good(const struct bch_journal *j, const struct bch_jset_disk *e, uint32_t room)
{
	uint32_t sectors = le32toh(e->sectors), nkeys = le32toh(e->nkeys);

	return le32toh(e->magic) == bch_jset_magic(le32toh(j->sb->version)) &&
	       !memcmp(e->set_uuid, j->sb->set_uuid, sizeof(e->set_uuid)) &&
	       sectors && sectors <= room && !(sectors % j->block_size) &&
	       nkeys <= bch_jset_max_keys(sectors, bch_sb_key_bytes(j->sb)) &&
	       bch_jset_csum(e, bch_sb_key_bytes(j->sb)) == le32toh(e->csum);
}

/*
 * The journal ended at a bad entry, before a whole lap: normal if a crash
 * tore it, or if it is what an earlier lap of the ring left. But a good
 * entry anywhere in the ring with a seq from j->seq on means an entry in
 * the middle is damaged, and the kernel's bch_journal_check_end() then
 * drops the index: scan the ring as it does, every block of every bucket.
 * 0, or -1 read error.
 */
static int check_end(struct bch_journal *j)
{
	size_t bucket_bytes = (size_t)j->bucket_size << BCH_SECTOR_SHIFT;
	const struct bch_jset_disk *e;
	uint32_t off, room;
	uint64_t b, seq;
	uint8_t *buf;

	j->ended = true;
	buf = malloc(bucket_bytes);
	if (!buf)
		return bch_err("out of memory");
	for (b = 0; b < j->ring_sectors; b += j->bucket_size) {
		if (bch_pread_all(j->dev, buf, bucket_bytes, (j->start + b) << BCH_SECTOR_SHIFT)) {
			free(buf);
			return -1;
		}
		for (off = 0; off < j->bucket_size; off += j->block_size) {
			e = (const void *)(buf + ((size_t)off << BCH_SECTOR_SHIFT));
			room = j->bucket_size - off;
			if (room > BCH_JSET_MAX_SECTORS)
				room = BCH_JSET_MAX_SECTORS;
			if (!jset_good(j, e, room))
				continue;
			seq = le64toh(e->seq);
			if (seq > j->max_seq)
				j->max_seq = seq;
			if (seq >= j->seq && (!j->damaged || seq < j->later_seq)) {
				j->damaged = true;
				j->later_seq = seq;
				j->later_pos = b + off;
			}
		}
	}
	free(buf);
	return 0;
}

int bch_journal_next(struct bch_journal *j, struct bch_jentry *out)
{
	const struct bch_jset_disk *e = (const void *)j->buf;
	char why[128], why2[128];
	uint64_t at = j->pos, skip = 0;
	int r;

	if (j->ended)
		return 0;
	/* seqs only grow, so a lap ends by itself; this is only a bound */
	if (j->walked >= j->ring_sectors) {
		snprintf(j->end_why, sizeof(j->end_why), "the entries fill the whole ring");
		j->ended = true;
		return 0;
	}
	j->end_magic = false;
	r = entry_at(j, at, j->seq, why, sizeof(why));
	/*
	 * Not right behind the last one: at the start of the next bucket,
	 * where the writer goes when the rest of a bucket is too small; not
	 * if that is a lap from the start (nor, from a bucket's start, a
	 * whole bucket on: the writer never skips from there).
	 */
	if (!r && j->pos % j->bucket_size) {
		skip = j->bucket_size - j->pos % j->bucket_size;
		at = (j->pos + skip) % j->ring_sectors;
		if (j->walked + skip >= j->ring_sectors) {
			snprintf(why2, sizeof(why2), "is where the journal started");
			r = 0;
		} else {
			r = entry_at(j, at, j->seq, why2, sizeof(why2));
		}
		if (!r) {
			snprintf(j->end_why, sizeof(j->end_why),
				 "at ring sector %llu %s; the next bucket (ring sector %llu) %s",
				 (unsigned long long)j->pos, why, (unsigned long long)at, why2);
			return check_end(j);
		}
	} else if (!r) {
		snprintf(j->end_why, sizeof(j->end_why), "at ring sector %llu %s",
			 (unsigned long long)j->pos, why);
		return check_end(j);
	}
	if (r < 0)
		return -1;
	out->seq = j->seq;
	out->pos = at;
	out->sectors = le32toh(e->sectors);
	out->nkeys = le32toh(e->nkeys);
	out->skipped = at != j->pos;
	out->keys = e + 1;
	out->key_bytes = bch_sb_key_bytes(j->sb);
	j->walked += skip + out->sectors;
	j->pos = (at + out->sectors) % j->ring_sectors;
	j->seq++;
	j->entries++;
	j->keys += out->nkeys;
	return 1;
}

int bch_journal_max_seq(struct bch_dev *dev, const struct bch_sb_disk *sb, uint64_t *max)
{
	const size_t chunk = 1 << 20;
	uint64_t first = le64toh(sb->journal_first) * le32toh(sb->bucket_size);
	uint64_t left = (uint64_t)le32toh(sb->journal_buckets) *
			le32toh(sb->bucket_size) << BCH_SECTOR_SHIFT;
	size_t block = (size_t)le32toh(sb->block_size) << BCH_SECTOR_SHIFT, n, i;
	uint64_t off = first << BCH_SECTOR_SHIFT;
	const struct bch_jset_disk *e;
	uint8_t *buf = malloc(chunk);

	if (!buf)
		return bch_err("out of memory");
	*max = 0;
	while (left) {
		n = left < chunk ? left : chunk;
		if (bch_pread_all(dev, buf, n, off)) {
			free(buf);
			return -1;
		}
		for (i = 0; i < n; i += block) {
			e = (const void *)(buf + i);
			if (le32toh(e->magic) == bch_jset_magic(le32toh(sb->version)) &&
			    !memcmp(e->set_uuid, sb->set_uuid, sizeof(e->set_uuid)) &&
			    le64toh(e->seq) > *max)
				*max = le64toh(e->seq);
		}
		off += n;
		left -= n;
	}
	free(buf);
	return 0;
}
