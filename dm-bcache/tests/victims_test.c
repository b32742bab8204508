// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace test of the reclaim's victim heap (victims.h): for random
 * priorities (many ties) and sizes it keeps exactly the @want lowest
 * (priority, bucket) pairs, and one pass over 4 Mi buckets with want
 * 262144 (a 2 TiB cache of 512 KiB buckets, target nbuckets / 16) is
 * timed: the insertion sort it replaced took about 105 s there.
 *
 * Usage: victims_test [seed]. The last line is "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../bch_compat.h"
#include "../victims.h"

static u64 rng;

static u64 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Keep want of n buckets with prios below range; compare with a sort. */
static int check(u64 n, u64 want, unsigned int range)
{
	u64 *all = malloc(n * sizeof(*all)), *heap = malloc(want * sizeof(*heap) + 1);
	struct bch_victims h = { .v = heap, .want = want };
	u64 i, keep = want < n ? want : n;
	int bad = 0;

	for (i = 0; i < n; i++) {
		u16 prio = rnd() % range;

		all[i] = (u64)prio << BCH_VICTIM_BUCKET_BITS | i;
		bch_victims_add(&h, prio, i);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	qsort(heap, h.nr, sizeof(*heap), cmp_u64);
	if (h.nr != keep)
		bad = 1;
	for (i = 0; !bad && i < keep; i++)
		if (heap[i] != all[i] || bch_victim_bucket(heap[i]) >= n)
			bad = 1;
	if (bad)
		printf("FAIL n=%llu want=%llu range=%u: kept %llu\n",
		       (unsigned long long)n, (unsigned long long)want, range,
		       (unsigned long long)h.nr);
	free(all);
	free(heap);
	return bad;
}

int main(int argc, char **argv)
{
	static const unsigned int ranges[] = { 1, 3, 100, 65536 };
	u64 n = 4 << 20, want = 262144, i, *heap;
	struct bch_victims h;
	int pass = 0, fail = 0, t, r;
	struct timespec a, b;

	rng = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	if (!rng)
		rng = 1;
	for (t = 0; t < 200; t++) {
		r = check(1 + rnd() % 5000, rnd() % 600, ranges[t % 4]);
		fail += r;
		pass += !r;
	}
	heap = malloc(want * sizeof(*heap));
	h = (struct bch_victims){ .v = heap, .want = want };
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		bch_victims_add(&h, rnd() % 65536, i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("one pass over %llu buckets keeping %llu: %.3f s\n",
	       (unsigned long long)n, (unsigned long long)want,
	       (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	free(heap);
	printf("%d passed, %d failed\n", pass, fail);
	return fail != 0;
}
