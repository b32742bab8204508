// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: dirty data on two members. On a set of several, a dirty
 * write goes to two of them and is acknowledged once both hold it: its
 * key points to both copies, each pointer with its own gen. Writeback
 * indexes the clean key with one of them, and the other bucket's space
 * is reclaimed as any overwritten data's is. Clean data has one copy: the
 * origin is its other.
 *
 * A read of a key with two copies uses the one on the member with fewer
 * such reads in flight. A copy that cannot be read or fails its checksum
 * is dropped from the key, and the read is looked up again with that
 * member avoided: it finds the other copy, never the origin's older data.
 */
#include "dm-bcache.h"

bool bch_copies_mirrored(const struct bch_cache_set *set)
{
	return set->nr_members > 1;
}

/*
 * Reduce @k, from a lookup, to the copy a read of it uses: not one on a
 * member in @avoid (a bitmap of members that failed this read) while the
 * other is not, nor one whose bucket was reused while the other's was not;
 * else the one on the member with fewer mirrored reads in flight. Returns
 * BCH_COPY_* flags: COUNTED if that member's count was taken, OTHER if
 * the copy left out may serve should this one fail.
 */
u8 bch_copy_choose(struct bch_cache_set *set, struct bch_bkey *k,
		   unsigned long avoid)
{
	struct bch_member *m[2];
	bool bad[2];
	unsigned int i, c;

	if (k->nptrs < 2)
		return 0;
	for (i = 0; i < 2; i++) {
		u64 loc = bch_ptr_loc(k->ptr[i]);

		bad[i] = bch_ptr_stale(set, loc, bch_ptr_gen(k->ptr[i]));
		m[i] = bad[i] ? NULL : bch_ptr_member(set, loc);
		bad[i] = bad[i] || test_bit(m[i]->idx, &avoid);
	}
	if (bad[0] != bad[1])
		c = bad[0];
	else if (!m[0] && !m[1])
		/* Reused or lost both: never a lost member's, it has no IO. */
		c = bch_loc_failed(set, k->ptr[0]);
	else if (!m[0] || !m[1])
		c = !m[0];
	else
		c = atomic_read(&m[1]->reads) < atomic_read(&m[0]->reads);
	bch_key_drop_copy(k, !c);
	if (!m[c])
		return 0;	/* stale: the read finds out and looks again */
	atomic_inc(&m[c]->reads);
	return BCH_COPY_COUNTED | (bad[!c] ? 0 : BCH_COPY_OTHER);
}

void bch_copy_read_done(struct bch_cache_set *set, u64 loc)
{
	atomic_dec(&bch_ptr_member(set, loc)->reads);
}

/* Which of @k's copies is at location @loc, of @gen, or -1. */
static int bch_key_copy_at(const struct bch_bkey *k, u64 loc, u8 gen)
{
	unsigned int i;

	for (i = 0; i < k->nptrs; i++)
		if (bch_ptr_loc(k->ptr[i]) == loc && bch_ptr_gen(k->ptr[i]) == gen)
			return i;
	return -1;
}

/*
 * The copy of dirty data at @loc (@gen) that a read of origin range
 * [@sector, +@sectors) used cannot be read or is bad: drop it from the
 * keys of the range that still have it and another. Their buckets keep
 * their counts until GC recounts them (never too little). A failure
 * leaves the keys as they are: the next read finds the bad copy again,
 * and avoids it.
 */
int bch_index_drop_copy(struct bch_cache_set *set, u32 inode, u64 sector,
			u32 sectors, u64 loc, u8 gen)
{
	u64 pos = sector, end = sector + sectors;
	struct bch_bkey k;
	int r = 0, i;

	bch_index_lock(set);
	for (; pos < end; pos += k.size) {
		r = bch_index_lookup(set, inode, pos, end, &k);
		if (r < 0 || WARN_ON_ONCE(!k.size))
			break;
		r = 0;
		/* The copy's location for origin sector pos: the same write. */
		i = bch_key_copy_at(&k, loc + (pos - sector), gen);
		if (k.nptrs < 2 || i < 0)
			continue;
		/* Never the last copy that may serve: keep the key lost-proof. */
		if (bch_ptr_stale(set, bch_ptr_loc(k.ptr[!i]),
				  bch_ptr_gen(k.ptr[!i])))
			continue;
		bch_key_drop_copy(&k, i);
		r = bch_index_insert(set, &k);
		if (r)
			break;
		bch_journal_add(set, &k, NULL);
	}
	up_write(&set->btree_lock);
	return r;
}
