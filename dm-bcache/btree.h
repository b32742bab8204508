/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: the index, a btree of extents on Kent Overstreet's bcache
 * design (see btree.c for how nodes are kept and written).
 *
 * Keys are ordered by (inode, end). A leaf key maps the origin sectors
 * [end - size, end) of @inode to the cache sectors each of its pointers
 * starts at, in a bucket of the gen the pointer carries; a BCH_KEY_HOLE key
 * maps them to nothing and only hides older keys. An interior key points
 * to a child node: (inode, end) is the largest key the child may hold, its
 * pointer the first sector of the child's bucket with that bucket's gen,
 * and @size always 1 (so a pointer key is never mistaken for an empty one).
 * Nodes are found by where their pointer points (bch_ptr_loc()).
 *
 * Nodes are read on demand. Interior nodes stay in memory once read; a
 * clean leaf (one whose memory and disk agree) may be evicted whenever
 * more than max_leaves leaves are resident, at the points named below.
 *
 * Locking is the caller's, with two exceptions inside: a shared hold lets
 * lookups and shared inserts (bch_btree_leaf_lock()) run together, each
 * leaf's lock ordering them; everything else needs exclusive access, or a
 * shared hold that keeps shared inserts out where it says so, and may
 * read nodes through ops->io (which may refuse with -EAGAIN, as from a
 * context that must not wait for IO: the call then fails with it,
 * changing nothing). Only bch_btree_flush_write() writes, and it lets
 * lookups and shared inserts into other nodes run.
 */
#ifndef _BCH_BTREE_H
#define _BCH_BTREE_H

#include "bch_compat.h"

#include "bcache_ondisk.h"

static inline u64 bch_key_start(const struct bch_bkey *k)
{
	return k->end - k->size;
}

/* The first pointer's sector and gen (a node key, or one copy of data). */
static inline u64 bch_key_sector(const struct bch_bkey *k)
{
	return bch_ptr_sector(k->ptr[0]);
}

static inline u8 bch_key_gen(const struct bch_bkey *k)
{
	return bch_ptr_gen(k->ptr[0]);
}

/*
 * A node's bucket as the btree names it to its ops: the member in the
 * high 32 bits (bucket numbers fit in 32: BCH_MAX_BUCKETS), so that a
 * set of one has node buckets numbered as its buckets are.
 */
static inline u64 bch_node_bucket_id(unsigned int dev, u64 nr)
{
	return (u64)dev << 32 | nr;
}

static inline unsigned int bch_node_bucket_dev(u64 id)
{
	return id >> 32;
}

static inline u64 bch_node_bucket_nr(u64 id)
{
	return id & 0xffffffffULL;
}

/* Where the first pointer points, without its gen: member and sector. */
static inline u64 bch_key_loc(const struct bch_bkey *k)
{
	return bch_ptr_loc(k->ptr[0]);
}

/* A pointer to location @loc (bch_ptr_loc()) in a bucket of @gen. */
static inline u64 bch_loc_ptr(u64 loc, u8 gen)
{
	return loc | (u64)gen << BCH_PTR_GEN_SHIFT;
}

/* Drop the first @n sectors of @k's extent: its pointers move with it. */
static inline void bch_key_cut_front(struct bch_bkey *k, u32 n)
{
	unsigned int i;

	for (i = 0; i < k->nptrs; i++)
		k->ptr[i] += n;		/* stays in its bucket: no carry */
	if (k->flags & BCH_KEY_CSUM)
		k->csum_front += n;
	k->size -= n;
}

/* Drop copy @i of @k's data (it keeps the others, in order). */
static inline void bch_key_drop_copy(struct bch_bkey *k, unsigned int i)
{
	for (; i + 1 < k->nptrs; i++)
		k->ptr[i] = k->ptr[i + 1];
	k->ptr[--k->nptrs] = 0;
}

/* Restrict @k to [@start, @end), a part of its extent. */
static inline void bch_key_slice(struct bch_bkey *k, u64 start, u64 end)
{
	bch_key_cut_front(k, start - bch_key_start(k));
	k->end = end;
	k->size = end - start;
}

/* The largest number of sets a node may have (the limit for max_sets). */
#define BCH_BTREE_MAX_SETS	8
#define BCH_BTREE_DEFAULT_SETS	4
/*
 * In memory, what a node has not written yet is kept as up to
 * BCH_BTREE_OPEN_SETS (at least 2) sets, a new one opened when the last
 * holds open_set_keys, so that an insert shifts a few KiB and not a
 * node's worth of keys: the last two merge when there would be more,
 * and all of them before a write (one set on disk per write).
 */
#define BCH_BTREE_OPEN_SETS	3
#define BCH_BTREE_OPEN_SET_KEYS	128
#define BCH_NODE_SETS		(BCH_BTREE_MAX_SETS + BCH_BTREE_OPEN_SETS - 1)
#if BCH_BTREE_OPEN_SETS < 2
#error "node_reserve() merges the last two open sets"
#endif

struct bch_btree;
struct bch_node;

/* A node to read with no lock held (btree.c: bch_btree_want()). */
struct bch_btree_want {
	struct bch_bkey	key;		/* the pointer to it */
	struct bch_bkey	lo;		/* its lower bound */
	unsigned int	level;
	u64		drops;		/* b->drops when named */
};

#define BCH_BTREE_DROP_BITS	10

/* Node buckets are named to the ops as bch_node_bucket_id(member, bucket). */
struct bch_btree_ops {
	/* a free bucket for a node; its current gen. Must not do IO. */
	int (*alloc)(struct bch_btree *b, u64 *bucket, u8 *gen);
	/* the node in @bucket is no longer referenced */
	void (*free)(struct bch_btree *b, u64 bucket);
	/* synchronous IO of @sectors at @offset sectors into @bucket; write if @write */
	int (*io)(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		  u32 sectors);
	/*
	 * true if a leaf key's data is gone (stale gen, dropped inode): treated
	 * as a hole, dropped when compacting. Optional; never called on holes
	 * or on pointer keys.
	 */
	bool (*key_dead)(struct bch_btree *b, const struct bch_bkey *k);
	/*
	 * For a live leaf key of several copies: one whose bucket was reused
	 * (dropped when compacting, so that once a GC pass is over no key
	 * names a bucket's older gen), or -1. Optional.
	 */
	int (*key_stale_copy)(struct bch_btree *b, const struct bch_bkey *k);
	/*
	 * Why a leaf key read from disk (holes included) cannot be trusted,
	 * or NULL: the load then fails. Optional.
	 */
	const char *(*key_invalid)(struct bch_btree *b, const struct bch_bkey *k);
};

struct bch_btree {
	const struct bch_btree_ops *ops;
	void		*priv;			/* the caller's */
	/*
	 * Set by the caller before init or load; max_sets and open_set_keys
	 * 0 = default.
	 */
	u32		bucket_sectors, block_sectors, max_sets, open_set_keys;
	/* Members a node pointer may name (0: 1). */
	u32		nr_members;
	/* The cache's key layout on disk: BCH_KEY_BYTES_V2 or _V3 (0: _V3). */
	u32		key_bytes;
	/*
	 * Clean leaves beyond this many resident ones are evicted (0: every
	 * one not in use; U64_MAX: none). The caller may change it at any
	 * time under exclusive access.
	 */
	u64		max_leaves;

	/* Private to btree.c. */
	struct bch_node	*root;
	unsigned int	level;			/* of the root; 0 = leaf */
	u32		node_keys;		/* keys that fit in one node */
	u32		split_keys;		/* split when compacted above this */
	struct bch_bkey	*scratch;		/* node_keys, swapped in by compaction */
	struct bch_bkey	*aside_keys;		/* node_keys: a merge made aside */
	void		*iobuf;			/* one bucket */
	struct bch_node	**hash;			/* resident nodes by bucket */
	unsigned int	hash_bits;
	struct list_head clean;			/* evictable leaves, LRU first */
	u64		leaves;			/* resident leaves */
	u64		nclean;			/* on the clean list */
	u64		flush_gen;		/* of the last flush started */
	struct bch_bkey	flush_pos;		/* where it is */
	u64		drops;			/* nodes that left memory, ever */
	u64		drops_floor;		/* drops when last freed or set up */
	u64		drop_seq[1 << BCH_BTREE_DROP_BITS];	/* by pointer hash */
	struct {				/* a flush step's write */
		struct bch_node	*node;		/* NULL: none */
		u64		bucket, seq;
		u32		offset;		/* sectors */
		bool		whole;		/* else its open set */
	} pend;
	u64		gc_gen;			/* of the last GC pass started */
	struct bch_bkey	gc_pos;			/* the last leaf it went through */
	struct {				/* the leaf after gc_pos */
		u64		installed;	/* its stamp once merged aside */
		bool		tried;		/* merged aside this step */
	} gc_prep;
	struct {				/* what aside_keys holds */
		u64		loc;		/* of the node merged */
		u64		stamp;		/* its stamp then; 0: none */
		u32		nkeys;
	} aside;
	atomic64_t	stamps;			/* the last node stamp given */
	/* clean and nclean, against shared inserts and a flush's write */
	spinlock_t	lru_lock;

	/* Counters, for the status line and the tests. */
	u64		nodes;			/* resident */
	u64		reads;			/* nodes read from disk */
	u64		reads_unlocked;		/* of them, by bch_btree_want_fill() */
	u64		evictions;
	u64		compactions;
	u64		merged_aside;		/* of them, merged under a shared lock */
	u64		splits;
	u64		cows;			/* nodes rewritten to a new bucket */
	u64		set_writes;		/* sets written (appends and whole) */
};

/*
 * init and load take a zeroed or freed tree with ops, priv and the sizes
 * set (bucket_sectors a multiple of block_sectors, max_sets at most
 * BCH_BTREE_MAX_SETS).
 */
/* An empty tree: one empty, dirty root leaf (one ops->alloc). */
int bch_btree_init(struct bch_btree *b);
/*
 * Read the root from disk; the rest is read when needed. A bad node (or a
 * leaf key that ops->key_invalid refuses) -> -EUCLEAN, here or from the
 * call that reads it, and nothing leaked.
 */
int bch_btree_load(struct bch_btree *b, const struct bch_bkey *root, unsigned int level);
/* Memory only, no ops called; also fine after a failed init or load, and twice. */
void bch_btree_free(struct bch_btree *b);
/*
 * Write every dirty node, children before parents, then evict down to the
 * budget; then bch_btree_root() is what is on disk. A node rewritten whole
 * goes to a new bucket and its old bucket is freed at once (the caller
 * keeps it until what it writes next names the new tree).
 */
int bch_btree_flush(struct bch_btree *b);
/*
 * The same a node at a time, for a caller that lets others change the
 * tree in between: bch_btree_flush_start(), then bch_btree_flush_step()
 * with exclusive access and bch_btree_flush_write() after it, until the
 * step returns 0. A step changes the tree but does no IO; the write packs
 * and sends the node the step chose and needs only that nothing but
 * lookups and shared inserts ran since the step (a shared lock the step's
 * was downgraded to will do): those keep out of the node until it is
 * written.
 * bch_btree_root() read under the same hold as the last step and its
 * write is what is on disk. Every key in the tree at the start is then on
 * disk, or overwritten by a key inserted since; keys inserted meanwhile
 * may or may not be. A bucket freed by a step (a node rewritten whole) is
 * named by no node written from then on; one freed by a split between
 * steps may still be named by a node already written, so it must outlive
 * the next flush too. A step returns 1 while there is more to do; an
 * error of either abandons the flush (its node stays dirty), and what it
 * wrote is usable only by the next.
 */
void bch_btree_flush_start(struct bch_btree *b);
int bch_btree_flush_step(struct bch_btree *b);
int bch_btree_flush_write(struct bch_btree *b);
void bch_btree_root(struct bch_btree *b, struct bch_bkey *root, unsigned int *level);

/*
 * Insert a data extent or a BCH_KEY_HOLE, overriding whatever it overlaps;
 * then evict down to the budget. Reads the leaves it needs, never writes.
 * All or nothing: on error (-ENOMEM, a read's error, or the error of
 * ops->alloc when no bucket is left for a split) the index holds exactly
 * the keys it held. For a hole that means the older data is still visible, so a caller
 * that must forget it has to invalidate the whole inode instead.
 */
int bch_btree_insert(struct bch_btree *b, const struct bch_bkey *k);

/*
 * A shared insert, under a shared hold that only lookups and other shared
 * inserts share: the leaf that holds all of @k, locked, if it is
 * resident, has room in its open sets without a merge or a compaction and
 * is not being written; else NULL, and the caller inserts with exclusive
 * access. bch_btree_leaf_insert() then puts @k in (or nothing is put in)
 * and bch_btree_leaf_unlock() lets lookups of the leaf see it. What the
 * caller does in between is ordered with every other change to @k's range.
 */
struct bch_node *bch_btree_leaf_lock(struct bch_btree *b, const struct bch_bkey *k);
void bch_btree_leaf_insert(struct bch_btree *b, struct bch_node *n,
			   const struct bch_bkey *k);
void bch_btree_leaf_unlock(struct bch_node *n);
/*
 * Leaves changed since they were last written, and clean leaves an
 * eviction would drop now (a shared hold will do for either).
 */
u64 bch_btree_dirty_leaves(struct bch_btree *b);
u64 bch_btree_evictable(struct bch_btree *b);

/*
 * The piece at @start: returns 1 and sets @out to the live key clipped to
 * [start, min(end, key end)) (ptr adjusted) if @start is cached; returns 0
 * and sets out->size to the hole's length up to min(end, start of the next
 * live key) otherwise (out->flags = BCH_KEY_HOLE). Ranges longer than
 * U32_MAX are clipped. Memory only; safe with concurrent lookups and
 * shared inserts.
 * -EAGAIN if it needs a node that is not in memory: out->end is then the
 * sector whose leaf bch_btree_load_range() must read, and nothing is live
 * in [start, out->end).
 */
int bch_btree_lookup(struct bch_btree *b, u32 inode, u64 start, u64 end,
		     struct bch_bkey *out);
/* Exclusive access: read every leaf that holds a sector of [start, end). */
int bch_btree_load_range(struct bch_btree *b, u32 inode, u64 start, u64 end);
/*
 * Exclusive access: bch_btree_lookup(), reading what it needs (after
 * evicting down to the budget).
 */
int bch_btree_lookup_load(struct bch_btree *b, u32 inode, u64 start, u64 end,
			  struct bch_bkey *out);
/*
 * Exclusive access: read every node of a tree fresh from load (with
 * max_leaves U64_MAX, for tools that check it whole). -EUCLEAN if a node
 * is bad or two pointers name one bucket.
 */
int bch_btree_read_all(struct bch_btree *b);
/* Exclusive access: evict clean leaves down to max_leaves (a shrinker's call). */
u64 bch_btree_evict(struct bch_btree *b, u64 max_leaves);

bool bch_btree_want(const struct bch_btree *b, u32 inode, u64 start, u64 end,
		    struct bch_btree_want *w);
bool bch_btree_gc_want(const struct bch_btree *b, struct bch_btree_want *w);
int bch_btree_want_read(struct bch_btree *b, const struct bch_btree_want *w, void *buf);
int bch_btree_want_fill(struct bch_btree *b, const struct bch_btree_want *w,
			const void *buf, bool for_gc);

typedef void (*bch_btree_gc_fn)(struct bch_btree *b, const struct bch_bkey *k,
				bool is_node, void *arg);

/*
 * A GC pass: compact every node holding dead, deleted or hole keys; then
 * call @fn for every live leaf key (is_node false) and, with is_node true,
 * for every node's own pointer key (its bucket is bch_key_sector(k) /
 * bucket_sectors on member bch_ptr_dev(k->ptr[0]), its gen
 * bch_key_gen(k)), in no particular order. @fn
 * must not change the tree.
 * Reads every node not in memory, evicting as it goes. Compacted nodes
 * are rewritten to new buckets by the next flush.
 */
int bch_btree_gc(struct bch_btree *b, bch_btree_gc_fn fn, void *arg);
/*
 * The same a leaf per step, for a caller that lets others change the tree
 * between them: bch_btree_gc_start() (a shared lock will do: only the
 * pass reads what it sets), then bch_btree_gc_step() until it returns 0,
 * each with exclusive access. @fn then sees each key in the
 * tree at the start that is still there when the pass reaches it, and of
 * the keys inserted meanwhile those it reaches: the part of a key that
 * bch_btree_gc_passed() says is behind the pass when it is inserted is
 * not seen. Nodes a split makes behind the pass are not reported. Returns
 * 1 while there is more to do, or an error (the pass is then abandoned).
 */
void bch_btree_gc_start(struct bch_btree *b);
int bch_btree_gc_step(struct bch_btree *b, bch_btree_gc_fn fn, void *arg);
/*
 * The same step under a shared lock (nothing but lookups running: no
 * shared insert, and no other GC step): it only counts, so it returns -EAGAIN, having changed
 * nothing in the tree, if a node on the way is not resident or would be
 * compacted; the step is then left to bch_btree_gc_step(). A leaf to
 * compact is first merged aside, and that step only swaps it in if the
 * leaf did not change (returning 1: the next shared step counts it).
 * Evicts nothing.
 */
int bch_btree_gc_step_shared(struct bch_btree *b, bch_btree_gc_fn fn, void *arg);
/* Sectors of @k the pass under way has gone by (all once it is done). */
u32 bch_btree_gc_passed(const struct bch_btree *b, const struct bch_bkey *k);

/* Levels in the tree (1 = the root is a leaf). */
static inline unsigned int bch_btree_depth(const struct bch_btree *b)
{
	return b->root ? b->level + 1 : 0;
}

/* Nodes in memory. */
static inline u64 bch_btree_nodes(const struct bch_btree *b)
{
	return b->nodes;
}

#endif /* _BCH_BTREE_H */
