// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace tests of the index btree (bset.c, btree.c).
 *
 * A randomized differential test runs a tree on a fake disk against a
 * model that knows, per sector of a few inodes, the cache pointer or
 * nothing: random inserts (some holes, some already stale, some with a
 * fault injected), lookups compared piece by piece, bucket gens bumped,
 * GC, flushes with torn writes, and reloads from the fake disk. Directed
 * tests cover torn sets, corrupt nodes, argument checks, and shared
 * inserts from several threads.
 *
 * Usage: btree_test [seed [ops [shared | all | CONFIG [v2 | v3]]]]
 * ("shared": only the threads' test, as the ThreadSanitizer build runs
 * it; CONFIG: only that random test, e.g. "1/1 deep"; v2 or v3: every
 * test in that key layout, else they alternate). The last line is
 * "N passed, N failed".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>

#include "../bset.h"

/* Deterministic randomness: splitmix64, one stream for the test, one for seqs. */
static u64 rng_state, seq_state;

static u64 splitmix(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 rnd(u64 n)
{
	return n ? splitmix(&rng_state) % n : 0;
}

u64 get_random_u64(void)
{
	return splitmix(&seq_state);
}

/* The btree's allocations: fault injection and a count of live ones. */
static long mem_live, mem_fail_in, mem_faults;

void *bch_kvzalloc(size_t size)
{
	void *p;

	if (mem_fail_in > 0 && !--mem_fail_in) {
		mem_faults++;
		return NULL;
	}
	p = calloc(1, size);
	if (p)
		mem_live++;
	return p;
}

void bch_kvfree(void *p)
{
	if (p) {
		mem_live--;
		free(p);
	}
}

/* CRC-32C, slicing by 8: the tests checksum every set they write. */
u32 bch_crc32c(const void *buf, size_t len)
{
	static u32 t[8][256];
	const u8 *p = buf;
	u32 crc = ~0U, i, j, c;

	if (!t[0][1]) {
		for (i = 0; i < 256; i++) {
			for (c = i, j = 0; j < 8; j++)
				c = (c & 1) ? (c >> 1) ^ 0x82F63B78 : c >> 1;
			t[0][i] = c;
		}
		for (i = 0; i < 256; i++)
			for (j = 1; j < 8; j++)
				t[j][i] = (t[j - 1][i] >> 8) ^ t[0][t[j - 1][i] & 0xff];
	}
	for (; len >= 8; len -= 8, p += 8) {
		u32 lo = crc ^ (p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24);
		u32 hi = p[4] | p[5] << 8 | p[6] << 16 | (u32)p[7] << 24;

		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
	while (len--)
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* The model: a few inodes, one with keys up to U64_MAX. */
#define NINODES		3
#define DATA_BASE	BIT_ULL(40)	/* data pointers are just numbers */
#define DB		256		/* sectors per data bucket */
#define NDB		256

static const u32 inodes[NINODES] = { 0, 7, U32_MAX };

struct msec {
	u64	ptr;
	u64	gen64;		/* the gen it was written with, as if gens never wrapped */
	u64	ptr2;		/* the second copy's pointer (member, gen, sector), or 0 */
	u64	cbase;		/* where the checksummed range starts, or 0 */
	u32	csum;
	u16	csum_sectors;
	u8	gen;
	u8	flags;
	u8	valid;
};

struct config {
	const char	*name;
	u32		bucket, block, max_sets;
	u64		nbuckets;
	u64		space;		/* sectors per inode */
	u32		maxlen;		/* longest extent */
	long		ops;		/* 0: the default */
	u32		bump;		/* gen bumps per 1000 ops */
	long		leaves;		/* resident leaves: 0 no limit, -1 none */
};

/* Everything one test runs on; torn down after each test. */
static struct {
	const struct config *cfg;
	struct bch_btree b;
	const char	*test;
	long		op;
	u64		seed;

	/* fake disk of node buckets */
	u8		*data;
	bool		*used;
	u8		*gen;
	u64		*free;
	u64		nfree;
	long		alloc_fail_in, alloc_faults;
	long		write_fail_in, write_faults;
	long		read_fail_in, read_faults;
	u64		ios, writes, frees;
	bool		io_ok, alloc_ok;
	long		bad_calls;
	/*
	 * Freed node buckets wait, as the kernel's allocator holds them:
	 * until the next flush is done (pend), or the one after if a split
	 * between the steps of a flush freed them (next).
	 */
	bool		*pending;
	u64		*pend, npend, *next, nnext;
	bool		window, in_step, read_pending;
	/* the last flush done, and every key inserted since it began */
	struct bch_bkey	dur_root;
	unsigned int	dur_level;
	bool		durable;
	struct bch_bkey	*jlog;
	u64		jlen, jcap, jstart;
	long		crash_checks, fuzzy_flushes, fuzzy_gcs, gc_shared;
	/*
	 * A GC pass in steps: what it counted of every sector, by its walk
	 * or, behind it, as the kernel counts inserts (ptr + 1; 0: nothing).
	 */
	bool		gc_on;
	u64		*gc_cov[NINODES];
	u8		*gc_walked[NINODES];

	u8		dgen[NDB];
	/*
	 * The same, never wrapping: a dead key the index dropped must stay
	 * dead in the model when its bucket's gen comes round again.
	 */
	u64		dgen64[NDB];
	u8		init_gen[NDB];	/* last_gc before any pass is durable */
	/*
	 * A GC pass lets the kernel move last_gc to the gens it started with
	 * once a flush after it is done: no key older may then be on disk,
	 * but for keys inserted stale since (doa: a bit per data bucket and
	 * gen). pass_*: the last pass started; dur_*: the last one a flush
	 * made durable, which durable_check() holds the durable tree's live
	 * keys to (a pass over it, through op_key_dead()).
	 */
	u8		pass_gen[NDB], dur_gen[NDB];
	u8		pass_doa[NDB][32], dur_doa[NDB][32];
	bool		pass_on, pass_done, dur_pass, check_dur;
	long		dur_dead;
	struct msec	*model[NINODES];
	u64		base[NINODES];
	unsigned int	max_depth;
	u64		splits, compactions, cows, set_writes;	/* over reloads */
	u64		merged_aside;
	long		failed_inserts;
	/* nodes read with no lock held (bch_btree_want()) */
	u8		*wbuf;
	long		want_fills, want_refused;
	/* the directed tests' buffers, freed by teardown() */
	struct msec	*snap[3];
	u8		*saved;
	void		*list;
} T;

static u64 test_seed;
static unsigned int test_index;	/* of the test running: the layout alternates */
static u32 force_key_bytes;	/* argv[4] v2 or v3: that layout only */

/* A failed check ends the test: back to main(), which tears it down. */
static jmp_buf fail_jmp;

static void check(bool ok, int line, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "FAIL %s [%s] seed %llu op %ld, line %d: %s\n", T.test,
		T.cfg ? T.cfg->name : "-", T.seed, T.op, line, what);
	longjmp(fail_jmp, 1);
}

#define CHECK(c)	check(!!(c), __LINE__, #c)

static size_t bucket_bytes(void)
{
	return (size_t)T.cfg->bucket << BCH_SECTOR_SHIFT;
}

static u8 *bucket_data(u64 bucket)
{
	return T.data + bucket * bucket_bytes();
}

static int op_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	u64 i;

	(void)b;
	if (!T.alloc_ok)
		T.bad_calls++;
	if (T.alloc_fail_in > 0 && !--T.alloc_fail_in) {
		T.alloc_faults++;
		return -ENOSPC;
	}
	if (!T.nfree)
		return -ENOSPC;
	i = rnd(T.nfree);
	*bucket = T.free[i];
	T.free[i] = T.free[--T.nfree];
	if (T.used[*bucket])
		T.bad_calls++;
	T.used[*bucket] = true;
	*gen = T.gen[*bucket];
	return 0;
}

static void op_free(struct bch_btree *b, u64 bucket)
{
	(void)b;
	if (bucket >= T.cfg->nbuckets || !T.used[bucket]) {
		T.bad_calls++;
		return;
	}
	T.used[bucket] = false;
	T.pending[bucket] = true;
	if (T.window && !T.in_step)
		T.next[T.nnext++] = bucket;
	else
		T.pend[T.npend++] = bucket;
	T.frees++;
}

/* A flush is done (or abandoned): free what it no longer names. */
static void frees_release(bool done)
{
	u64 i, bucket;

	for (i = 0; done && i < T.npend; i++) {
		bucket = T.pend[i];
		T.pending[bucket] = false;
		T.gen[bucket]++;	/* as an allocator reusing it would */
		T.free[T.nfree++] = bucket;
	}
	if (done)
		T.npend = 0;
	memcpy(T.pend + T.npend, T.next, T.nnext * sizeof(*T.next));
	T.npend += T.nnext;
	T.nnext = 0;
}

static int op_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		 u32 sectors)
{
	size_t bytes = (size_t)sectors << BCH_SECTOR_SHIFT;
	u8 *p;

	(void)b;
	T.ios++;
	if (!T.io_ok || bucket >= T.cfg->nbuckets ||
	    !(T.used[bucket] || (T.read_pending && !write && T.pending[bucket])) ||
	    offset + sectors > T.cfg->bucket || offset % T.cfg->block ||
	    sectors % T.cfg->block) {
		T.bad_calls++;
		return -EIO;
	}
	p = bucket_data(bucket) + ((size_t)offset << BCH_SECTOR_SHIFT);
	if (!write) {
		/* as from a context that must not wait: nothing may change */
		if (T.read_fail_in > 0 && !--T.read_fail_in) {
			T.read_faults++;
			return -EAGAIN;
		}
		memcpy(buf, p, bytes);
		return 0;
	}
	T.writes++;
	if (T.write_fail_in > 0 && !--T.write_fail_in) {
		/* torn: the first half made it */
		T.write_faults++;
		memcpy(p, buf, bytes / 2);
		return -EIO;
	}
	memcpy(p, buf, bytes);
	return 0;
}

static bool data_dead(u64 ptr, u8 gen)
{
	u64 db = (ptr - DATA_BASE) / DB;

	return ptr < DATA_BASE || db >= NDB || T.dgen[db] != gen;
}

static bool doa_test(u8 (*doa)[32], u64 db, u8 gen)
{
	return doa[db][gen / 8] & (1U << (gen % 8));
}

static void doa_set(u8 (*doa)[32], u64 db, u8 gen)
{
	doa[db][gen / 8] |= 1U << (gen % 8);
}

/* A key inserted with a gen its bucket has left already. */
static void note_doa(u64 ptr, u8 gen)
{
	u64 db = (ptr - DATA_BASE) / DB;

	if (T.pass_on)
		doa_set(T.pass_doa, db, gen);
	if (T.dur_pass)
		doa_set(T.dur_doa, db, gen);
}

static void pass_start(void)
{
	memcpy(T.pass_gen, T.dgen, sizeof(T.pass_gen));
	memset(T.pass_doa, 0, sizeof(T.pass_doa));
	T.pass_on = true;
	T.pass_done = false;
}

/*
 * A key of the durable tree, seen by a pass over it (hidden ones are
 * not): older than the gens of the pass it made durable is wrong.
 */
static void dur_key_check(const struct bch_bkey *k)
{
	u64 db = (bch_key_sector(k) - DATA_BASE) / DB;

	if (!T.check_dur || !T.dur_pass || bch_key_sector(k) < DATA_BASE || db >= NDB)
		return;
	if ((int8_t)(bch_key_gen(k) - T.dur_gen[db]) < 0 &&
	    !doa_test(T.dur_doa, db, bch_key_gen(k)))
		T.dur_dead++;
}

static bool op_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	(void)b;
	if (k->flags & BCH_KEY_HOLE)
		T.bad_calls++;
	dur_key_check(k);
	return data_dead(bch_key_sector(k), bch_key_gen(k));
}

static const struct bch_btree_ops test_ops = {
	.alloc		= op_alloc,
	.free		= op_free,
	.io		= op_io,
	.key_dead	= op_key_dead,
};

static bool msec_live(const struct msec *m)
{
	u64 db = (m->ptr - DATA_BASE) / DB;

	return m->valid && !data_dead(m->ptr, m->gen) && m->gen64 == T.dgen64[db];
}

/*
 * Does sector @j of @k map as @m says? Every pointer and the checksummed
 * range must have moved with each cut of the key.
 */
static bool msec_match(const struct msec *m, const struct bch_bkey *k, u64 j)
{
	u64 cbase = k->flags & BCH_KEY_CSUM ? bch_key_start(k) - k->csum_front : 0;

	return m->ptr == bch_key_sector(k) + j && m->gen == bch_key_gen(k) &&
	       bch_ptr_dev(k->ptr[0]) == 0 &&
	       m->ptr2 == (k->nptrs > 1 ? k->ptr[1] + j : 0) &&
	       m->cbase == cbase && m->csum == (k->flags & BCH_KEY_CSUM ? k->csum : 0) &&
	       m->csum_sectors == (k->flags & BCH_KEY_CSUM ? k->csum_sectors : 0);
}

/* The model's record of sector @j of @k. */
static void msec_set(struct msec *m, const struct bch_bkey *k, u64 j)
{
	m->valid = !(k->flags & BCH_KEY_HOLE);
	m->ptr = bch_key_sector(k) + j;
	m->ptr2 = k->nptrs > 1 ? k->ptr[1] + j : 0;	/* the sector moves, not member or gen */
	m->cbase = k->flags & BCH_KEY_CSUM ? bch_key_start(k) - k->csum_front : 0;
	m->csum = k->flags & BCH_KEY_CSUM ? k->csum : 0;
	m->csum_sectors = k->flags & BCH_KEY_CSUM ? k->csum_sectors : 0;
	m->gen = bch_key_gen(k);
	m->gen64 = 0;
	if (m->ptr >= DATA_BASE && (m->ptr - DATA_BASE) / DB < NDB) {
		u64 db = (m->ptr - DATA_BASE) / DB;

		m->gen64 = T.dgen64[db] - (u8)(T.dgen[db] - m->gen);
	}
	m->flags = k->flags;
}

static void setup(const char *test, const struct config *c)
{
	u64 i;

	memset(&T, 0, sizeof(T));
	T.seed = test_seed;
	T.test = test;
	T.cfg = c;
	T.data = calloc(c->nbuckets, (size_t)c->bucket << BCH_SECTOR_SHIFT);
	T.used = calloc(c->nbuckets, sizeof(*T.used));
	T.gen = calloc(c->nbuckets, sizeof(*T.gen));
	T.free = calloc(c->nbuckets, sizeof(*T.free));
	T.pending = calloc(c->nbuckets, sizeof(*T.pending));
	T.pend = calloc(c->nbuckets, sizeof(*T.pend));
	T.next = calloc(c->nbuckets, sizeof(*T.next));
	T.wbuf = malloc((size_t)c->bucket << BCH_SECTOR_SHIFT);
	if (!T.data || !T.used || !T.gen || !T.free || !T.pending || !T.pend || !T.next ||
	    !T.wbuf)
		abort();
	/* bucket 0 is never handed out: a zero pointer is always wrong */
	for (i = 1; i < c->nbuckets; i++) {
		T.free[T.nfree++] = i;
		T.gen[i] = rnd(256);
	}
	for (i = 0; i < NINODES; i++) {
		T.model[i] = calloc(c->space, sizeof(struct msec));
		if (!T.model[i])
			abort();
	}
	T.base[0] = 0;
	T.base[1] = 1000000;
	T.base[2] = U64_MAX - c->space;	/* keys ending at U64_MAX */
	for (i = 0; i < NDB; i++) {
		T.dgen[i] = rnd(256);
		T.dgen64[i] = 256 + T.dgen[i];
		T.init_gen[i] = T.dgen[i];
	}
	T.b.ops = &test_ops;
	T.b.priv = &T;
	T.b.bucket_sectors = c->bucket;
	T.b.block_sectors = c->block;
	T.b.max_sets = c->max_sets;
	/*
	 * Both layouts, alternately, so that every test runs in each over two
	 * seeds: node capacity and set sizes follow the key size.
	 */
	T.b.key_bytes = force_key_bytes ?:
			(test_seed + test_index) % 2 ? BCH_KEY_BYTES_V2 : BCH_KEY_BYTES_V3;
	T.b.max_leaves = c->leaves < 0 ? 0 : c->leaves ? (u64)c->leaves : U64_MAX;
	/* Often small, so that nodes of every size keep several open sets. */
	T.b.open_set_keys = rnd(4) ? 1 + rnd(8) : 0;
}

static void teardown(void)
{
	unsigned int i;

	bch_btree_free(&T.b);
	free(T.data);
	free(T.used);
	free(T.gen);
	free(T.free);
	free(T.pending);
	free(T.pend);
	free(T.next);
	free(T.wbuf);
	free(T.jlog);
	for (i = 0; i < NINODES; i++) {
		free(T.model[i]);
		free(T.gc_cov[i]);
		free(T.gc_walked[i]);
	}
	for (i = 0; i < ARRAY_SIZE(T.snap); i++)
		free(T.snap[i]);
	free(T.saved);
	free(T.list);
	T.cfg = NULL;
}

/* Free the tree, keeping its counters. */
static void tree_free(void)
{
	T.splits += T.b.splits;
	T.compactions += T.b.compactions;
	T.merged_aside += T.b.merged_aside;
	T.cows += T.b.cows;
	T.set_writes += T.b.set_writes;
	T.b.splits = 0;
	T.b.compactions = 0;
	T.b.merged_aside = 0;
	T.b.cows = 0;
	T.b.set_writes = 0;
	bch_btree_free(&T.b);
}

/* Calls that may do IO. */

/* A flush is done: what it began with is on disk; the journal is what came since. */
static void flush_done(u64 jstart)
{
	bch_btree_root(&T.b, &T.dur_root, &T.dur_level);
	T.durable = true;
	if (T.pass_done) {
		memcpy(T.dur_gen, T.pass_gen, sizeof(T.dur_gen));
		memcpy(T.dur_doa, T.pass_doa, sizeof(T.dur_doa));
		T.dur_pass = true;
		T.pass_done = false;
		T.pass_on = false;
	}
	if (jstart) {
		memmove(T.jlog, T.jlog + jstart, (T.jlen - jstart) * sizeof(*T.jlog));
		T.jlen -= jstart;
	}
	frees_release(true);
}

/* A whole flush; on success the journal before @jstart is dropped. */
static int do_flush_from(u64 jstart)
{
	int r;

	T.io_ok = true;
	T.alloc_ok = true;
	r = bch_btree_flush(&T.b);
	T.io_ok = false;
	T.alloc_ok = false;
	if (r)
		frees_release(false);
	else
		flush_done(jstart);
	return r;
}

static int do_flush(void)
{
	return do_flush_from(T.jlen);
}

static int do_load(const struct bch_bkey *root, unsigned int level)
{
	int r;

	T.io_ok = true;
	r = bch_btree_load(&T.b, root, level);
	T.io_ok = false;
	return r;
}

static int do_insert(const struct bch_bkey *k)
{
	int r;

	T.alloc_ok = true;
	T.io_ok = true;
	r = bch_btree_insert(&T.b, k);
	T.io_ok = false;
	T.alloc_ok = false;
	if (bch_btree_depth(&T.b) > T.max_depth)
		T.max_depth = bch_btree_depth(&T.b);
	return r;
}

/*
 * A lookup; one that needs a leaf that is not resident must say which,
 * and then the loading one must find it.
 */
static int lookup(u32 inode, u64 start, u64 end, struct bch_bkey *out)
{
	u64 reads = T.b.reads;
	int r;

	r = bch_btree_lookup(&T.b, inode, start, end, out);
	if (r != -EAGAIN)
		return r;
	CHECK(out->inode == inode && out->end >= start && out->end < end);
	T.io_ok = true;
	r = bch_btree_lookup_load(&T.b, inode, start, end, out);
	T.io_ok = false;
	CHECK(T.b.reads > reads);
	return r;
}

/* Compare [a, e) of model inode @i (offsets from its base) with lookups. */
static int compare_range(unsigned int i, u64 a, u64 e)
{
	u64 base = T.base[i], pos = a, j;
	struct bch_bkey out;
	int r;

	e = min(e, T.cfg->space);
	while (pos < e) {
		r = lookup(inodes[i], base + pos, base + e, &out);
		CHECK(r == 0 || r == 1);
		CHECK(out.size >= 1 && out.size <= e - pos);
		CHECK(out.inode == inodes[i] && out.end == base + pos + out.size);
		for (j = 0; j < out.size; j++) {
			const struct msec *m = &T.model[i][pos + j];

			if (r) {
				CHECK(msec_live(m));
				CHECK(msec_match(m, &out, j));
				CHECK(m->flags == out.flags);
			} else {
				CHECK(!msec_live(m));
			}
		}
		/* a hole ends at the next live sector */
		if (!r && pos + out.size < e)
			CHECK(msec_live(&T.model[i][pos + out.size]));
		pos += out.size;
	}
	return 1;
}

/*
 * A lookup as under a shared lock, from memory only (a missing leaf ends
 * it): the first piece of a random range must agree with the model.
 */
static int shared_lookup(void)
{
	unsigned int i = rnd(NINODES);
	u64 a = rnd(T.cfg->space), e = min(a + 1 + rnd(256), T.cfg->space), j;
	struct bch_bkey out;
	int r;

	r = bch_btree_lookup(&T.b, inodes[i], T.base[i] + a, T.base[i] + e, &out);
	if (r == -EAGAIN)
		return 1;
	CHECK(r == 0 || r == 1);
	CHECK(out.size >= 1 && out.size <= e - a);
	for (j = 0; j < out.size; j++) {
		const struct msec *m = &T.model[i][a + j];

		CHECK(r ? msec_live(m) && msec_match(m, &out, j) : !msec_live(m));
	}
	return 1;
}

static int compare_all(void)
{
	struct bch_bkey out;
	unsigned int i;

	for (i = 0; i < NINODES; i++)
		if (!compare_range(i, 0, T.cfg->space))
			return 0;
	/* around the modelled ranges and in other inodes: nothing */
	CHECK(lookup(inodes[1], T.base[1] - 100, T.base[1], &out) == 0);
	CHECK(out.size == 100);
	CHECK(lookup(inodes[0], T.cfg->space, T.cfg->space + 5000, &out) == 0);
	CHECK(out.size == 5000);
	CHECK(lookup(3, 0, U64_MAX, &out) == 0 && out.size == U32_MAX);
	CHECK(lookup(U32_MAX - 1, U64_MAX - 10, U64_MAX, &out) == 0);
	CHECK(out.size == 10);
	return 1;
}

struct gc_state {
	u8	*seen_bucket;
	u8	*covered[NINODES];
	u64	nodes, sectors;
	long	bad;
};

static void gc_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct gc_state *g = arg;
	unsigned int i;
	u64 j, bucket;

	if (is_node) {
		bucket = bch_key_sector(k) / b->bucket_sectors;
		if (bch_key_sector(k) % b->bucket_sectors || bucket >= T.cfg->nbuckets ||
		    !T.used[bucket] || g->seen_bucket[bucket] || bch_key_gen(k) != T.gen[bucket] ||
		    k->size != 1) {
			g->bad++;
			return;
		}
		g->seen_bucket[bucket] = 1;
		g->nodes++;
		return;
	}
	for (i = 0; i < NINODES && inodes[i] != k->inode; i++)
		;
	if (i == NINODES || !k->size || (k->flags & BCH_KEY_HOLE) ||
	    data_dead(bch_key_sector(k), bch_key_gen(k)) || bch_key_start(k) < T.base[i] ||
	    k->end - T.base[i] > T.cfg->space) {
		g->bad++;
		return;
	}
	for (j = 0; j < k->size; j++) {
		u64 s = bch_key_start(k) - T.base[i] + j;
		const struct msec *m = &T.model[i][s];

		if (!msec_live(m) || m->ptr != bch_key_sector(k) + j || g->covered[i][s]++)
			g->bad++;
	}
	g->sectors += k->size;
}

/* GC, then check that it reported every node and every live sector once. */
static int gc_check(void)
{
	struct gc_state g = { 0 };
	u64 used = 0, live = 0, j;
	unsigned int i;
	int r;

	g.seen_bucket = calloc(T.cfg->nbuckets, 1);
	for (i = 0; i < NINODES; i++)
		g.covered[i] = calloc(T.cfg->space, 1);
	T.io_ok = true;
	pass_start();
	r = bch_btree_gc(&T.b, gc_fn, &g);
	T.pass_done = !r;
	T.io_ok = false;
	for (j = 0; j < T.cfg->nbuckets; j++)
		used += T.used[j];
	for (i = 0; i < NINODES; i++)
		for (j = 0; j < T.cfg->space; j++)
			live += msec_live(&T.model[i][j]);
	free(g.seen_bucket);
	for (i = 0; i < NINODES; i++)
		free(g.covered[i]);
	CHECK(r == 0);
	CHECK(g.bad == 0);
	CHECK(g.nodes == used);		/* no bucket leaked, none lost */
	CHECK(bch_btree_nodes(&T.b) <= g.nodes);
	CHECK(g.sectors == live);
	return 1;
}

/* After a flush every leaf is clean: at most the budget (and the root) stay. */
static int budget_check(void)
{
	u64 max = T.b.max_leaves;

	if (max != U64_MAX)
		CHECK(T.b.leaves <= max + 1);
	CHECK(T.b.leaves <= bch_btree_nodes(&T.b));
	return 1;
}

/* Flush, maybe with a torn write or a failed allocation, until it works. */
static int flush_check(bool faults)
{
	long wf = T.write_faults, af = T.alloc_faults;
	u64 writes;
	int r;

	if (faults && rnd(3) == 0)
		T.write_fail_in = 1 + rnd(4);
	else if (faults && rnd(2) == 0)
		T.alloc_fail_in = 1 + rnd(2);
	r = do_flush();
	T.write_fail_in = 0;
	T.alloc_fail_in = 0;
	if (r)
		CHECK(T.write_faults != wf || T.alloc_faults != af);
	CHECK(do_flush() == 0);
	/* a second flush has nothing to write */
	writes = T.writes;
	CHECK(do_flush() == 0);
	CHECK(T.writes == writes);
	return budget_check();
}

static int reload(bool faults)
{
	struct bch_bkey root;
	unsigned int level;

	if (!flush_check(faults))
		return 0;
	bch_btree_root(&T.b, &root, &level);
	CHECK(root.size == 1 && level + 1 == bch_btree_depth(&T.b));
	tree_free();
	CHECK(mem_live == 0);
	CHECK(do_load(&root, level) == 0);
	CHECK(bch_btree_depth(&T.b) == level + 1);
	return compare_all();
}

static void model_insert(const struct bch_bkey *k)
{
	unsigned int i;
	u64 j, s;

	/* the journal */
	if (T.jlen == T.jcap) {
		T.jcap = T.jcap ? 2 * T.jcap : 256;
		T.jlog = realloc(T.jlog, T.jcap * sizeof(*T.jlog));
		if (!T.jlog)
			abort();
	}
	T.jlog[T.jlen++] = *k;

	for (i = 0; inodes[i] != k->inode; i++)
		;
	s = bch_key_start(k) - T.base[i];
	if (T.gc_on && !(k->flags & BCH_KEY_HOLE))
		for (j = 0; j < bch_btree_gc_passed(&T.b, k); j++)
			T.gc_cov[i][s + j] = bch_key_sector(k) + j + 1;
	for (j = 0; j < k->size; j++)
		msec_set(&T.model[i][s + j], k, j);
}

static u32 pick_len(void)
{
	u32 max = T.cfg->maxlen;

	switch (rnd(4)) {
	case 0:
	case 1:
		return 1 + rnd(min(max, 8U));
	case 2:
		return 1 + rnd(min(max, 64U));
	default:
		return 1 + rnd(max);
	}
}

/* A random extent, a hole one time in ten, within @window of inode @i. */
static void key_extras(struct bch_bkey *k, u32 pick, u32 csum);

static void random_key(struct bch_bkey *k, unsigned int i, u64 window)
{
	u32 len = pick_len();
	u64 off, db;

	window = min(window, T.cfg->space);
	len = min_t(u64, len, window);
	off = rnd(window - len + 1);
	memset(k, 0, sizeof(*k));
	k->inode = inodes[i];
	k->size = len;
	k->end = T.base[i] + off + len;
	if (rnd(10) == 0) {
		k->flags = BCH_KEY_HOLE;
		return;
	}
	db = rnd(NDB);
	k->ptr[0] = bch_ptr(0, T.dgen[db] - (rnd(30) == 0),	/* sometimes stale already */
			    DATA_BASE + db * DB + rnd(DB - len + 1));
	k->nptrs = 1;
	if (bch_key_gen(k) != T.dgen[db])
		note_doa(bch_key_sector(k), bch_key_gen(k));
	k->flags = rnd(2) ? BCH_KEY_DIRTY : 0;
	if (T.b.key_bytes == BCH_KEY_BYTES_V2)
		return;		/* one pointer, no checksum */
	key_extras(k, rnd(4), rnd(1U << 31) + 1);
}

/*
 * Version 3: by @pick's bits, a second copy on another member and a
 * checksummed range around the key. Both must move with every cut.
 */
static void key_extras(struct bch_bkey *k, u32 pick, u32 csum)
{
	if (T.b.key_bytes == BCH_KEY_BYTES_V2)
		return;		/* one pointer, no checksum */
	if (pick & 1) {
		k->ptr[1] = bch_ptr(1 + csum % 7, csum >> 8,
				    DATA_BASE + (csum >> 4) % (DB - k->size + 1));
		k->nptrs = 2;
	}
	if ((pick & 2) && k->size < 60000) {
		k->flags |= BCH_KEY_CSUM;
		k->csum = csum;
		k->csum_front = csum % 4;
		k->csum_sectors = k->csum_front + k->size + (csum >> 2) % 4;
	}
}

static int random_insert(void)
{
	long mf = mem_faults, af = T.alloc_faults;
	unsigned int i = rnd(NINODES);
	struct bch_bkey k;
	u64 s;
	int r;

	random_key(&k, i, T.cfg->space);
	long rf = T.read_faults;

	if (rnd(8) == 0) {
		switch (rnd(3)) {
		case 0:
			mem_fail_in = 1 + rnd(3);
			break;
		case 1:
			T.alloc_fail_in = 1 + rnd(3);
			break;
		default:
			T.read_fail_in = 1 + rnd(2);
		}
	}
	r = do_insert(&k);
	mem_fail_in = 0;
	T.alloc_fail_in = 0;
	T.read_fail_in = 0;
	s = bch_key_start(&k) - T.base[i];
	if (r) {
		/* only an injected fault may fail it, and then nothing changed */
		CHECK(mem_faults != mf || T.alloc_faults != af || T.read_faults != rf);
		CHECK(T.read_faults == rf || r == -EAGAIN);
		T.failed_inserts++;
		return compare_range(i, s > 300 ? s - 300 : 0, s + k.size + 300);
	}
	model_insert(&k);
	if (rnd(8) == 0)
		return compare_range(i, s > 20 ? s - 20 : 0, s + k.size + 20);
	return 1;
}

static int random_lookup(void)
{
	unsigned int i = rnd(NINODES);
	u64 a = rnd(T.cfg->space), len = 1 + rnd(rnd(2) ? 64 : 2048);
	int r;

	T.alloc_ok = false;
	r = compare_range(i, a, a + len);
	return r;
}

/*
 * A node read with no lock held, as the kernel reads ahead: named, read,
 * then the tree changes (inserts, splits, flushes, evictions) before the
 * fill. The fill takes it or refuses; lookups must agree with the model.
 */
static int random_want_fill(void)
{
	unsigned int i = rnd(NINODES), n;
	u64 a = rnd(T.cfg->space), e = min(a + 1 + rnd(256), T.cfg->space);
	struct bch_btree_want w;
	int r;

	if (!bch_btree_want(&T.b, inodes[i], T.base[i] + a, T.base[i] + e, &w))
		return 1;
	T.io_ok = true;
	r = bch_btree_want_read(&T.b, &w, T.wbuf);
	T.io_ok = false;
	CHECK(r == 0);
	for (n = rnd(4); n--;) {
		switch (rnd(4)) {
		case 0:
		case 1:
			CHECK(random_insert());
			break;
		case 2:
			bch_btree_evict(&T.b, rnd(2) ? 0 : T.b.leaves / 2);
			break;
		default:
			CHECK(flush_check(false));
		}
	}
	r = bch_btree_want_fill(&T.b, &w, T.wbuf, rnd(2));
	CHECK(r == 0 || r == -EAGAIN);
	T.want_fills += !r;
	T.want_refused += r == -EAGAIN;
	CHECK(compare_range(i, a, e));
	if (!r && rnd(2)) {
		/* What goes to disk through the filled node, read back. */
		struct bch_bkey k = {
			.inode	= inodes[i],
			.size	= 1,
			.end	= T.base[i] + a + 1,
			.nptrs	= 1,
		};
		u64 sector = DATA_BASE + rnd(DB);

		k.ptr[0] = bch_ptr(0, T.dgen[(sector - DATA_BASE) / DB], sector);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
		CHECK(flush_check(false));
		bch_btree_evict(&T.b, 0);
		CHECK(compare_range(i, a, e));
	}
	bch_btree_evict(&T.b, T.b.max_leaves);
	return 1;
}

/* Kill a data bucket; the sectors that pointed there now read as holes. */
static int bump_gen(void)
{
	unsigned int i = rnd(NINODES), found = 0;
	u64 db = rnd(NDB), j;
	u8 last_gc = T.dur_pass ? T.dur_gen[db] : T.init_gen[db];

	/* As the kernel: no gen moves BCH_GC_GEN_MAX past last_gc before a GC. */
	if ((u8)(T.dgen[db] + 1 - last_gc) >= 64)
		return 1;
	T.dgen[db]++;
	T.dgen64[db]++;
	for (j = rnd(T.cfg->space); j < T.cfg->space && found < 3; j++) {
		const struct msec *m = &T.model[i][j];

		if (m->valid && (m->ptr - DATA_BASE) / DB == db) {
			CHECK(!msec_live(m));
			CHECK(compare_range(i, j > 10 ? j - 10 : 0, j + 300));
			found++;
			j += 300;
		}
	}
	return 1;
}

/* T.b becomes an empty tree set up as @live, for loading the durable root. */
static void durable_tree(const struct bch_btree *live, u64 max_leaves)
{
	memset(&T.b, 0, sizeof(T.b));
	T.b.ops = live->ops;
	T.b.priv = live->priv;
	T.b.bucket_sectors = live->bucket_sectors;
	T.b.block_sectors = live->block_sectors;
	T.b.max_sets = live->max_sets;
	T.b.key_bytes = live->key_bytes;
	T.b.open_set_keys = live->open_set_keys;
	T.b.max_leaves = max_leaves;
}

/*
 * A crash now: the last flush done, loaded into a tree of its own, and
 * the journal replayed over it must read as the model. What the replay
 * allocates is given back after.
 */
static int crash_check(void)
{
	size_t nb = T.cfg->nbuckets;
	struct bch_btree live = T.b;
	bool *used, *pending;
	u64 *free_, *pend, *next;
	u64 nfree = T.nfree, npend = T.npend, nnext = T.nnext, i;
	u8 *gen;
	int r = 1;

	if (!T.durable)
		return 1;
	used = malloc(nb);
	pending = malloc(nb);
	gen = malloc(nb);
	free_ = malloc(nb * sizeof(u64));
	pend = malloc(nb * sizeof(u64));
	next = malloc(nb * sizeof(u64));
	if (!used || !pending || !free_ || !pend || !next || !gen)
		abort();
	memcpy(used, T.used, nb);
	memcpy(pending, T.pending, nb);
	memcpy(gen, T.gen, nb);
	memcpy(free_, T.free, nb * sizeof(u64));
	memcpy(pend, T.pend, nb * sizeof(u64));
	memcpy(next, T.next, nb * sizeof(u64));

	durable_tree(&live, live.max_leaves);
	/* after the crash, buckets not yet reused are the durable tree's */
	for (i = 0; i < nb; i++)
		T.used[i] |= T.pending[i];
	T.npend = 0;
	T.nnext = 0;
	T.io_ok = true;
	if (bch_btree_load(&T.b, &T.dur_root, T.dur_level))
		r = 0;
	T.io_ok = false;
	for (i = 0; r && i < T.jlen; i++)
		if (do_insert(&T.jlog[i]))
			r = 0;
	if (r)
		r = compare_all();
	bch_btree_free(&T.b);
	T.b = live;

	memcpy(T.used, used, nb);
	memcpy(T.pending, pending, nb);
	memcpy(T.gen, gen, nb);
	memcpy(T.free, free_, nb * sizeof(u64));
	memcpy(T.pend, pend, nb * sizeof(u64));
	memcpy(T.next, next, nb * sizeof(u64));
	T.nfree = nfree;
	T.npend = npend;
	T.nnext = nnext;
	free(used);
	free(pending);
	free(gen);
	free(free_);
	free(pend);
	free(next);
	T.crash_checks++;
	CHECK(r);
	return 1;
}

static void dur_gc_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node,
		      void *arg)
{
	(void)b;
	(void)k;
	(void)is_node;
	(void)arg;
}

/*
 * Every node the last flush done names reads back (cheaper than a
 * crash_check()), and holds no key dead before the last GC pass it made
 * durable.
 */
static int durable_check(void)
{
	struct bch_btree live = T.b;
	int r;

	if (!T.durable)
		return 1;
	durable_tree(&live, U64_MAX);
	T.read_pending = true;
	T.io_ok = true;
	r = bch_btree_load(&T.b, &T.dur_root, T.dur_level);
	if (!r)
		r = bch_btree_read_all(&T.b);
	T.io_ok = false;
	T.read_pending = false;
	if (!r) {
		/* its live keys, as a pass over it sees them */
		T.check_dur = true;
		T.dur_dead = 0;
		r = bch_btree_gc(&T.b, dur_gc_fn, NULL);
		T.check_dur = false;
	}
	bch_btree_free(&T.b);
	T.b = live;
	CHECK(r == 0);
	CHECK(T.dur_dead == 0);
	return 1;
}

/*
 * What IO does between the steps of a flush or a GC pass, as a checkpoint
 * lets it: a few inserts, lookups and gen bumps.
 */
static int between_steps(void)
{
	unsigned int n;

	for (n = rnd(4); n; n--) {
		switch (rnd(8)) {
		case 0:
			CHECK(random_lookup());
			break;
		case 1:
			CHECK(bump_gen());
			break;
		default:
			CHECK(random_insert());
		}
	}
	return 1;
}

/*
 * A flush in steps with inserts, lookups and gen bumps between them, as
 * a checkpoint lets IO go on; a crash at any step, or after the flush,
 * must lose nothing the journal has. Some steps fail.
 */
static int fuzzy_flush(void)
{
	long wf = T.write_faults, af = T.alloc_faults;
	u64 jstart = T.jlen;
	unsigned int n;
	int r, w;

	T.window = true;
	bch_btree_flush_start(&T.b);
	for (;;) {
		if (rnd(64) == 0)
			T.write_fail_in = 1;
		else if (rnd(64) == 0)
			T.alloc_fail_in = 1;
		/* the step does no IO; its write allocates and frees nothing */
		T.in_step = true;
		T.alloc_ok = true;
		r = bch_btree_flush_step(&T.b);
		T.alloc_ok = false;
		if (r >= 0) {
			/* lookups go on while the node is written */
			for (n = rnd(3); n; n--)
				CHECK(shared_lookup());
			T.io_ok = true;
			w = bch_btree_flush_write(&T.b);
			T.io_ok = false;
			if (w)
				r = w;
		}
		T.in_step = false;
		T.write_fail_in = 0;
		T.alloc_fail_in = 0;
		if (r <= 0)
			break;
		CHECK(between_steps());
		if (rnd(256) == 0)
			CHECK(crash_check());
		else if (rnd(16) == 0)
			CHECK(durable_check());
	}
	T.window = false;
	if (r) {
		CHECK(T.write_faults != wf || T.alloc_faults != af);
		frees_release(false);
	} else {
		flush_done(jstart);
		T.fuzzy_flushes++;
	}
	if (r || rnd(4) == 0)
		CHECK(crash_check());
	return durable_check();
}

static void fuzzy_gc_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node,
			void *arg)
{
	unsigned int i;
	u64 j, s;

	(void)arg;
	if (is_node)
		return;
	for (i = 0; i < NINODES && inodes[i] != k->inode; i++)
		;
	if (i == NINODES || !k->size || (k->flags & BCH_KEY_HOLE) ||
	    data_dead(bch_key_sector(k), bch_key_gen(k)) || bch_key_start(k) < T.base[i] ||
	    k->end - T.base[i] > T.cfg->space ||
	    bch_btree_gc_passed(b, k) != 0) {
		T.bad_calls++;
		return;
	}
	s = bch_key_start(k) - T.base[i];
	for (j = 0; j < k->size; j++) {
		const struct msec *m = &T.model[i][s + j];

		/* live, and reported once a pass */
		if (!msec_live(m) || m->ptr != bch_key_sector(k) + j || T.gc_walked[i][s + j]++)
			T.bad_calls++;
		T.gc_cov[i][s + j] = bch_key_sector(k) + j + 1;
	}
}

/*
 * A GC pass in steps with inserts, lookups and gen bumps between them, as
 * a checkpoint lets IO go on: every sector live at its end must have been
 * counted, by the walk or as an insert behind it. Some steps fail a read.
 */
static int fuzzy_gc(void)
{
	struct bch_btree_want w;
	long rf = T.read_faults;
	unsigned int i;
	u64 j;
	int r;

	for (i = 0; i < NINODES; i++) {
		T.gc_cov[i] = calloc(T.cfg->space, sizeof(*T.gc_cov[i]));
		T.gc_walked[i] = calloc(T.cfg->space, 1);
	}
	T.gc_on = true;
	pass_start();
	bch_btree_gc_start(&T.b);
	for (;;) {
		r = -EAGAIN;
		if (rnd(2)) {
			/* as under a shared lock: no IO, no change but counting */
			struct bch_bkey pos = T.b.gc_pos;
			u64 nodes = T.b.nodes, comp = T.b.compactions;
			u64 ev = T.b.evictions;

			r = bch_btree_gc_step_shared(&T.b, fuzzy_gc_fn, NULL);
			CHECK(T.b.nodes == nodes && T.b.compactions == comp &&
			      T.b.evictions == ev);
			if (r == -EAGAIN)
				CHECK(!bch_bkey_cmp(&pos, &T.b.gc_pos));
			else
				CHECK(r >= 0);
			T.gc_shared += r >= 0;
		}
		if (r == -EAGAIN) {
			/* the writers let in as the shared lock is traded */
			if (rnd(2))
				CHECK(between_steps());
			if (rnd(64) == 0)
				T.read_fail_in = 1;
			T.io_ok = true;
			r = bch_btree_gc_step(&T.b, fuzzy_gc_fn, NULL);
			T.io_ok = false;
			T.read_fail_in = 0;
		}
		if (r <= 0)
			break;
		if (T.b.max_leaves != U64_MAX && rnd(2) && bch_btree_gc_want(&T.b, &w)) {
			/* the next step's node, read with the tree changing */
			T.io_ok = true;
			CHECK(bch_btree_want_read(&T.b, &w, T.wbuf) == 0);
			T.io_ok = false;
			CHECK(between_steps());
			r = bch_btree_want_fill(&T.b, &w, T.wbuf, true);
			CHECK(r == 0 || r == -EAGAIN);
			T.want_fills += !r;
			T.want_refused += r == -EAGAIN;
		} else {
			CHECK(between_steps());
		}
	}
	T.gc_on = false;
	T.pass_done = !r;
	if (r) {
		CHECK(T.read_faults != rf);
	} else {
		for (i = 0; i < NINODES; i++)
			for (j = 0; j < T.cfg->space; j++)
				if (msec_live(&T.model[i][j]))
					CHECK(T.gc_cov[i][j] == T.model[i][j].ptr + 1);
		T.fuzzy_gcs++;
	}
	for (i = 0; i < NINODES; i++) {
		free(T.gc_cov[i]);
		free(T.gc_walked[i]);
		T.gc_cov[i] = NULL;
		T.gc_walked[i] = NULL;
	}
	return compare_all();
}

static int run_random(const struct config *c, u64 seed, long ops)
{
	long n;
	u64 r;

	setup("random", c);
	(void)seed;
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	T.alloc_ok = false;
	CHECK(compare_all());
	if (c->ops)
		ops = c->ops;
	for (n = 0; n < ops; n++) {
		T.op = n;
		r = rnd(1000);
		/* whole-keyspace checks cost more in the big configs */
		if (r >= 900 + c->bump && r < 940 && c->space > 8192 && rnd(4))
			r = 800;
		if (r >= 990 && c->space > 8192 && rnd(4))
			r = 950;
		if (r < 700) {
			CHECK(random_insert());
		} else if (r < 900) {
			if (T.b.max_leaves != U64_MAX && rnd(3) == 0)
				CHECK(random_want_fill());
			else
				CHECK(random_lookup());
		} else if (r < 900 + c->bump) {
			CHECK(bump_gen());
		} else if (r < 940) {
			if (rnd(2))
				CHECK(fuzzy_gc());
			else
				CHECK(gc_check());
			if (rnd(4) == 0)
				CHECK(compare_all());
		} else if (r < 965) {
			CHECK(flush_check(true));
		} else if (r < 990) {
			CHECK(fuzzy_flush());
		} else {
			CHECK(reload(true));
			CHECK(gc_check());
		}
		CHECK(T.bad_calls == 0);
	}
	T.op = -1;
	CHECK(reload(false));
	CHECK(gc_check());
	CHECK(compare_all());
	CHECK(T.bad_calls == 0);
	printf("  %-14s %5ld ops: depth %u (max %u), %llu nodes, %llu splits, %llu compactions,",
	       c->name, ops, bch_btree_depth(&T.b), T.max_depth, bch_btree_nodes(&T.b),
	       T.splits + T.b.splits, T.compactions + T.b.compactions);
	printf(" %llu cows, %llu set writes; faults %ld/%ld/%ld/%ld mem/alloc/io/read, %ld failed inserts;",
	       T.cows + T.b.cows, T.set_writes + T.b.set_writes, mem_faults, T.alloc_faults,
	       T.write_faults, T.read_faults, T.failed_inserts);
	printf(" %llu resident, %llu reads, %llu evictions; %ld fuzzy flushes, %ld fuzzy gcs, %ld crash checks;",
	       bch_btree_nodes(&T.b), T.b.reads, T.b.evictions, T.fuzzy_flushes, T.fuzzy_gcs,
	       T.crash_checks);
	printf(" %ld/%ld reads ahead taken/refused; %ld gc steps shared, %llu merged shared\n",
	       T.want_fills, T.want_refused, T.gc_shared, T.merged_aside + T.b.merged_aside);
	return 1;
}

/* Byte offsets of the valid sets of the node in @bucket, as load sees them. */
static unsigned int node_sets(u64 bucket, size_t *offs, unsigned int max)
{
	size_t off = 0, bytes;
	unsigned int n = 0;
	u64 seq = 0;

	while (n < max && off < bucket_bytes()) {
		struct bch_bkey keys[1024];
		const struct bch_bset_disk *d = (void *)(bucket_data(bucket) + off);

		if (le32_to_cpu(d->nkeys) > ARRAY_SIZE(keys))
			break;
		if (bch_bset_unpack(d, bucket_bytes() - off, &seq, le16_to_cpu(d->level),
				    n, keys, ARRAY_SIZE(keys), T.cfg->block << BCH_SECTOR_SHIFT,
				    T.b.key_bytes, &bytes) < 0)
			break;
		offs[n++] = off;
		off += bytes;
	}
	return n;
}

static struct msec *model_save(void)
{
	struct msec *m = malloc(NINODES * T.cfg->space * sizeof(*m));
	unsigned int i;

	for (i = 0; i < NINODES; i++)
		memcpy(m + i * T.cfg->space, T.model[i], T.cfg->space * sizeof(*m));
	return m;
}

static void model_restore(const struct msec *m)
{
	unsigned int i;

	for (i = 0; i < NINODES; i++)
		memcpy(T.model[i], m + i * T.cfg->space, T.cfg->space * sizeof(*m));
}

static void walk_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	(void)b;
	(void)k;
	(void)is_node;
	(void)arg;
}

/* Read every node (a GC pass that reports nothing). */
static int walk(void)
{
	int r;

	T.io_ok = true;
	r = bch_btree_gc(&T.b, walk_fn, NULL);
	T.io_ok = false;
	return r;
}

/* Reload from @root after damaging the disk; expect the model @m or failure. */
static int load_expect(const struct bch_bkey *root, unsigned int level, const struct msec *m)
{
	int r;

	bch_btree_free(&T.b);
	CHECK(mem_live == 0);
	r = do_load(root, level);
	if (!r && !m)
		r = walk();		/* nodes are read when first needed */
	if (!m) {
		CHECK(r < 0);
		bch_btree_free(&T.b);
		CHECK(mem_live == 0);	/* nothing leaked */
		bch_btree_free(&T.b);	/* and freeing again is harmless */
		return 1;
	}
	CHECK(r == 0);
	model_restore(m);
	return compare_all();
}

static const struct config torn_cfg = { "1024/8", 1024, 8, 4, 16, 4096, 256, 0, 0, 0 };

/*
 * A root leaf with three appended sets, each overriding parts of the
 * older ones. A torn newest set is ignored; a broken middle one hides
 * everything after it; a broken first one fails the load.
 */
static int test_torn_set(void)
{
	struct bch_bkey root, root0 = { 0 }, k;
	unsigned int level, round, n;
	size_t offs[8];
	u8 *node;

	setup("torn-set", &torn_cfg);
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	for (round = 0; round < 3; round++) {
		for (n = 0; n < 40; n++) {
			random_key(&k, 0, 1500);
			CHECK(do_insert(&k) == 0);
			model_insert(&k);
		}
		CHECK(flush_check(false));
		bch_btree_root(&T.b, &root, &level);
		if (!round)
			root0 = root;
		/* appended */
		CHECK(level == 0 && bch_key_sector(&root) == bch_key_sector(&root0));
		T.snap[round] = model_save();
	}
	node = bucket_data(bch_key_sector(&root) / T.cfg->bucket);
	CHECK(node_sets(bch_key_sector(&root) / T.cfg->bucket, offs, 8) == 3);
	T.saved = malloc(bucket_bytes());
	memcpy(T.saved, node, bucket_bytes());

	/* a bit flipped in the last set: the first two load */
	node[offs[2] + sizeof(struct bch_bset_disk) + 9] ^= 4;
	load_expect(&root, 0, T.snap[1]);
	/* and the next append goes where the torn set was */
	for (n = 0; n < 10; n++) {
		random_key(&k, 0, 1500);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
	}
	reload(false);
	bch_btree_root(&T.b, &root, &level);
	CHECK(bch_key_sector(&root) == bch_key_sector(&root0));
	CHECK(node_sets(bch_key_sector(&root) / T.cfg->bucket, offs, 8) == 3);

	/* the middle set's magic broken: only the first */
	memcpy(node, T.saved, bucket_bytes());
	node[offs[1] + 4] ^= 1;
	load_expect(&root, 0, T.snap[0]);
	/* a bad csum in the first set: no node at all */
	memcpy(node, T.saved, bucket_bytes());
	node[100] ^= 0x80;
	load_expect(&root, 0, NULL);
	/* untouched: all three */
	memcpy(node, T.saved, bucket_bytes());
	load_expect(&root, 0, T.snap[2]);
	CHECK(T.bad_calls == 0);
	return 1;
}

static const struct config corrupt_cfg = { "2/1", 2, 1, 4, 4096, 4096, 64, 0, 0, 0 };

struct node_list {
	u64	buckets[4096];
	u64	n;
};

static void list_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct node_list *l = arg;

	if (is_node && l->n < ARRAY_SIZE(l->buckets))
		l->buckets[l->n++] = bch_key_sector(k) / b->bucket_sectors;
}

/* A node with garbage, someone else's sets or nothing fails the load. */
static int test_corrupt_node(void)
{
	struct node_list *l = calloc(1, sizeof(*l));
	u64 victim = 0, other = 0, i, rootb;
	struct bch_bkey root, k;
	unsigned int level, n;
	size_t offs[8];

	setup("corrupt-node", &corrupt_cfg);
	T.list = l;
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	for (n = 0; n < 3000; n++) {
		random_key(&k, rnd(NINODES), T.cfg->space);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
	}
	CHECK(flush_check(false));
	CHECK(bch_btree_depth(&T.b) >= 3);
	T.io_ok = true;
	CHECK(bch_btree_gc(&T.b, list_fn, l) == 0);
	T.io_ok = false;
	CHECK(flush_check(false));
	bch_btree_root(&T.b, &root, &level);
	rootb = bch_key_sector(&root) / T.cfg->bucket;
	T.snap[0] = model_save();
	/* a victim that is not the root, and another node with keys */
	for (i = 0; i < l->n; i++) {
		if (l->buckets[i] == rootb)
			continue;
		if (!victim)
			victim = l->buckets[i];
		else if (!other && node_sets(l->buckets[i], offs, 8) &&
			 ((struct bch_bset_disk *)bucket_data(l->buckets[i]))->nkeys)
			other = l->buckets[i];
	}
	CHECK(victim && other);
	T.saved = malloc(bucket_bytes());
	memcpy(T.saved, bucket_data(victim), bucket_bytes());

	for (i = 0; i < bucket_bytes(); i++)
		bucket_data(victim)[i] = rnd(256);
	load_expect(&root, level, NULL);
	memset(bucket_data(victim), 0, bucket_bytes());
	load_expect(&root, level, NULL);
	memcpy(bucket_data(victim), bucket_data(other), bucket_bytes());
	load_expect(&root, level, NULL);
	memcpy(bucket_data(victim), T.saved, bucket_bytes());
	/* a root of the wrong level fails too */
	CHECK(do_load(&root, level + 1) < 0 && mem_live == 0);
	memcpy(T.saved, bucket_data(rootb), bucket_bytes());
	bucket_data(rootb)[40] ^= 1;
	load_expect(&root, level, NULL);
	memcpy(bucket_data(rootb), T.saved, bucket_bytes());
	load_expect(&root, level, T.snap[0]);
	CHECK(gc_check());
	CHECK(T.bad_calls == 0);
	return 1;
}

/* Bad arguments, a failed init, an empty tree through flush and load. */
static int test_basics(void)
{
	struct bch_bkey k = { .inode = 1, .size = 0, .end = 10 }, out, root;
	unsigned int level, n;

	setup("basics", &corrupt_cfg);
	CHECK(bch_crc32c("123456789", 9) == 0xe3069283);
	CHECK(bch_crc32c("123456789abcdefgh", 17) == 0x3ff3b09d);
	T.alloc_ok = true;
	T.alloc_fail_in = 1;
	CHECK(bch_btree_init(&T.b) < 0 && mem_live == 0);
	mem_fail_in = 2;
	CHECK(bch_btree_init(&T.b) == -ENOMEM && mem_live == 0);
	mem_fail_in = 0;
	CHECK(bch_btree_init(&T.b) == 0);
	CHECK(bch_btree_insert(&T.b, &k) == -EINVAL);
	k.size = 11;
	CHECK(bch_btree_insert(&T.b, &k) == -EINVAL);
	CHECK(bch_btree_lookup(&T.b, 1, 5, 5, &out) == -EINVAL);
	CHECK(compare_all());
	CHECK(flush_check(false));
	bch_btree_root(&T.b, &root, &level);
	CHECK(root.inode == U32_MAX && root.end == U64_MAX && root.size == 1 && !level);
	tree_free();
	CHECK(do_load(&root, 0) == 0);
	CHECK(compare_all() && gc_check());
	/* many leaves, then extents and a hole across all of them */
	for (n = 0; n < 2000; n++) {
		random_key(&k, 0, T.cfg->space);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
	}
	CHECK(bch_btree_depth(&T.b) >= 2);
	memset(&k, 0, sizeof(k));
	k.size = DB;
	k.end = 1000 + DB;
	k.ptr[0] = bch_ptr(0, T.dgen[0], DATA_BASE);
	k.nptrs = 1;
	CHECK(do_insert(&k) == 0);
	model_insert(&k);
	CHECK(compare_all());
	k.size = T.cfg->space - 10;
	k.end = T.cfg->space - 5;
	k.flags = BCH_KEY_HOLE;
	CHECK(do_insert(&k) == 0);
	model_insert(&k);
	CHECK(compare_all());
	CHECK(reload(false) && gc_check());
	CHECK(T.bad_calls == 0);
	return 1;
}

/*
 * A leaf read with no lock held goes stale if, before the fill, it is
 * read under the lock, changed, written and evicted: the fill must
 * refuse it (the drop ring), or the change would be lost.
 */
static const struct config want_cfg = { "16/1 b=0", 16, 1, 4, 1 << 12, 8192, 8, 0, 0, -1 };

static int test_want_stale(void)
{
	struct bch_btree_want w, w2;
	struct bch_bkey k, out;
	u64 reads;
	int n;

	setup("want-stale", &want_cfg);
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	for (n = 0; n < 3000; n++) {
		random_key(&k, 0, T.cfg->space);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
	}
	CHECK(bch_btree_depth(&T.b) >= 2);
	CHECK(flush_check(false));
	bch_btree_evict(&T.b, 0);

	/* Taken: read, nothing changed, filled; the lookup reads nothing. */
	CHECK(bch_btree_want(&T.b, 0, 4000, 4001, &w));
	T.io_ok = true;
	CHECK(bch_btree_want_read(&T.b, &w, T.wbuf) == 0);
	T.io_ok = false;
	reads = T.b.reads;
	CHECK(bch_btree_want_fill(&T.b, &w, T.wbuf, false) == 0);
	CHECK(T.b.reads == reads + 1);
	CHECK(!bch_btree_want(&T.b, 0, 4000, 4001, &w2));
	CHECK(bch_btree_lookup(&T.b, 0, 4000, 4001, &out) >= 0);
	CHECK(compare_range(0, 4000, 4001));
	bch_btree_evict(&T.b, 0);

	/* Refused: read, then loaded, changed, written and evicted. */
	CHECK(bch_btree_want(&T.b, 0, 4000, 4001, &w));
	T.io_ok = true;
	CHECK(bch_btree_want_read(&T.b, &w, T.wbuf) == 0);
	T.io_ok = false;
	memset(&k, 0, sizeof(k));
	k.size = 1;
	k.end = 4001;
	k.ptr[0] = bch_ptr(0, T.dgen[0], DATA_BASE + 7);
	k.nptrs = 1;
	CHECK(do_insert(&k) == 0);
	model_insert(&k);
	CHECK(flush_check(false));
	bch_btree_evict(&T.b, 0);
	CHECK(bch_btree_want_fill(&T.b, &w, T.wbuf, false) == -EAGAIN);
	CHECK(compare_all());
	CHECK(T.bad_calls == 0);
	return 1;
}

static const struct config sets_cfg = { "1024/8 sets=8,2", 1024, 8, 8, 16, 4096, 256, 0, 0, 0 };

/* A node written with more sets than the loading tree allows. */
static int test_sets_change(void)
{
	struct bch_bkey root, root0, k;
	unsigned int level, round, n;
	size_t offs[8];

	setup("sets-change", &sets_cfg);
	/* Each round's keys fill several open sets, and go to disk as one. */
	T.b.open_set_keys = 2;
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	for (round = 0; round < 8; round++) {
		for (n = 0; n < 20; n++) {
			random_key(&k, 0, 2000);
			CHECK(do_insert(&k) == 0);
			model_insert(&k);
		}
		/* The last round: 7 sets written and the most open (10 in all). */
		if (round == 7)
			CHECK(compare_all());
		CHECK(flush_check(false));
	}
	bch_btree_root(&T.b, &root0, &level);
	CHECK(node_sets(bch_key_sector(&root0) / T.cfg->bucket, offs, 8) == 8);
	tree_free();
	T.b.max_sets = 2;
	CHECK(do_load(&root0, level) == 0);
	CHECK(compare_all());
	for (n = 0; n < 20; n++) {
		random_key(&k, 0, 2000);
		CHECK(do_insert(&k) == 0);
		model_insert(&k);
	}
	reload(false);
	bch_btree_root(&T.b, &root, &level);
	/* compacted: rewritten elsewhere */
	CHECK(bch_key_sector(&root) != bch_key_sector(&root0));
	CHECK(node_sets(bch_key_sector(&root) / T.cfg->bucket, offs, 8) == 1);
	CHECK(gc_check());
	CHECK(T.bad_calls == 0);
	return 1;
}

/*
 * Shared inserts, as the kernel makes them: threads insert and look up,
 * each in blocks of its own that share leaves with the others', under a
 * shared hold, falling back to exclusive access when the leaf cannot take
 * the key so; meanwhile the main thread flushes in steps (writing under
 * the shared hold, as downgraded), runs GC passes (the shared steps with
 * shared inserts kept out, as the kernel's gate does) and evicts. Then
 * what every thread inserted must be in memory and, after a flush and a
 * reload, on disk.
 */
#define SH_THREADS	4
#define SH_BLOCK	64	/* sectors a thread owns in a row */
#define SH_OPS		4000
/*
 * The workers go on past SH_OPS until the main thread has done this much
 * beside them (node writes, GC passes, evictions), so that every seed
 * races each against shared inserts; up to SH_OPS_MAX.
 */
#define SH_MIN_WRITES	16
#define SH_MIN_GCS	2
#define SH_MIN_EVICTIONS 4
#define SH_OPS_MAX	(50 * SH_OPS)

struct sh_thread {
	pthread_t	tid;
	unsigned int	id;
	u64		rng;
	long		shared, exclusive, lookups;
	int		fail_line;
	struct bch_bkey	fail_key;
};

static struct {
	pthread_rwlock_t tree;		/* the kernel's btree_lock */
	pthread_rwlock_t gate;		/* shared inserts against walks */
	pthread_mutex_t	excl;		/* exclusive, and a downgrade's hold */
	int		running;
	bool		enough;		/* the minimums above were reached */
	long		flushes, writes, gcs, evictions;
} SH;

static u64 sh_rnd(struct sh_thread *t, u64 n)
{
	return splitmix(&t->rng) % n;
}

static void sh_check(struct sh_thread *t, bool ok, int line)
{
	if (!ok && !t->fail_line)
		t->fail_line = line;
}

#define SH_CHECK(t, c)	sh_check(t, !!(c), __LINE__)

/* A random key in one of @t's blocks: live data, or a hole. */
static void sh_key(struct sh_thread *t, struct bch_bkey *k)
{
	u64 blocks = T.cfg->space / SH_BLOCK / SH_THREADS;
	u64 block = sh_rnd(t, blocks) * SH_THREADS + t->id;
	u32 len = 1 + sh_rnd(t, 8);
	u64 off = block * SH_BLOCK + sh_rnd(t, SH_BLOCK - len + 1), db;

	memset(k, 0, sizeof(*k));
	k->inode = inodes[1];
	k->size = len;
	k->end = T.base[1] + off + len;
	if (sh_rnd(t, 8) == 0) {
		k->flags = BCH_KEY_HOLE;
		return;
	}
	db = sh_rnd(t, NDB);
	k->ptr[0] = bch_ptr(0, T.dgen[db], DATA_BASE + db * DB + sh_rnd(t, DB - len + 1));
	k->nptrs = 1;
	k->flags = sh_rnd(t, 2) ? BCH_KEY_DIRTY : 0;
	key_extras(k, sh_rnd(t, 4), sh_rnd(t, 1U << 31) + 1);
}

static void sh_model(const struct bch_bkey *k)
{
	u64 s = bch_key_start(k) - T.base[1], j;

	for (j = 0; j < k->size; j++)
		msec_set(&T.model[1][s + j], k, j);
}

/* Under the shared hold: [a, e) of @t's own sectors against the model. */
static void sh_lookup(struct sh_thread *t, u64 a, u64 e)
{
	struct bch_bkey out;
	u64 pos = a, j;
	int r;

	while (pos < e && !t->fail_line) {
		r = bch_btree_lookup(&T.b, inodes[1], T.base[1] + pos, T.base[1] + e, &out);
		if (r < 0)
			return;		/* not resident */
		SH_CHECK(t, out.size >= 1 && out.size <= e - pos);
		for (j = 0; j < out.size && !t->fail_line; j++) {
			const struct msec *m = &T.model[1][pos + j];

			SH_CHECK(t, r ? msec_live(m) && msec_match(m, &out, j) &&
				 m->flags == out.flags : !msec_live(m));
		}
		if (t->fail_line)
			t->fail_key = out;
		pos += out.size;
	}
}

static void *sh_worker(void *arg)
{
	struct sh_thread *t = arg;
	struct bch_node *n;
	struct bch_bkey k;
	long op;
	int r;

	for (op = 0; op < SH_OPS_MAX && !t->fail_line; op++) {
		if (op >= SH_OPS && __atomic_load_n(&SH.enough, __ATOMIC_SEQ_CST))
			break;
		sh_key(t, &k);
		pthread_rwlock_rdlock(&SH.tree);
		pthread_rwlock_rdlock(&SH.gate);
		n = bch_btree_leaf_lock(&T.b, &k);
		if (n) {
			bch_btree_leaf_insert(&T.b, n, &k);
			sh_model(&k);
			bch_btree_leaf_unlock(n);
			t->shared++;
		}
		pthread_rwlock_unlock(&SH.gate);
		pthread_rwlock_unlock(&SH.tree);
		if (!n) {
			pthread_mutex_lock(&SH.excl);
			pthread_rwlock_wrlock(&SH.tree);
			T.alloc_ok = true;
			T.io_ok = true;
			r = bch_btree_insert(&T.b, &k);
			T.io_ok = false;
			T.alloc_ok = false;
			if (!r)
				sh_model(&k);
			pthread_rwlock_unlock(&SH.tree);
			pthread_mutex_unlock(&SH.excl);
			SH_CHECK(t, r == 0);
			t->exclusive++;
		}
		if (sh_rnd(t, 2) == 0) {
			u64 a = bch_key_start(&k) - T.base[1];

			a -= a % SH_BLOCK;
			pthread_rwlock_rdlock(&SH.tree);
			sh_lookup(t, a, a + SH_BLOCK);
			pthread_rwlock_unlock(&SH.tree);
			t->lookups++;
		}
	}
	if (t->fail_line)
		t->fail_key = k;
	__atomic_sub_fetch(&SH.running, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void sh_gc_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	(void)b;
	(void)k;
	(void)is_node;
	(*(long *)arg)++;
}

/* A flush in steps, each written with exclusive access traded for shared. */
static int sh_flush(void)
{
	u64 writes;
	int r, w;

	pthread_mutex_lock(&SH.excl);
	pthread_rwlock_wrlock(&SH.tree);
	T.window = true;
	bch_btree_flush_start(&T.b);
	for (;;) {
		T.in_step = true;
		T.alloc_ok = true;
		r = bch_btree_flush_step(&T.b);
		T.alloc_ok = false;
		pthread_rwlock_unlock(&SH.tree);
		if (r >= 0) {
			/* SH.excl still held: only shared inserts and lookups come in */
			pthread_rwlock_rdlock(&SH.tree);
			writes = T.writes;	/* only this thread writes */
			T.io_ok = true;
			w = bch_btree_flush_write(&T.b);
			T.io_ok = false;
			pthread_rwlock_unlock(&SH.tree);
			if (w)
				r = w;
			SH.writes += T.writes - writes;
		}
		T.in_step = false;
		pthread_mutex_unlock(&SH.excl);
		sched_yield();
		pthread_mutex_lock(&SH.excl);
		pthread_rwlock_wrlock(&SH.tree);
		if (r <= 0)
			break;
	}
	T.window = false;
	if (r)
		frees_release(false);
	else
		flush_done(0);
	pthread_rwlock_unlock(&SH.tree);
	pthread_mutex_unlock(&SH.excl);
	SH.flushes++;
	return r;
}

static int sh_gc(void)
{
	long keys = 0;
	int r;

	pthread_mutex_lock(&SH.excl);
	pthread_rwlock_wrlock(&SH.tree);
	bch_btree_gc_start(&T.b);
	pthread_rwlock_unlock(&SH.tree);
	for (;;) {
		pthread_rwlock_rdlock(&SH.tree);
		pthread_rwlock_wrlock(&SH.gate);
		r = bch_btree_gc_step_shared(&T.b, sh_gc_fn, &keys);
		pthread_rwlock_unlock(&SH.gate);
		pthread_rwlock_unlock(&SH.tree);
		if (r == -EAGAIN) {
			pthread_rwlock_wrlock(&SH.tree);
			T.io_ok = true;
			r = bch_btree_gc_step(&T.b, sh_gc_fn, &keys);
			T.io_ok = false;
			pthread_rwlock_unlock(&SH.tree);
		}
		pthread_mutex_unlock(&SH.excl);
		if (r <= 0)
			break;
		sched_yield();
		pthread_mutex_lock(&SH.excl);
	}
	SH.gcs++;
	return r;
}

static const struct config shared_cfg = { "16/1 x4", 16, 1, 4, 1 << 12, 32768, 8, 0, 0, 0 };

static int test_shared_inserts(void)
{
	struct sh_thread th[SH_THREADS];
	pthread_rwlockattr_t attr;
	long shared = 0, exclusive = 0, lookups = 0;
	unsigned int i;
	int r;

	setup("shared-inserts", &shared_cfg);
	pthread_rwlockattr_init(&attr);
	/* as an rwsem: a waiting writer holds new readers back */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&SH.tree, &attr);
	pthread_rwlock_init(&SH.gate, &attr);
	pthread_mutex_init(&SH.excl, NULL);
	SH.flushes = 0;
	SH.writes = 0;
	SH.enough = false;
	SH.gcs = 0;
	SH.evictions = 0;
	T.alloc_ok = true;
	CHECK(bch_btree_init(&T.b) == 0);
	T.alloc_ok = false;
	SH.running = SH_THREADS;
	for (i = 0; i < SH_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].id = i;
		th[i].rng = test_seed * 7919 + i;
		CHECK(pthread_create(&th[i].tid, NULL, sh_worker, &th[i]) == 0);
	}
	while (__atomic_load_n(&SH.running, __ATOMIC_SEQ_CST)) {
		unsigned int what;

		/* rnd() is the exclusive inserts' too (op_alloc()) */
		pthread_mutex_lock(&SH.excl);
		what = rnd(4);
		pthread_mutex_unlock(&SH.excl);
		/* What is still short of its minimum, the slow pass last. */
		if (SH.writes >= SH_MIN_WRITES && SH.evictions < SH_MIN_EVICTIONS)
			what = 1;
		else if (SH.writes >= SH_MIN_WRITES && SH.gcs < SH_MIN_GCS)
			what = 0;
		switch (what) {
		case 0:
			CHECK(sh_gc() == 0);
			break;
		case 1:
			/*
			 * Shared inserts dirty every leaf again at once: flush
			 * all with them held off, so there are leaves to evict
			 * and they read them back.
			 */
			pthread_mutex_lock(&SH.excl);
			pthread_rwlock_wrlock(&SH.tree);
			r = do_flush_from(0);
			SH.evictions += bch_btree_evict(&T.b, rnd(8));
			pthread_rwlock_unlock(&SH.tree);
			pthread_mutex_unlock(&SH.excl);
			CHECK(r == 0);
			break;
		default:
			CHECK(sh_flush() == 0);
		}
		if (SH.writes >= SH_MIN_WRITES && SH.gcs >= SH_MIN_GCS &&
		    SH.evictions >= SH_MIN_EVICTIONS)
			__atomic_store_n(&SH.enough, true, __ATOMIC_SEQ_CST);
	}
	for (i = 0; i < SH_THREADS; i++) {
		pthread_join(th[i].tid, NULL);
		if (th[i].fail_line)
			printf("  thread %u failed at line %d, key %u:%llu+%u ptr %llu flags %u\n",
			       i, th[i].fail_line, th[i].fail_key.inode,
			       bch_key_start(&th[i].fail_key), th[i].fail_key.size,
			       bch_key_sector(&th[i].fail_key), th[i].fail_key.flags);
		CHECK(!th[i].fail_line);
		shared += th[i].shared;
		exclusive += th[i].exclusive;
		lookups += th[i].lookups;
	}
	CHECK(compare_all());
	CHECK(reload(false));
	CHECK(compare_all());
	CHECK(T.bad_calls == 0);
	printf("  %-14s %ld shared, %ld exclusive inserts, %ld lookups; %ld flushes (%ld node writes), %ld gc passes, %ld evictions; %llu splits, %llu compactions, %llu merged shared\n",
	       shared_cfg.name, shared, exclusive, lookups, SH.flushes, SH.writes,
	       SH.gcs, SH.evictions,
	       T.splits + T.b.splits, T.compactions + T.b.compactions,
	       T.merged_aside + T.b.merged_aside);
	/* Both ways were taken, and the walks ran beside them. */
	CHECK(shared > 0 && exclusive > 0);
	CHECK(SH.enough);
	return 1;
}

static const struct config configs[] = {
	/* name		bucket block sets nbuckets space maxlen ops bump */
	{ "1/1 sets=4",	  1,    1, 4, 1 << 15, 4096,  256, 0,     5, 0 },
	{ "2/1 sets=2",	  2,    1, 2, 1 << 14, 8192,  256, 0,     5, 0 },
	{ "16/1 sets=4",  16,   1, 4, 1 << 12, 8192,  256, 0,     5, 0 },
	{ "16/1 deep",	  16,   1, 4, 1 << 12, 65536, 8,   60000, 1, 0 },
	{ "1/1 deep",	  1,    1, 4, 1 << 17, 65536, 8,   40000, 1, 0 },
	{ "16/2 sets=1",  16,   2, 1, 1 << 12, 8192,  256, 0,     5, 0 },
	{ "8/4 sets=8",	  8,    4, 8, 1 << 12, 8192,  256, 0,     5, 0 },
	{ "1024/8 sets=4", 1024, 8, 4, 96,     65536, 16,  60000, 1, 0 },
	/* name		bucket block sets nbuckets space maxlen ops bump leaves */
	{ "16/1 deep b=0", 16,  1, 4, 1 << 12, 65536, 8,   30000, 1, -1 },
	{ "1/1 deep b=8",  1,   1, 4, 1 << 17, 65536, 8,   20000, 1, 8 },
	{ "16/1 sets=4 b=2", 16, 1, 4, 1 << 12, 8192, 256, 0,     5, 2 },
	{ "8/4 sets=8 b=0", 8,  4, 8, 1 << 12, 8192,  256, 0,     5, -1 },
};

static int run_test(unsigned int i, u64 seed, long ops)
{
	if (i < ARRAY_SIZE(configs))
		return run_random(&configs[i], seed, ops);
	if (i == ARRAY_SIZE(configs))
		return test_torn_set();
	if (i == ARRAY_SIZE(configs) + 1)
		return test_corrupt_node();
	if (i == ARRAY_SIZE(configs) + 2)
		return test_sets_change();
	if (i == ARRAY_SIZE(configs) + 3)
		return test_want_stale();
	if (i == ARRAY_SIZE(configs) + 4)
		return test_shared_inserts();
	return test_basics();
}

int main(int argc, char **argv)
{
	u64 seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	long ops = argc > 2 ? strtol(argv[2], NULL, 0) : 20000;
	static int passed, failed;
	static unsigned int i;

	test_seed = seed;
	if (argc > 4)
		force_key_bytes = !strcmp(argv[4], "v2") ? BCH_KEY_BYTES_V2 : BCH_KEY_BYTES_V3;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("btree_test seed %llu, %ld ops\n", seed, ops);
	for (i = 0; i < ARRAY_SIZE(configs) + 6; i++) {
		if (argc > 3 && !strcmp(argv[3], "shared") && i != ARRAY_SIZE(configs) + 4)
			continue;
		/* argv[3] a random config's name: that one only */
		if (argc > 3 && strcmp(argv[3], "shared") && strcmp(argv[3], "all") &&
		    (i >= ARRAY_SIZE(configs) || strcmp(argv[3], configs[i].name)))
			continue;
		test_index = i;
		rng_state = seed * 1000003 + i;
		seq_state = ~rng_state;
		mem_live = 0;
		mem_fail_in = 0;
		mem_faults = 0;
		if (!setjmp(fail_jmp) && run_test(i, seed, ops)) {
			printf("ok   %s %s\n", T.test, T.cfg->name);
			passed++;
		} else {
			printf("FAIL %s %s\n", T.test, T.cfg ? T.cfg->name : "-");
			failed++;
		}
		teardown();
		if (mem_live) {
			printf("FAIL %ld btree allocations leaked\n", mem_live);
			failed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
