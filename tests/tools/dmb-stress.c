// SPDX-License-Identifier: GPL-2.0
/*
 * dmb-stress: hunt stale reads through a cache device.
 *
 * Random reads, writes and discards of 4 KiB .. 256 KiB at random 4 KiB
 * offsets, from several threads, with O_DIRECT. Every 4 KiB block written
 * carries its block number, a stamp and a pattern derived from both; a
 * model remembers the stamp of every block, and every read is checked
 * against it. Threads lock the block ranges they touch, so each check is
 * exact, while the cache below still sees writes land on ranges whose
 * fills are in flight. Discarded blocks become unknown until rewritten;
 * the range is read through the cache and from the origin (-o) and must
 * be the same. At the end, the whole range is compared with the origin.
 *
 * Exit status: 0 clean, 1 a mismatch (details on stderr), 2 usage/IO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include "dmb-io.h"

#define BLK		4096
#define MAX_BLKS	64
#define STRIPE		16	/* blocks per lock */
#define UNKNOWN		UINT64_MAX

static int fd, ofd = -1;
static uint64_t nblocks, nops;
static uint64_t *model;
static pthread_mutex_t *locks;
static uint64_t nstripes;
static uint64_t stamp_next = 1;
static pthread_mutex_t stamp_lock = PTHREAD_MUTEX_INITIALIZER;
static int discard_pct = 5;
static uint64_t inject;	/* self-test: every Nth write is not issued */
static volatile int failed;
static uint64_t stats_r, stats_w, stats_d;

static void fill_block(uint64_t *p, uint64_t blk, uint64_t stamp)
{
	uint64_t s = (blk * 0x9e3779b97f4a7c15ULL) ^ stamp ^ 0x5bd1e995;
	size_t i;

	p[0] = blk;
	p[1] = stamp;
	for (i = 2; i < BLK / 8; i++)
		p[i] = dmb_xs(&s);
}

static int check_block(const uint64_t *p, uint64_t blk, uint64_t stamp,
		       const char *what)
{
	static uint64_t want[BLK / 8];
	static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
	int bad;

	pthread_mutex_lock(&l);
	fill_block(want, blk, stamp);
	bad = memcmp(p, want, BLK) != 0;
	pthread_mutex_unlock(&l);
	if (bad) {
		fprintf(stderr,
			"MISMATCH %s block %" PRIu64 ": want stamp %" PRIu64
			", got block %" PRIu64 " stamp %" PRIu64 "%s\n",
			what, blk, stamp, p[0], p[1],
			p[0] == blk && p[1] == stamp ? " (torn)" :
			p[0] == blk && p[1] < stamp ? " (STALE)" : "");
		failed = 1;
	}
	return bad;
}

static void lock_range(uint64_t b, uint64_t n)
{
	dmb_lock_range(locks, STRIPE, b, n, 1);
}

static void unlock_range(uint64_t b, uint64_t n)
{
	dmb_lock_range(locks, STRIPE, b, n, 0);
}

static int io_all(int f, void *buf, uint64_t blk, uint64_t n, int write)
{
	if (dmb_io_all(f, buf, n * BLK, blk * BLK, write)) {
		fprintf(stderr, "%s at block %" PRIu64 ": %s\n",
			write ? "write" : "read", blk,
			errno ? strerror(errno) : "short");
		exit(2);
	}
	return 0;
}

static void do_write(uint64_t *buf, uint64_t b, uint64_t n)
{
	uint64_t i, stamp;

	pthread_mutex_lock(&stamp_lock);
	stamp = stamp_next++;
	pthread_mutex_unlock(&stamp_lock);
	for (i = 0; i < n; i++)
		fill_block(buf + i * BLK / 8, b + i, stamp);
	if (!inject || stamp % inject)
		io_all(fd, buf, b, n, 1);
	for (i = 0; i < n; i++)
		model[b + i] = stamp;
	__atomic_add_fetch(&stats_w, 1, __ATOMIC_RELAXED);
}

static void do_read(uint64_t *buf, uint64_t b, uint64_t n)
{
	uint64_t i;

	io_all(fd, buf, b, n, 0);
	for (i = 0; i < n; i++)
		if (model[b + i] != UNKNOWN)
			check_block(buf + i * BLK / 8, b + i, model[b + i],
				    "read");
	__atomic_add_fetch(&stats_r, 1, __ATOMIC_RELAXED);
}

/* After a discard, what the cache returns must be what the origin has. */
static void do_discard(uint64_t *buf, uint64_t *obuf, uint64_t b, uint64_t n)
{
	uint64_t range[2] = { b * BLK, n * BLK }, i;

	if (ioctl(fd, BLKDISCARD, range)) {
		discard_pct = 0;	/* not supported: stop trying */
		return;
	}
	for (i = 0; i < n; i++)
		model[b + i] = UNKNOWN;
	if (ofd >= 0) {
		io_all(fd, buf, b, n, 0);
		io_all(ofd, obuf, b, n, 0);
		if (memcmp(buf, obuf, n * BLK)) {
			fprintf(stderr, "MISMATCH after discard at block %" PRIu64
				": cache and origin differ\n", b);
			failed = 1;
		}
	}
	__atomic_add_fetch(&stats_d, 1, __ATOMIC_RELAXED);
}

struct worker {
	pthread_t	thread;
	uint64_t	seed;
	uint64_t	hot;	/* first block of a hot range, re-read often */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	uint64_t *buf, *obuf, op, b, n;

	if (posix_memalign((void **)&buf, BLK, MAX_BLKS * BLK) ||
	    posix_memalign((void **)&obuf, BLK, MAX_BLKS * BLK))
		exit(2);
	for (op = 0; op < nops && !failed; op++) {
		uint64_t r = dmb_xs(&w->seed) % 100;

		n = 1 + dmb_xs(&w->seed) % (dmb_xs(&w->seed) % 4 ? 8 : MAX_BLKS);
		if (r < 30)	/* hot set: mostly hits */
			b = (w->hot + dmb_xs(&w->seed) % 256) % (nblocks - n);
		else
			b = dmb_xs(&w->seed) % (nblocks - n);
		lock_range(b, n);
		r = dmb_xs(&w->seed) % 100;
		if (r < (uint64_t)discard_pct)
			do_discard(buf, obuf, b, n);
		else if (r < 40)
			do_write(buf, b, n);
		else
			do_read(buf, b, n);
		unlock_range(b, n);
	}
	free(buf);
	free(obuf);
	return NULL;
}

/* The whole range, block by block: through the cache, then the origin. */
static void final_check(void)
{
	uint64_t *buf, *obuf, b, n, i;

	if (posix_memalign((void **)&buf, BLK, MAX_BLKS * BLK) ||
	    posix_memalign((void **)&obuf, BLK, MAX_BLKS * BLK))
		exit(2);
	for (b = 0; b < nblocks && !failed; b += n) {
		n = nblocks - b < MAX_BLKS ? nblocks - b : MAX_BLKS;
		io_all(fd, buf, b, n, 0);
		for (i = 0; i < n; i++)
			if (model[b + i] != UNKNOWN)
				check_block(buf + i * BLK / 8, b + i,
					    model[b + i], "final read");
		if (ofd < 0)
			continue;
		io_all(ofd, obuf, b, n, 0);
		if (memcmp(buf, obuf, n * BLK)) {
			fprintf(stderr, "MISMATCH final: cache and origin differ near block %" PRIu64 "\n",
				b);
			failed = 1;
		}
	}
	free(buf);
	free(obuf);
}

int main(int argc, char **argv)
{
	uint64_t size = 0, seed = 1, i;
	const char *dev = NULL, *origin = NULL;
	int threads = 2, c, init = 1;
	struct worker *w;

	while ((c = getopt(argc, argv, "d:o:s:n:S:t:D:IX:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'o': origin = optarg; break;
		case 's': size = strtoull(optarg, NULL, 0) << 20; break;
		case 'n': nops = strtoull(optarg, NULL, 0); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 't': threads = atoi(optarg); break;
		case 'D': discard_pct = atoi(optarg); break;
		case 'I': init = 0; break;
		case 'X': inject = strtoull(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (!dev || !size || !nops || threads < 1)
		goto usage;
	nblocks = size / BLK;
	if (nblocks < 2 * MAX_BLKS)
		goto usage;
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0 || (origin && (ofd = open(origin, O_RDONLY | O_DIRECT)) < 0)) {
		perror("open");
		return 2;
	}
	model = calloc(nblocks, sizeof(*model));
	nstripes = nblocks / STRIPE + 1;
	locks = calloc(nstripes, sizeof(*locks));
	w = calloc(threads, sizeof(*w));
	if (!model || !locks || !w)
		return 2;
	for (i = 0; i < nstripes; i++)
		pthread_mutex_init(&locks[i], NULL);

	/* Known contents everywhere first (sequential: mostly bypassed). */
	for (i = 0; i < nblocks; i++)
		model[i] = UNKNOWN;
	if (init) {
		uint64_t *buf;

		if (posix_memalign((void **)&buf, BLK, MAX_BLKS * BLK))
			return 2;
		for (i = 0; i < nblocks; i += MAX_BLKS)
			do_write(buf, i, nblocks - i < MAX_BLKS ?
				 nblocks - i : MAX_BLKS);
		free(buf);
	}

	for (c = 0; c < threads; c++) {
		w[c].seed = seed * 2654435761ULL + c + 1;
		w[c].hot = (nblocks / threads) * c;
		pthread_create(&w[c].thread, NULL, worker, &w[c]);
	}
	for (c = 0; c < threads; c++)
		pthread_join(w[c].thread, NULL);
	if (!failed)
		final_check();

	printf("dmb-stress: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64
	       " discards over %" PRIu64 " blocks, %d threads, seed %" PRIu64
	       ": %s\n", stats_r, stats_w, stats_d, nblocks, threads, seed,
	       failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
usage:
	fprintf(stderr,
		"usage: dmb-stress -d DEV -s MiB -n OPS [-o ORIGIN] [-S SEED] [-t THREADS] [-D DISCARD%%] [-I] [-X N]\n");
	return 2;
}
