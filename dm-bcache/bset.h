/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: sorted sets of keys, the pieces a btree node is made of.
 *
 * A set is an array of keys sorted by (inode, end), never decreasing.
 * Live keys of a set never overlap. Keys of size 0 are deleted: they keep
 * a position that does not break the order and are skipped by searches.
 */
#ifndef _BCH_BSET_H
#define _BCH_BSET_H

#include "bcache_ondisk.h"
#include "btree.h"

struct bch_bset {
	struct bch_bkey	*keys;
	u32		nkeys;
};

static inline int bch_bkey_cmp_pos(const struct bch_bkey *k, u32 inode, u64 end)
{
	if (k->inode != inode)
		return k->inode < inode ? -1 : 1;
	if (k->end != end)
		return k->end < end ? -1 : 1;
	return 0;
}

static inline int bch_bkey_cmp(const struct bch_bkey *l, const struct bch_bkey *r)
{
	return bch_bkey_cmp_pos(l, r->inode, r->end);
}

/* Index of the first key >= (inode, end), or nkeys. */
u32 bch_bset_search(const struct bch_bset *s, u32 inode, u64 end);
/* The first key >= (inode, end) that is not deleted, or NULL. */
struct bch_bkey *bch_bset_next(const struct bch_bset *s, u32 inode, u64 end);
/* Insert @k in order; the caller guarantees room at s->keys[s->nkeys]. */
struct bch_bkey *bch_bset_insert(struct bch_bset *s, const struct bch_bkey *k);
/*
 * Cut the range of extent @k out of every live key of @s that overlaps it;
 * returns how many keys that deleted. If one key contains @k with room on
 * both sides, its front stays in place and its tail is returned in @tail
 * (else left alone): the caller inserts it somewhere.
 */
u32 bch_bset_fixup(struct bch_bset *s, const struct bch_bkey *k, struct bch_bkey *tail);
/*
 * Merge-sort @nsets sets into @out, leaving out deleted keys and those
 * @drop (if given) says to; @drop is given the key's copy in @out, which
 * it may trim. Returns the number of keys in @out.
 */
u32 bch_bset_merge(struct bch_bkey *out, const struct bch_bset *sets, unsigned int nsets,
		   bool (*drop)(struct bch_bkey *k, void *arg), void *arg);

/* Bytes of a set of @nkeys of @key_bytes on disk, padded to @block_bytes. */
static inline size_t bch_bset_bytes(u32 nkeys, u32 key_bytes, u32 block_bytes)
{
	return bch_round_up(sizeof(struct bch_bset_disk) + (size_t)nkeys * key_bytes,
			    block_bytes);
}

/* Live keys of @s, i.e. the keys bch_bset_pack() writes. */
u32 bch_bset_live(const struct bch_bset *s);
/* Write @s (deleted keys left out) as set @idx of a node; returns its bytes. */
size_t bch_bset_pack(void *buf, const struct bch_bset *s, u64 seq, unsigned int level,
		     unsigned int idx, u32 block_bytes, u32 key_bytes);
/*
 * Check and read set @idx of a node at @buf (@len bytes to the end of the
 * bucket) into @out (room for @max_keys). Set 0 gives the node's @seq, the
 * others must match it; keys are of @key_bytes' layout. Returns the number
 * of keys and sets @bytes, or -errno if this is not a valid set: -EUCLEAN
 * if its checksum is good but a key in it cannot be one (corruption),
 * another error if it is torn, stale or was never written.
 */
int bch_bset_unpack(const void *buf, size_t len, u64 *seq, unsigned int level,
		    unsigned int idx, struct bch_bkey *out, u32 max_keys, u32 block_bytes,
		    u32 key_bytes, size_t *bytes);

#endif /* _BCH_BSET_H */
