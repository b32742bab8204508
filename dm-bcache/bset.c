// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: operations on one sorted set of keys, and its disk format.
 *
 * Nothing here knows about nodes or trees; btree.c strings sets together.
 */
#include "bset.h"

u32 bch_bset_search(const struct bch_bset *s, u32 inode, u64 end)
{
	u32 lo = 0, hi = s->nkeys;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (bch_bkey_cmp_pos(&s->keys[mid], inode, end) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct bch_bkey *bch_bset_next(const struct bch_bset *s, u32 inode, u64 end)
{
	u32 i;

	for (i = bch_bset_search(s, inode, end); i < s->nkeys; i++)
		if (s->keys[i].size)
			return &s->keys[i];
	return NULL;
}

struct bch_bkey *bch_bset_insert(struct bch_bset *s, const struct bch_bkey *k)
{
	u32 i = bch_bset_search(s, k->inode, k->end);

	memmove(&s->keys[i + 1], &s->keys[i], (s->nkeys - i) * sizeof(*k));
	s->keys[i] = *k;
	s->nkeys++;
	return &s->keys[i];
}

u32 bch_bset_fixup(struct bch_bset *s, const struct bch_bkey *k, struct bch_bkey *tail)
{
	u64 start = bch_key_start(k), end = k->end;
	/* the first key ending after start: nothing before it overlaps */
	u32 first = bch_bset_search(s, k->inode, start + 1), i, j, deleted = 0;
	bool split;

	for (i = first; i < s->nkeys; i++) {
		struct bch_bkey *x = &s->keys[i];
		u64 xstart;

		if (x->inode != k->inode)
			break;
		if (!x->size)
			continue;
		xstart = bch_key_start(x);
		if (xstart >= end)
			break;		/* live keys are sorted by start too */

		if (xstart >= start) {
			if (x->end > end) {		/* trim the front */
				bch_key_cut_front(x, end - xstart);
			} else {			/* covered: delete */
				x->size = 0;
				deleted++;
			}
			continue;
		}

		/* x straddles start: its end comes down to start. */
		split = x->end > end;
		if (split) {
			*tail = *x;
			bch_key_cut_front(tail, end - xstart);
		}
		/*
		 * Keys before x from @first on are deleted ones ending above
		 * start (a live one would overlap x): bring them down with x
		 * so that the set stays sorted.
		 */
		for (j = first; j < i; j++) {
			WARN_ON(s->keys[j].size);
			s->keys[j].end = start;
		}
		x->size = start - xstart;
		x->end = start;
		if (split)
			break;		/* x contained all of k */
	}
	return deleted;
}

u32 bch_bset_merge(struct bch_bkey *out, const struct bch_bset *sets, unsigned int nsets,
		   bool (*drop)(struct bch_bkey *k, void *arg), void *arg)
{
	u32 pos[BCH_NODE_SETS] = { 0 }, nr = 0;
	unsigned int i, best;

	if (WARN_ON(nsets > BCH_NODE_SETS))
		nsets = BCH_NODE_SETS;
	for (;;) {
		const struct bch_bkey *k = NULL;

		/* Few sets: a linear pick of the smallest head is enough. */
		for (i = 0, best = 0; i < nsets; i++) {
			if (pos[i] < sets[i].nkeys &&
			    (!k || bch_bkey_cmp(&sets[i].keys[pos[i]], k) < 0)) {
				k = &sets[i].keys[pos[i]];
				best = i;
			}
		}
		if (!k)
			return nr;
		pos[best]++;
		if (!k->size)
			continue;
		out[nr] = *k;
		if (!(drop && drop(&out[nr], arg)))
			nr++;
	}
}

u32 bch_bset_live(const struct bch_bset *s)
{
	u32 i, nr = 0;

	for (i = 0; i < s->nkeys; i++)
		nr += !!s->keys[i].size;
	return nr;
}

size_t bch_bset_pack(void *buf, const struct bch_bset *s, u64 seq, unsigned int level,
		     unsigned int idx, u32 block_bytes, u32 key_bytes)
{
	struct bch_bset_disk *d = buf;
	u8 *keys = (u8 *)(d + 1);
	u32 i, nr = 0;
	size_t used, bytes;

	for (i = 0; i < s->nkeys; i++) {
		if (!s->keys[i].size)
			continue;
		WARN_ON(!bch_bkey_fits(&s->keys[i], key_bytes));
		bch_bkey_pack(keys + (size_t)key_bytes * nr++, &s->keys[i], key_bytes);
	}
	d->magic = cpu_to_le32(BCH_BSET_MAGIC);
	d->seq = cpu_to_le64(seq);
	d->nkeys = cpu_to_le32(nr);
	d->level = cpu_to_le16(level);
	d->set = cpu_to_le16(idx);
	d->key_bytes = cpu_to_le16(key_bytes == BCH_KEY_BYTES_V2 ? 0 : key_bytes);
	memset(d->pad, 0, sizeof(d->pad));

	used = sizeof(*d) + (size_t)nr * key_bytes;
	bytes = bch_bset_bytes(nr, key_bytes, block_bytes);
	memset((u8 *)buf + used, 0, bytes - used);
	d->csum = cpu_to_le32(bch_crc32c((u8 *)buf + sizeof(d->csum),
					 used - sizeof(d->csum)));
	return bytes;
}

int bch_bset_unpack(const void *buf, size_t len, u64 *seq, unsigned int level,
		    unsigned int idx, struct bch_bkey *out, u32 max_keys, u32 block_bytes,
		    u32 key_bytes, size_t *bytes)
{
	const struct bch_bset_disk *d = buf;
	const u8 *keys = (const u8 *)(d + 1);
	size_t used;
	u32 i, nr;

	if (len < sizeof(*d) || le32_to_cpu(d->magic) != BCH_BSET_MAGIC ||
	    le16_to_cpu(d->set) != idx || le16_to_cpu(d->level) != level ||
	    (idx && le64_to_cpu(d->seq) != *seq) ||
	    le16_to_cpu(d->key_bytes) != (key_bytes == BCH_KEY_BYTES_V2 ? 0 : key_bytes))
		return -EBADMSG;
	nr = le32_to_cpu(d->nkeys);
	if (nr > max_keys || nr > (len - sizeof(*d)) / key_bytes)
		return -EBADMSG;
	used = sizeof(*d) + (size_t)nr * key_bytes;
	if (le32_to_cpu(d->csum) != bch_crc32c((const u8 *)buf + sizeof(d->csum),
					       used - sizeof(d->csum)))
		return -EBADMSG;

	/* Its checksum is good: a key that cannot be is corruption, not a tear. */
	for (i = 0; i < nr; i++)
		if (!bch_bkey_unpack(&out[i], keys + (size_t)key_bytes * i, key_bytes))
			return -EUCLEAN;
	if (!idx)
		*seq = le64_to_cpu(d->seq);
	*bytes = min_t(size_t, bch_bset_bytes(nr, key_bytes, block_bytes), len);
	return nr;
}
