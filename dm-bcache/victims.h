/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: the reclaim's victims, the @want buckets of lowest priority
 * seen in one pass over the bucket array.
 *
 * A max-heap of at most @want entries: a bucket below the worst kept one
 * replaces it. One pass costs O(nbuckets log want), where the insertion
 * sort it replaces cost O(nbuckets * want) under the allocator's lock.
 * An entry packs the priority above the bucket index, so ties go to the
 * lower bucket and a comparison is one u64's.
 */
#ifndef _BCH_VICTIMS_H
#define _BCH_VICTIMS_H

#define BCH_VICTIM_BUCKET_BITS	48

struct bch_victims {
	u64	*v;		/* the heap: v[0] is the worst kept */
	u64	nr;
	u64	want;
};

static inline u64 bch_victim_bucket(u64 v)
{
	return v & ((1ULL << BCH_VICTIM_BUCKET_BITS) - 1);
}

static inline void bch_victims_sift_down(struct bch_victims *h, u64 i)
{
	u64 c, x = h->v[i];

	while ((c = 2 * i + 1) < h->nr) {
		if (c + 1 < h->nr && h->v[c + 1] > h->v[c])
			c++;
		if (h->v[c] <= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	h->v[i] = x;
}

static inline void bch_victims_add(struct bch_victims *h, u16 prio, u64 bucket)
{
	u64 i, x = (u64)prio << BCH_VICTIM_BUCKET_BITS | bucket;

	if (h->nr < h->want) {
		for (i = h->nr++; i && h->v[(i - 1) / 2] < x; i = (i - 1) / 2)
			h->v[i] = h->v[(i - 1) / 2];
		h->v[i] = x;
	} else if (h->nr && x < h->v[0]) {
		h->v[0] = x;
		bch_victims_sift_down(h, 0);
	}
}

#endif /* _BCH_VICTIMS_H */
