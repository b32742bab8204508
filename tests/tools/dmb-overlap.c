// SPDX-License-Identifier: GPL-2.0
/*
 * dmb-overlap: hunt stale reads that overlap writes (issues #12, #18).
 *
 * dmb-stress locks the ranges it reads, so a read never overlaps a write
 * and a read racing the cache's own write paths is never seen. Here only
 * writers lock (per stripe of blocks, so two writes to one block never
 * overlap and each block's writes complete in stamp order), and readers
 * take no lock at all: a read may land on blocks being written, and what
 * it returns is checked against bounds instead of an exact value.
 *
 * Every 512-byte sector written carries its block number, its sector
 * index, a stamp (global, increasing) and a pattern derived from the
 * three, so any sector read back names exactly one write or is torn or
 * garbage. Per block the writers keep the newest issued version and the
 * newest completed one (published after the write returned). A reader
 * snapshots the completed versions of its range before it issues the
 * read; once the read returns each sector must hold
 *   snapshot stamp <= read stamp <= newest stamp issued by then.
 * A read stamp below the snapshot is a STALE read: data older than a write
 * that had completed before the read was issued. Zeros are right only if
 * a write-zeroes was the snapshot's write or issued since; a block
 * discarded at or after the snapshot is unknown and skipped.
 *
 * Nothing makes a sector atomic for a read overlapping a write of it: the
 * origin (a ramdisk, a file under QEMU) copies bytes while the read copies
 * them out, so a sector may be torn between two writes. A sector that does
 * not decode is right if each of its bytes is that byte of a write the
 * block's history allows (the snapshot's or one issued since); anything
 * else (older data, another block's, garbage) is a violation.
 *
 * Writes mix small random ones (cached, dirty in writeback), large ones
 * over 1 MiB (sent to the origin, punching the cache), sequential runs
 * (past sequential_cutoff they bypass), discards and write-zeroes. At the
 * end every block read through the device must equal its last completed
 * write; with -o, after the command of -F (e.g. a flush message), the
 * origin must too, and equal the device byte for byte.
 *
 * Exit status: 0 clean, 1 a violation (details on stderr), 2 usage/IO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "dmb-io.h"

#define BLK		4096
#define SEC		512
#define SPB		(BLK / SEC)
#define WPS		(SEC / 8)	/* 64-bit words per sector */
#define STRIPE		16		/* blocks per writer lock */
#define MAGIC		0xd3b0e41a00000000ULL
#define CHUNK		256		/* blocks per IO of the final check */

/* A version is stamp << KBITS | kind; 0 is "never written by us". */
enum kind { K_SMALL, K_LARGE, K_SEQ, K_ZERO, K_DISCARD, NKINDS };
#define KBITS		3
#define VSTAMP(v)	((v) >> KBITS)
#define VKIND(v)	((unsigned int)((v) & ((1 << KBITS) - 1)))
static const char * const kind_name[NKINDS] = {
	"small", "large", "sequential", "write-zeroes", "discard",
};
static const char * const op_name[NKINDS] = {
	"small write", "large write", "sequential write", "write-zeroes", "discard",
};

enum verdict { V_STALE, V_TORN, V_GARBAGE, V_FUTURE, V_FINAL, V_ORIGIN, NVERDICTS };
static const char * const verdict_name[NVERDICTS] = {
	"stale", "torn", "garbage", "future", "final", "origin",
};

static int fd, ofd = -1, isblk;
static uint64_t nblocks;
/* Per block: newest issued and completed versions, newest zero/discard stamps. */
static uint64_t *issued, *done, *last_zero, *last_discard;
/* Per block: the last HIST versions issued, a ring indexed by count. */
#define HIST		16
static uint64_t *hist, *hcount;

/* The version issued to @blk @back writes before the newest of @h so far. */
static uint64_t hist_back(uint64_t blk, uint64_t h, uint64_t back)
{
	return __atomic_load_n(&hist[blk * HIST + (h - 1 - back) % HIST],
			       __ATOMIC_ACQUIRE);
}
static pthread_mutex_t *locks;
static uint64_t stamp_next = 1;

/* Knobs (blocks and percentages). */
static uint64_t small_max = 16, large_min = 257, large_max = 1024;
static uint64_t seq_piece = 64, seq_len = 1536, read_max = 256;
static int pct_large = 20, pct_seq = 5, pct_discard = 3, pct_zero = 3;
static uint64_t nops = UINT64_MAX, inject, inject_torn;
/* -y: the injected tear's second half is another block's or an older write's */
enum { TORN_OK, TORN_OTHER, TORN_OLDER } torn_kind;
static volatile int readers_running;
static uint64_t torn_blk, torn_reads;	/* a torn block (+1) for a reader */
static int max_print = 30;
static int no_discard;		/* discards failed: stop issuing them */

static volatile int stop_writers, stop_readers;
static struct timespec t0;
static double deadline;		/* seconds after t0; 0: none */
static const char *end_file;	/* -E: the writers stop once it exists */

static uint64_t ops_issued;
static uint64_t st_reads, st_read_blocks, st_skipped, st_mixed, st_torn_ok;
static uint64_t st_writes[NKINDS];
static uint64_t st_bad[NVERDICTS], st_bad_ios;
static uint64_t st_stale_quiet;	/* stale with no write issued since the snapshot */
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static int printed;

static void *zeros;		/* large_max blocks of zeros */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return dmb_xs(s) % n;
}

static void fill_sector(uint64_t *p, uint64_t blk, unsigned int sec,
			uint64_t stamp)
{
	uint64_t s = (blk * 0x9e3779b97f4a7c15ULL) ^ (stamp * 0xc2b2ae3d27d4eb4fULL) ^
		     (sec + 1) * 0x165667b19e3779f9ULL;
	unsigned int i;

	if (!s)
		s = 1;
	p[0] = blk;
	p[1] = stamp;
	p[2] = MAGIC | sec;
	for (i = 3; i < WPS; i++)
		p[i] = dmb_xs(&s);
}

static void fill_block(uint64_t *p, uint64_t blk, uint64_t stamp)
{
	unsigned int j;

	for (j = 0; j < SPB; j++)
		fill_sector(p + j * WPS, blk, j, stamp);
}

enum sec_state { S_DATA, S_ZERO, S_TORN, S_GARBAGE };

/* What a sector read back as: a write's data (*stamp), zeros, or neither. */
static enum sec_state decode_sector(const uint64_t *p, uint64_t blk,
				    unsigned int sec, uint64_t *stamp)
{
	uint64_t want[WPS];
	unsigned int i;

	if (p[0] != blk || p[2] != (MAGIC | sec)) {
		for (i = 0; i < WPS; i++)
			if (p[i])
				return S_GARBAGE;
		return S_ZERO;
	}
	*stamp = p[1];
	fill_sector(want, blk, sec, p[1]);
	return memcmp(p, want, SEC) ? S_TORN : S_DATA;
}

/*
 * Count a violation; print it unless this thread is quiet (the rest of a
 * read or a chunk whose first violation was printed: one read often
 * returns a whole punched range stale, the count says how much).
 */
static __thread int quiet, nbad;

static void report(enum verdict v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report(enum verdict v, const char *fmt, ...)
{
	va_list ap;

	__atomic_add_fetch(&st_bad[v], 1, __ATOMIC_RELAXED);
	if (nbad++ || quiet)
		return;
	pthread_mutex_lock(&print_lock);
	if (printed < max_print) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	} else if (printed == max_print) {
		fprintf(stderr, "dmb-overlap: more violations, not printed (-v)\n");
	}
	if (printed++ >= max_print)
		quiet = 1;	/* for good */
	pthread_mutex_unlock(&print_lock);
}

/* After a read or chunk: how many blocks of it were bad, if more than one. */
static void report_end(const char *what, uint64_t b, uint64_t n)
{
	if (nbad > 1 && !quiet) {
		pthread_mutex_lock(&print_lock);
		fprintf(stderr, "  ... %d bad blocks in that %s of %" PRIu64 " blocks at %" PRIu64 "\n",
			nbad, what, n, b);
		pthread_mutex_unlock(&print_lock);
	}
	if (nbad)
		__atomic_add_fetch(&st_bad_ios, 1, __ATOMIC_RELAXED);
	nbad = 0;
}

static void lock_range(uint64_t b, uint64_t n)
{
	dmb_lock_range(locks, STRIPE, b, n, 1);
}

static void unlock_range(uint64_t b, uint64_t n)
{
	dmb_lock_range(locks, STRIPE, b, n, 0);
}

static void io_all(int f, void *buf, uint64_t blk, uint64_t n, int write)
{
	if (dmb_io_all(f, buf, n * BLK, blk * BLK, write)) {
		fprintf(stderr, "dmb-overlap: %s of %" PRIu64 " blocks at block %" PRIu64 ": %s\n",
			write ? "write" : "read", n, blk,
			errno ? strerror(errno) : "short");
		exit(2);
	}
}

/* Discard: unknown afterwards, so a failure only costs coverage. */
static void issue_discard(uint64_t b, uint64_t n)
{
	uint64_t range[2] = { b * BLK, n * BLK };
	int r;

	if (isblk)
		r = ioctl(fd, BLKDISCARD, range);
	else
		r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      range[0], range[1]);
	if (r && !__atomic_exchange_n(&no_discard, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "dmb-overlap: discard: %s: no more discards\n",
			strerror(errno));
}

/* Write-zeroes; a file without ZERO_RANGE gets written zeros instead. */
static void issue_zero(uint64_t b, uint64_t n)
{
	uint64_t range[2] = { b * BLK, n * BLK };

	if (isblk) {
		if (ioctl(fd, BLKZEROOUT, range)) {
			fprintf(stderr, "dmb-overlap: BLKZEROOUT at block %" PRIu64 ": %s\n",
				b, strerror(errno));
			exit(2);
		}
		return;
	}
	if (!fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		       range[0], range[1]))
		return;
	io_all(fd, zeros, b, n, 1);
}

/* A thread, and what it is doing now (for the watchdog's report). */
struct thr {
	pthread_t	thread;
	uint64_t	seed;
	const char	*what;	/* NULL: between IOs */
	uint64_t	b, n, stamp;
	double		since;
};

static __thread struct thr *self;

static void doing(const char *what, uint64_t b, uint64_t n, uint64_t stamp)
{
	if (!self)
		return;
	self->b = b;
	self->n = n;
	self->stamp = stamp;
	self->since = now();
	__atomic_store_n(&self->what, what, __ATOMIC_RELEASE);
}

/*
 * Self-test (-Y): first write block b with its sector 0 torn, the first
 * half this write's and the second half the block's last completed write
 * (a tear a read may see), or with -y other another block's, with -y older
 * the write before the last completed one (tears it must never see), and
 * leave it so until a reader has read it (or for a second).
 */
static void write_torn(uint64_t *buf, uint64_t b, uint64_t stamp)
{
	uint64_t old = VSTAMP(done[b]), *p, seen, v;
	int i;

	if (!readers_running)
		return;
	if (torn_kind == TORN_OLDER) {
		/* this write is in the ring already: the one before the last */
		if (hcount[b] < 3)
			return;
		v = hist_back(b, hcount[b], 2);
		if (VKIND(v) >= K_ZERO)
			return;
		old = VSTAMP(v);
	}

	if (posix_memalign((void **)&p, BLK, BLK))
		exit(2);
	memcpy(p, buf, BLK);
	if (torn_kind == TORN_OTHER)
		fill_sector(p, b + 1, 0, stamp);
	else if (torn_kind == TORN_OLDER)
		fill_sector(p, b, 0, old);
	else if (VKIND(done[b]) == K_ZERO || !old)
		memset(p, 0, SEC);
	else
		fill_sector(p, b, 0, old);
	memcpy(p, buf, SEC / 2);
	io_all(fd, p, b, 1, 1);
	seen = __atomic_load_n(&torn_reads, __ATOMIC_ACQUIRE);
	__atomic_store_n(&torn_blk, b + 1, __ATOMIC_RELEASE);
	for (i = 0; i < 1000 && !stop_readers &&
	     __atomic_load_n(&torn_reads, __ATOMIC_ACQUIRE) == seen; i++)
		usleep(1000);
	__atomic_store_n(&torn_blk, 0, __ATOMIC_RELEASE);
	free(p);
}

/*
 * One write of n blocks at b, under its stripes' locks: the stamp is taken
 * inside them, so per block, issue order is stamp order. issued is
 * published before the IO (a read can see the data only after that), done
 * after it returned (a read snapshotting it is issued after completion).
 */
static void do_write(uint64_t *buf, uint64_t b, uint64_t n, enum kind k)
{
	uint64_t i, stamp, v;

	doing("waiting for the stripe locks of a write", b, n, 0);
	lock_range(b, n);
	stamp = __atomic_fetch_add(&stamp_next, 1, __ATOMIC_SEQ_CST);
	v = stamp << KBITS | k;
	doing(op_name[k], b, n, stamp);
	for (i = 0; i < n; i++) {
		uint64_t h = __atomic_load_n(&hcount[b + i], __ATOMIC_RELAXED);

		__atomic_store_n(&hist[(b + i) * HIST + h % HIST], v, __ATOMIC_RELEASE);
		__atomic_store_n(&hcount[b + i], h + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&issued[b + i], v, __ATOMIC_RELEASE);
		if (k == K_ZERO)
			__atomic_store_n(&last_zero[b + i], stamp, __ATOMIC_RELEASE);
		if (k == K_DISCARD)
			__atomic_store_n(&last_discard[b + i], stamp, __ATOMIC_RELEASE);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	switch (k) {
	case K_ZERO:
		issue_zero(b, n);
		break;
	case K_DISCARD:
		issue_discard(b, n);
		break;
	default:
		for (i = 0; i < n; i++)
			fill_block(buf + i * BLK / 8, b + i, stamp);
		if (inject_torn && !(stamp % inject_torn))
			write_torn(buf, b, stamp);
		/* self-test: drop every inject-th write, keep it in the model */
		if (!inject || stamp % inject)
			io_all(fd, buf, b, n, 1);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		__atomic_store_n(&done[b + i], v, __ATOMIC_RELEASE);
	unlock_range(b, n);
	doing(NULL, 0, 0, 0);
	__atomic_add_fetch(&st_writes[k], 1, __ATOMIC_RELAXED);
}

static int writers_go(void)
{
	if (stop_writers)
		return 0;
	if (deadline && now() >= deadline)
		return 0;
	if (end_file && access(end_file, F_OK) == 0) {
		stop_writers = 1;
		return 0;
	}
	return __atomic_fetch_add(&ops_issued, 1, __ATOMIC_RELAXED) < nops;
}

static uint64_t pick(uint64_t *seed, uint64_t n)
{
	return rnd(seed, nblocks - n + 1);
}

static void *writer(void *arg)
{
	struct thr *t = arg;
	uint64_t *buf, b, n, end;
	int r;

	self = t;
	if (posix_memalign((void **)&buf, BLK, large_max * BLK))
		exit(2);
	while (writers_go()) {
		r = rnd(&t->seed, 100);
		if ((r -= pct_discard) < 0) {
			if (__atomic_load_n(&no_discard, __ATOMIC_RELAXED))
				continue;
			n = 1 + rnd(&t->seed, read_max);
			do_write(buf, pick(&t->seed, n), n, K_DISCARD);
		} else if ((r -= pct_zero) < 0) {
			n = 1 + rnd(&t->seed, read_max);
			do_write(buf, pick(&t->seed, n), n, K_ZERO);
		} else if ((r -= pct_large) < 0) {
			n = large_min + rnd(&t->seed, large_max - large_min + 1);
			do_write(buf, pick(&t->seed, n), n, K_LARGE);
		} else if ((r -= pct_seq) < 0) {
			/* a stream of pieces: past the cutoff they bypass */
			b = pick(&t->seed, seq_len);
			for (end = b + seq_len; b < end && writers_go(); b += n) {
				n = end - b < seq_piece ? end - b : seq_piece;
				do_write(buf, b, n, K_SEQ);
			}
		} else {
			n = 1 + rnd(&t->seed, small_max);
			do_write(buf, pick(&t->seed, n), n, K_SMALL);
		}
	}
	free(buf);
	return NULL;
}

/*
 * A sector of blk that does not decode: is each byte that byte of the
 * snapshot's write or of one issued since, up to @iss, the newest issued
 * when the read returned (a read overlapping writes)? Not if the history
 * no longer reaches back to the snapshot.
 */
static int torn_between_writes(const uint64_t *p, uint64_t blk,
			       unsigned int sec, uint64_t snap, uint64_t iss)
{
	uint64_t want[HIST][WPS], v, h;
	const unsigned char *got = (const unsigned char *)p;
	unsigned int i, k, n = 0;
	int reached = 0;

	h = __atomic_load_n(&hcount[blk], __ATOMIC_ACQUIRE);
	for (i = 0; i < HIST && i < h; i++) {
		v = hist_back(blk, h, i);
		if (VSTAMP(v) < VSTAMP(snap))
			break;
		if (VSTAMP(v) > VSTAMP(iss))
			continue;	/* issued after the read returned */
		if (v == snap)
			reached = 1;
		if (VKIND(v) == K_ZERO || VKIND(v) == K_DISCARD)
			memset(want[n++], 0, SEC);
		else
			fill_sector(want[n++], blk, sec, VSTAMP(v));
	}
	if (!reached)
		return 0;
	for (i = 0; i < SEC; i++) {
		for (k = 0; k < n; k++)
			if (got[i] == ((const unsigned char *)want[k])[i])
				break;
		if (k == n)
			return 0;
	}
	__atomic_add_fetch(&st_torn_ok, 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * One block of a lock-free read, snap its completed version before the
 * read was issued. Every sector must hold a version between snap and the
 * newest issued now; the first bad sector is reported.
 */
static void check_read(const uint64_t *p, uint64_t blk, uint64_t snap,
		       uint64_t rb, uint64_t rn)
{
	uint64_t ss = VSTAMP(snap), iss, lz, s = 0, first = 0;
	unsigned int j;
	int mixed = 0;

	if (!ss)
		return;		/* never written: unknown (-I) */
	if (__atomic_load_n(&last_discard[blk], __ATOMIC_ACQUIRE) >= ss) {
		__atomic_add_fetch(&st_skipped, 1, __ATOMIC_RELAXED);
		return;		/* discarded since: unknown */
	}
	iss = __atomic_load_n(&issued[blk], __ATOMIC_ACQUIRE);
	lz = __atomic_load_n(&last_zero[blk], __ATOMIC_ACQUIRE);
	for (j = 0; j < SPB; j++) {
		switch (decode_sector(p + j * WPS, blk, j, &s)) {
		case S_ZERO:
			if (lz >= ss) {
				s = 0;
				break;
			}
			if (VSTAMP(iss) == ss)
				__atomic_add_fetch(&st_stale_quiet, 1, __ATOMIC_RELAXED);
			report(V_STALE, "STALE block %" PRIu64 ": read zeros, a write of stamp %" PRIu64
			       " had completed before the read was issued (%s write; newest issued %" PRIu64
			       " %s; read of %" PRIu64 " blocks at %" PRIu64 ", sector %u)\n",
			       blk, ss, kind_name[VKIND(snap)], VSTAMP(iss),
			       kind_name[VKIND(iss)], rn, rb, j);
			return;
		case S_TORN:
			if (torn_between_writes(p + j * WPS, blk, j, snap, iss)) {
				mixed = 1;
				continue;
			}
			report(V_TORN, "TORN block %" PRIu64 ": sector %u has the header of stamp %" PRIu64
			       " but not its pattern (completed %" PRIu64 ", newest issued %" PRIu64
			       "; read of %" PRIu64 " blocks at %" PRIu64 ")\n",
			       blk, j, s, ss, VSTAMP(iss), rn, rb);
			return;
		case S_GARBAGE:
			if (torn_between_writes(p + j * WPS, blk, j, snap, iss)) {
				mixed = 1;
				continue;
			}
			report(V_GARBAGE, "GARBAGE block %" PRIu64 ": sector %u holds block %" PRIu64
			       " stamp %" PRIu64 " word2 %#" PRIx64 " (completed %" PRIu64
			       ", newest issued %" PRIu64 "; read of %" PRIu64 " blocks at %" PRIu64 ")\n",
			       blk, j, p[j * WPS], p[j * WPS + 1], p[j * WPS + 2],
			       ss, VSTAMP(iss), rn, rb);
			return;
		case S_DATA:
			if (s < ss) {
				/*
				 * No write since: not a read racing a punch
				 * (a fill over a newer key, or a writeback
				 * over newer origin data).
				 */
				if (VSTAMP(iss) == ss)
					__atomic_add_fetch(&st_stale_quiet, 1, __ATOMIC_RELAXED);
				report(V_STALE, "STALE block %" PRIu64 ": read stamp %" PRIu64
				       ", a write of stamp %" PRIu64 " had completed before the read was issued"
				       " (%s write; newest issued %" PRIu64 " %s; read of %" PRIu64
				       " blocks at %" PRIu64 ", sector %u)\n",
				       blk, s, ss, kind_name[VKIND(snap)], VSTAMP(iss),
				       kind_name[VKIND(iss)], rn, rb, j);
				return;
			}
			if (s > VSTAMP(iss)) {
				report(V_FUTURE, "GARBAGE block %" PRIu64 ": read stamp %" PRIu64
				       ", newer than any write issued to it (%" PRIu64 ")\n",
				       blk, s, VSTAMP(iss));
				return;
			}
			break;
		}
		if (j && s != first)
			mixed = 1;
		first = s;
	}
	/* sectors of two writes, both allowed: a read racing a write */
	if (mixed)
		__atomic_add_fetch(&st_mixed, 1, __ATOMIC_RELAXED);
}

static void *reader(void *arg)
{
	struct thr *t = arg;
	uint64_t *buf, *snap, b, n, i, tb;

	self = t;
	if (posix_memalign((void **)&buf, BLK, read_max * BLK))
		exit(2);
	snap = calloc(read_max, sizeof(*snap));
	if (!snap)
		exit(2);
	while (!stop_readers) {
		n = 1 + rnd(&t->seed, rnd(&t->seed, 2) ? 16 : read_max);
		b = pick(&t->seed, n);
		tb = __atomic_exchange_n(&torn_blk, 0, __ATOMIC_ACQ_REL);
		if (tb) {
			b = tb - 1;
			n = 1;
		}
		for (i = 0; i < n; i++)
			snap[i] = __atomic_load_n(&done[b + i], __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		doing("read", b, n, 0);
		io_all(fd, buf, b, n, 0);
		doing(NULL, 0, 0, 0);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		for (i = 0; i < n; i++)
			check_read(buf + i * BLK / 8, b + i, snap[i], b, n);
		report_end("read", b, n);
		if (tb)
			__atomic_add_fetch(&torn_reads, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&st_reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st_read_blocks, n, __ATOMIC_RELAXED);
	}
	free(buf);
	free(snap);
	return NULL;
}

/* Quiet now: one block must equal its last completed write exactly. */
static int check_exact(const uint64_t *p, uint64_t blk, enum verdict v,
		       const char *where)
{
	uint64_t want = done[blk], s = 0;
	enum sec_state st;
	unsigned int j;

	if (!VSTAMP(want) || VKIND(want) == K_DISCARD)
		return 0;
	for (j = 0; j < SPB; j++) {
		st = decode_sector(p + j * WPS, blk, j, &s);
		if (VKIND(want) == K_ZERO ? st == S_ZERO :
		    st == S_DATA && s == VSTAMP(want))
			continue;
		report(v, "%s block %" PRIu64 ": want stamp %" PRIu64 " (%s write), sector %u %s %" PRIu64 "%s\n",
		       where, blk, VSTAMP(want), kind_name[VKIND(want)], j,
		       st == S_ZERO ? "holds zeros" : st == S_DATA ? "holds stamp" :
		       st == S_TORN ? "is torn, header stamp" : "is garbage, word1",
		       st == S_ZERO ? 0 : p[j * WPS + 1],
		       st == S_DATA && s < VSTAMP(want) ? " (STALE)" : "");
		return 1;
	}
	return 0;
}

static void final_check(const char *flush_cmd)
{
	uint64_t *buf, *obuf, b, n, i;
	int r;

	if (posix_memalign((void **)&buf, BLK, CHUNK * BLK) ||
	    posix_memalign((void **)&obuf, BLK, CHUNK * BLK))
		exit(2);
	for (b = 0; b < nblocks; b += n) {
		n = nblocks - b < CHUNK ? nblocks - b : CHUNK;
		doing("final read", b, n, 0);
		io_all(fd, buf, b, n, 0);
		for (i = 0; i < n; i++)
			check_exact(buf + i * BLK / 8, b + i, V_FINAL, "FINAL");
		report_end("final read", b, n);
	}
	if (ofd < 0)
		goto out;
	if (flush_cmd) {
		doing("-F command", 0, 0, 0);
		fflush(stdout);
		r = system(flush_cmd);
		if (r) {
			fprintf(stderr, "dmb-overlap: '%s' failed (%d)\n", flush_cmd, r);
			exit(2);
		}
	}
	for (b = 0; b < nblocks; b += n) {
		n = nblocks - b < CHUNK ? nblocks - b : CHUNK;
		doing("origin and device read", b, n, 0);
		io_all(ofd, obuf, b, n, 0);
		io_all(fd, buf, b, n, 0);
		for (i = 0; i < n; i++)
			if (!check_exact(obuf + i * BLK / 8, b + i, V_ORIGIN, "ORIGIN") &&
			    memcmp(buf + i * BLK / 8, obuf + i * BLK / 8, BLK))
				report(V_ORIGIN, "ORIGIN block %" PRIu64 ": the origin differs from the device\n",
				       b + i);
		report_end("origin read", b, n);
	}
out:
	doing(NULL, 0, 0, 0);
	free(buf);
	free(obuf);
}

/*
 * A stuck IO must not hang the scenario until its timeout unexplained: say
 * what every thread is waiting for, on stderr and in the kernel log (the
 * guest's console; the process itself cannot exit while an IO is stuck).
 */
static struct thr *all_thr;
static int nthr, nreaders;	/* all_thr[nthr] is main's */

static void say(int kfd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(int kfd, const char *fmt, ...)
{
	char line[256] = "<5>";	/* a notice, like the scenarios' markers */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line + 3, sizeof(line) - 3, fmt, ap);
	va_end(ap);
	fputs(line + 3, stderr);
	if (kfd >= 0 && write(kfd, line, strlen(line)) < 0)
		return;
}

static volatile double wd_until;	/* the watchdog fires then */

static void *watchdog(void *arg)
{
	const char *what;
	int c, kfd;
	double t;

	(void)arg;
	while (now() < wd_until)
		sleep(1);
	kfd = open("/dev/kmsg", O_WRONLY);
	t = now();
	say(kfd, "dmb-overlap: still running after %.0f s (-T %.0f): IO stuck?\n",
	    t, deadline);
	for (c = 0; c <= nthr; c++) {
		what = __atomic_load_n(&all_thr[c].what, __ATOMIC_ACQUIRE);
		if (what)
			say(kfd, "dmb-overlap: %s %d: %s of %" PRIu64 " blocks at %" PRIu64
			    ", stamp %" PRIu64 ", for %.0f s\n",
			    c == nthr ? "main" : c < nthr - nreaders ? "writer" : "reader",
			    c, what, all_thr[c].n, all_thr[c].b, all_thr[c].stamp,
			    t - all_thr[c].since);
	}
	_exit(2);
	return NULL;
}

static int parse_range(const char *s, uint64_t *lo, uint64_t *hi)
{
	char *e;

	*lo = strtoull(s, &e, 0) / 4;
	*hi = *e == ':' ? strtoull(e + 1, NULL, 0) / 4 : *lo;
	return *lo && *hi >= *lo ? 0 : -1;
}

int main(int argc, char **argv)
{
	uint64_t size = 0, seed = 1, i, bad = 0, nwrites = 0;
	const char *dev = NULL, *origin = NULL, *flush_cmd = NULL;
	int writers = 2, readers = 2, c, init = 1;
	double secs = 0, grace = 0, elapsed;
	struct thr *w, *r;
	pthread_t wd;
	struct stat sb;

	while ((c = getopt(argc, argv, "d:o:F:s:n:T:E:t:r:S:IL:l:q:D:Z:m:R:v:X:Y:y:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'o': origin = optarg; break;
		case 'F': flush_cmd = optarg; break;
		case 's': size = strtoull(optarg, NULL, 0) << 20; break;
		case 'n': nops = strtoull(optarg, NULL, 0); break;
		case 'T': secs = atof(optarg); break;
		case 'E': end_file = optarg; break;
		case 't': writers = atoi(optarg); break;
		case 'r': readers = atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'I': init = 0; break;
		case 'L':
			if (parse_range(optarg, &large_min, &large_max))
				goto usage;
			break;
		case 'l': pct_large = atoi(optarg); break;
		case 'q': pct_seq = atoi(optarg); break;
		case 'D': pct_discard = atoi(optarg); break;
		case 'Z': pct_zero = atoi(optarg); break;
		case 'm': small_max = strtoull(optarg, NULL, 0) / 4; break;
		case 'R': read_max = strtoull(optarg, NULL, 0) / 4; break;
		case 'v': max_print = atoi(optarg); break;
		case 'X': inject = strtoull(optarg, NULL, 0); break;
		case 'Y': inject_torn = strtoull(optarg, NULL, 0); break;
		case 'y':
			if (!strcmp(optarg, "other"))
				torn_kind = TORN_OTHER;
			else if (!strcmp(optarg, "older"))
				torn_kind = TORN_OLDER;
			else
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (!dev || !size || (nops == UINT64_MAX && secs <= 0) ||
	    writers < 1 || readers < 0 || !small_max || !read_max ||
	    pct_large < 0 || pct_seq < 0 || pct_discard < 0 || pct_zero < 0 ||
	    pct_large + pct_seq + pct_discard + pct_zero > 100)
		goto usage;
	nblocks = size / BLK;
	if (nblocks < 2 * large_max || nblocks < 2 * read_max ||
	    nblocks < 2 * seq_len) {
		fprintf(stderr, "dmb-overlap: -s must be at least %" PRIu64 " MiB with these sizes\n",
			(2 * (large_max > seq_len ? large_max : seq_len) * BLK) >> 20);
		return 2;
	}
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0 || fstat(fd, &sb) ||
	    (origin && (ofd = open(origin, O_RDONLY | O_DIRECT)) < 0)) {
		perror("dmb-overlap: open");
		return 2;
	}
	isblk = S_ISBLK(sb.st_mode);
	issued = calloc(nblocks, sizeof(*issued));
	done = calloc(nblocks, sizeof(*done));
	last_zero = calloc(nblocks, sizeof(*last_zero));
	last_discard = calloc(nblocks, sizeof(*last_discard));
	hist = calloc(nblocks * HIST, sizeof(*hist));
	hcount = calloc(nblocks, sizeof(*hcount));
	locks = calloc(nblocks / STRIPE + 1, sizeof(*locks));
	nthr = writers + readers;
	nreaders = readers;
	all_thr = calloc(nthr + 1, sizeof(*all_thr));
	w = all_thr;
	r = all_thr + writers;
	if (!issued || !done || !last_zero || !last_discard || !hist ||
	    !hcount || !locks || !w ||
	    !r || posix_memalign(&zeros, BLK, large_max * BLK))
		return 2;
	memset(zeros, 0, large_max * BLK);
	for (i = 0; i <= nblocks / STRIPE; i++)
		pthread_mutex_init(&locks[i], NULL);

	/* Known contents everywhere first (1 MiB writes, mostly bypassing). */
	if (init) {
		uint64_t *buf;

		if (posix_memalign((void **)&buf, BLK, 256 * BLK))
			return 2;
		for (i = 0; i < nblocks; i += 256)
			do_write(buf, i, nblocks - i < 256 ? nblocks - i : 256,
				 K_SEQ);
		free(buf);
		memset(st_writes, 0, sizeof(st_writes));
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	self = &all_thr[nthr];
	if (secs > 0) {
		deadline = secs;
		grace = secs < 60 ? 60 : secs;
		wd_until = deadline + grace;
		pthread_create(&wd, NULL, watchdog, NULL);
	}
	for (c = 0; c < writers; c++) {
		w[c].seed = seed * 2654435761ULL + c + 1;
		pthread_create(&w[c].thread, NULL, writer, &w[c]);
	}
	readers_running = readers > 0;
	for (c = 0; c < readers; c++) {
		r[c].seed = seed * 40503ULL + 0x1000 + c;
		pthread_create(&r[c].thread, NULL, reader, &r[c]);
	}
	for (c = 0; c < writers; c++)
		pthread_join(w[c].thread, NULL);
	stop_readers = 1;
	for (c = 0; c < readers; c++)
		pthread_join(r[c].thread, NULL);
	elapsed = now();
	/* the final check reads everything twice and flushes: more time */
	wd_until = elapsed + 3 * grace;

	final_check(flush_cmd);

	for (c = 0; c < NVERDICTS; c++)
		bad += st_bad[c];
	for (c = 0; c < NKINDS; c++)
		nwrites += st_writes[c];
	printf("dmb-overlap: %.1f s, %" PRIu64 " reads (%" PRIu64 " blocks, %" PRIu64
	       " skipped as discarded, %" PRIu64 " mixed, %" PRIu64
	       " sectors torn between writes), %" PRIu64 " writes (%" PRIu64
	       " small, %" PRIu64 " origin-bound large, %" PRIu64 " sequential, %" PRIu64
	       " write-zeroes), %" PRIu64 " discards, over %" PRIu64 " blocks, %d writers, %d readers, seed %" PRIu64
	       ": %" PRIu64 " violations in %" PRIu64 " reads",
	       elapsed, st_reads, st_read_blocks, st_skipped, st_mixed, st_torn_ok,
	       nwrites - st_writes[K_DISCARD], st_writes[K_SMALL],
	       st_writes[K_LARGE], st_writes[K_SEQ], st_writes[K_ZERO],
	       st_writes[K_DISCARD], nblocks, writers, readers, seed, bad,
	       st_bad_ios);
	if (bad) {
		const char *sep = " (";

		for (c = 0; c < NVERDICTS; c++) {
			if (!st_bad[c])
				continue;
			printf("%s%" PRIu64 " %s", sep, st_bad[c], verdict_name[c]);
			if (c == V_STALE && st_stale_quiet)
				printf(" (%" PRIu64 " with no write issued to the block since)",
				       st_stale_quiet);
			sep = ", ";
		}
		printf(")");
	}
	printf(": %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
usage:
	fprintf(stderr,
		"usage: dmb-overlap -d DEV -s MiB {-n WRITES | -T SECONDS} [options]\n"
		"  -E FILE    end sooner, once FILE exists (a script's other load is done)\n"
		"  -t N       writer threads (2)         -r N      reader threads (2)\n"
		"  -S SEED    seed (1)                   -I        do not initialise the range\n"
		"  -L K[:K]   large write KiB (1028:4096; over 1 MiB: to the origin)\n"
		"  -l PCT     large writes (20)          -q PCT    sequential runs (5)\n"
		"  -D PCT     discards (3)               -Z PCT    write-zeroes (3)\n"
		"  -m KiB     largest small write (64)   -R KiB    largest read (1024)\n"
		"  -o ORIGIN  at the end, check the origin too, after\n"
		"  -F CMD     running CMD (e.g. 'dmsetup message DEV 0 flush')\n"
		"  -v N       print at most N violations (30)\n"
		"  -X N       self-test: drop every Nth data write\n"
		"  -Y N       self-test: every Nth data write first leaves a sector torn\n"
		"             between it and the block's last write (-y other: another\n"
		"             block's, -y older: the write before that)\n");
	return 2;
}
