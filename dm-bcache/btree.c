// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the index btree.
 *
 * Every node fills one bucket and holds up to max_sets sorted sets of keys
 * (bset.c), in memory back to back in one buffer and on disk one after the
 * other, each at a block boundary. Inserts go into the last set; the
 * sets not yet written (a few, so that an insert shifts few keys) are
 * merged into one that a flush appends to the bucket, so a node costs
 * one small write per flush. A node that was compacted in memory since
 * it was last written, or whose next set does not fit, is rewritten
 * whole to a new bucket (copy on write) and its parent's pointer is
 * updated.
 *
 * Within a node, newer sets win. In memory that is kept true eagerly: an
 * insert cuts its range out of the keys of every set, so live keys never
 * overlap. On disk the cuts of already written keys are not rewritten;
 * load redoes them from the keys of the newer sets (node_replay()).
 *
 * Leaves partition the key space and no extent crosses a leaf boundary, so
 * everything a key may hide is in its own leaf: that is what lets holes be
 * dropped when a leaf is compacted.
 *
 * Nodes are read when first needed. Interior nodes are few (a fan-out in
 * the thousands) and stay; leaves are the index's bulk, and a clean one
 * sits on an LRU list from which it is evicted when more than max_leaves
 * are resident. Lookups only set a bit (they run under a shared lock),
 * so the list is a second-chance clock: eviction moves a leaf that was
 * used since it last came round to the back once. Eviction runs only
 * where the caller holds exclusive access and no node pointer is held:
 * at the end of an insert, of a flush and of each leaf of a GC pass, at
 * the start of bch_btree_lookup_load(), and when the caller asks
 * (bch_btree_evict(): before reading ahead and bch_btree_load_range(),
 * and a shrinker).
 */
#define pr_fmt(fmt) "dm-bcache: btree: " fmt

#include "bset.h"

/* Deeper than any tree with a fan-out of at least 5 ever gets. */
#define BCH_BTREE_MAX_DEPTH	16
#define BCH_HASH_MIN_BITS	6

struct bch_node {
	struct bch_node	*hnext;		/* in b->hash, by node_loc() */
	struct list_head lru;		/* on b->clean if an evictable leaf */
	struct bch_bkey	key;		/* pointer here: max key, bucket, gen */
	struct bch_bkey	lo;		/* keys here are above this one */
	u64		bucket;
	u64		seq;		/* of every set of this node */
	struct bch_bkey	*keys;		/* b->node_keys, the sets back to back */
	u32		nkeys;		/* used, deleted ones included */
	u32		written;	/* sectors of the bucket holding our sets */
	u32		ndeleted;	/* keys of size 0 in our sets */
	u8		level;		/* 0 = leaf */
	u8		nsets;
	u8		nwritten;	/* sets on disk; the rest are open */
	bool		dirty;
	bool		need_cow;	/* compacted since written */
	bool		accessed;	/* looked up since the clock last passed */
	bool		gc_read;	/* read ahead for a GC pass alone */
	bool		writing;	/* chosen by a flush step, until written */
	/* Its keys, and whether it is dirty or written, against shared inserts. */
	rwlock_t	lock;
	u64		flushed;	/* b->flush_gen when a flush last passed */
	u64		gc_gen;		/* b->gc_gen when a GC pass entered */
	u64		stamp;		/* unique to this node's keys as they are */
	struct bch_bset	sets[BCH_NODE_SETS];
};

static bool key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	return b->ops->key_dead && b->ops->key_dead(b, k);
}

/* A leaf key that hides or holds nothing any more. */
static bool key_garbage(const struct bch_bkey *k, void *arg)
{
	return (k->flags & BCH_KEY_HOLE) || key_dead(arg, k);
}

/* A live leaf key's copy whose bucket was reused, or -1. */
static int key_stale_copy(struct bch_btree *b, const struct bch_bkey *k)
{
	return k->nptrs > 1 && b->ops->key_stale_copy ?
	       b->ops->key_stale_copy(b, k) : -1;
}

/* Compacting a leaf: drop garbage, and live keys' stale copies. */
static bool key_compact(struct bch_bkey *k, void *arg)
{
	int i;

	if (key_garbage(k, arg))
		return true;
	while ((i = key_stale_copy(arg, k)) >= 0)
		bch_key_drop_copy(k, i);
	return false;
}

/* Node hash, so that a pointer key finds its resident child. */

static u64 node_loc(const struct bch_bkey *k)
{
	return bch_ptr_loc(k->ptr[0]);
}

static u32 hash_slot(const struct bch_btree *b, u64 loc)
{
	return (u32)((loc * 0x9e3779b97f4a7c15ULL) >> (64 - b->hash_bits));
}

static struct bch_node *node_find(const struct bch_btree *b, u64 loc)
{
	struct bch_node *n;

	for (n = b->hash[hash_slot(b, loc)]; n; n = n->hnext)
		if (node_loc(&n->key) == loc)
			return n;
	return NULL;
}

/* Grow the table when chains get long; keep the old one if memory is short. */
static void hash_grow(struct bch_btree *b)
{
	unsigned int old_bits = b->hash_bits, i;
	struct bch_node **old = b->hash, **new, *n;

	new = bch_kvzalloc(sizeof(*new) << (old_bits + 1));
	if (!new)
		return;
	b->hash = new;
	b->hash_bits = old_bits + 1;
	for (i = 0; i < (1U << old_bits); i++) {
		while ((n = old[i])) {
			u32 slot = hash_slot(b, node_loc(&n->key));

			old[i] = n->hnext;
			n->hnext = new[slot];
			new[slot] = n;
		}
	}
	bch_kvfree(old);
}

static void hash_add(struct bch_btree *b, struct bch_node *n)
{
	u32 slot = hash_slot(b, node_loc(&n->key));

	n->hnext = b->hash[slot];
	b->hash[slot] = n;
	if (!n->level)
		b->leaves++;
	if (++b->nodes > 2ULL << b->hash_bits && b->hash_bits < 30)
		hash_grow(b);
}

static void lru_del(struct bch_btree *b, struct bch_node *n)
{
	if (!list_empty(&n->lru)) {
		list_del_init(&n->lru);
		b->nclean--;
	}
}

static u32 drop_slot(u64 loc)
{
	return (u32)((loc * 0x9e3779b97f4a7c15ULL) >> (64 - BCH_BTREE_DROP_BITS));
}

static void hash_del(struct bch_btree *b, struct bch_node *n)
{
	struct bch_node **p = &b->hash[hash_slot(b, node_loc(&n->key))];

	while (*p && *p != n)
		p = &(*p)->hnext;
	if (WARN_ON(!*p))
		return;
	*p = n->hnext;
	lru_del(b, n);
	if (!n->level)
		b->leaves--;
	b->nodes--;
	b->drop_seq[drop_slot(node_loc(&n->key))] = ++b->drops;
}

/* Nodes in memory. */

static void node_free(struct bch_node *n)
{
	if (n) {
		bch_kvfree(n->keys);
		bch_kvfree(n);
	}
}

static struct bch_node *node_new(struct bch_btree *b, unsigned int level)
{
	struct bch_node *n = bch_kvzalloc(sizeof(*n));

	if (!n)
		return NULL;
	n->keys = bch_kvzalloc(b->node_keys * sizeof(*n->keys));
	if (!n->keys) {
		bch_kvfree(n);
		return NULL;
	}
	INIT_LIST_HEAD(&n->lru);
	rwlock_init(&n->lock);
	n->stamp = atomic64_inc_return(&b->stamps);
	n->level = level;
	n->nsets = 1;
	n->sets[0].keys = n->keys;
	n->key.size = 1;
	return n;
}

/*
 * Memory and disk differ: off the LRU until written. Under a shared hold
 * the LRU is changed by shared inserts and a flush's write alone, each
 * under lru_lock; exclusive access needs no lock.
 */
static void node_dirty(struct bch_btree *b, struct bch_node *n)
{
	n->stamp = atomic64_inc_return(&b->stamps);
	if (n->dirty)
		return;
	n->dirty = true;
	spin_lock(&b->lru_lock);
	lru_del(b, n);
	spin_unlock(&b->lru_lock);
}

/* Memory and disk agree: a leaf other than the root may be evicted. */
static void node_clean(struct bch_btree *b, struct bch_node *n)
{
	n->dirty = false;
	if (!n->level && n != b->root && list_empty(&n->lru)) {
		spin_lock(&b->lru_lock);
		list_add_tail(&n->lru, &b->clean);
		b->nclean++;
		spin_unlock(&b->lru_lock);
	}
}

u64 bch_btree_evict(struct bch_btree *b, u64 max_leaves)
{
	u64 chances = b->leaves, nr = 0;
	struct bch_node *n;

	while (b->leaves > max_leaves && !list_empty(&b->clean)) {
		n = list_first_entry(&b->clean, struct bch_node, lru);
		if (READ_ONCE(n->accessed) && chances) {
			chances--;
			WRITE_ONCE(n->accessed, false);
			list_move_tail(&n->lru, &b->clean);
			cond_resched();
			continue;
		}
		hash_del(b, n);
		node_free(n);
		b->evictions++;
		nr++;
		cond_resched();
	}
	return nr;
}

static void btree_evict(struct bch_btree *b)
{
	bch_btree_evict(b, b->max_leaves);
}

static void node_set_bucket(struct bch_btree *b, struct bch_node *n, u64 bucket, u8 gen)
{
	n->bucket = bucket;
	n->key.ptr[0] = bch_ptr(bch_node_bucket_dev(bucket), gen,
				bch_node_bucket_nr(bucket) * b->bucket_sectors);
	n->key.nptrs = 1;
}

/* A new empty node in a bucket of its own; not yet in the hash. */
static int node_create(struct bch_btree *b, unsigned int level, struct bch_node **out)
{
	struct bch_node *n = node_new(b, level);
	u64 bucket;
	u8 gen;
	int ret;

	if (!n)
		return -ENOMEM;
	ret = b->ops->alloc(b, &bucket, &gen);
	if (ret) {
		node_free(n);
		return ret;
	}
	node_set_bucket(b, n, bucket, gen);
	n->seq = get_random_u64();
	node_dirty(b, n);
	*out = n;
	return 0;
}

/* Undo node_create(). */
static void node_discard(struct bch_btree *b, struct bch_node *n)
{
	if (n) {
		b->ops->free(b, n->bucket);
		node_free(n);
	}
}

/*
 * Make @nr keys merged from @n's sets into *@keys the node's only set;
 * *@keys gets the buffer they replace. Never fails.
 */
static void node_install(struct bch_btree *b, struct bch_node *n,
			 struct bch_bkey **keys, u32 nr)
{
	struct bch_bkey *merged = *keys;

	*keys = n->keys;
	n->keys = merged;
	n->nkeys = nr;
	n->ndeleted = 0;
	n->nsets = 1;
	n->nwritten = 0;
	n->sets[0].keys = merged;
	n->sets[0].nkeys = nr;
	/* the sets on disk no longer match ours: appending is over */
	if (n->written)
		n->need_cow = true;
	node_dirty(b, n);
	b->compactions++;
}

/* Merge @n's sets into @out, dropping deleted keys and, in leaves, garbage. */
static u32 node_merge(struct bch_btree *b, const struct bch_node *n, struct bch_bkey *out)
{
	return bch_bset_merge(out, n->sets, n->nsets, n->level ? NULL : key_compact, b);
}

/* Merge all sets into one, through the spare buffer. Never fails. */
static void node_compact(struct bch_btree *b, struct bch_node *n)
{
	node_install(b, n, &b->scratch, node_merge(b, n, b->scratch));
}

/*
 * A compaction in two halves, so that lookups need not wait for the
 * merge: under a shared lock, @n is merged into aside_keys; under the
 * exclusive lock, the merge is swapped in if nothing changed @n since
 * (its stamp). Only a GC pass does this.
 */
static void aside_merge(struct bch_btree *b, const struct bch_node *n)
{
	b->aside.nkeys = node_merge(b, n, b->aside_keys);
	b->aside.loc = node_loc(&n->key);
	b->aside.stamp = n->stamp;
}

static struct bch_node *aside_install(struct bch_btree *b)
{
	struct bch_node *n = b->aside.stamp ? node_find(b, b->aside.loc) : NULL;

	if (n && n->stamp == b->aside.stamp) {
		node_install(b, n, &b->aside_keys, b->aside.nkeys);
		b->merged_aside++;
	} else {
		n = NULL;
	}
	b->aside.stamp = 0;
	return n;
}

static bool node_has_garbage(struct bch_btree *b, const struct bch_node *n)
{
	unsigned int i;
	u32 j;

	for (i = 0; i < n->nsets; i++) {
		for (j = 0; j < n->sets[i].nkeys; j++) {
			const struct bch_bkey *k = &n->sets[i].keys[j];

			if (!k->size)
				return true;
			if (!n->level && (key_garbage(k, b) ||
					  key_stale_copy(b, k) >= 0))
				return true;
		}
	}
	return false;
}

static u32 node_live(const struct bch_node *n)
{
	unsigned int i;
	u32 nr = 0;

	for (i = 0; i < n->nsets; i++)
		nr += bch_bset_live(&n->sets[i]);
	return nr;
}

/* The first live key >= (inode, end) over all sets of @n. */
static struct bch_bkey *node_search(const struct bch_node *n, u32 inode, u64 end)
{
	struct bch_bkey *best = NULL, *k;
	unsigned int i;

	for (i = 0; i < n->nsets; i++) {
		k = bch_bset_next(&n->sets[i], inode, end);
		if (k && (!best || bch_bkey_cmp(k, best) < 0))
			best = k;
	}
	return best;
}

/* The position right after key @k, if there is one. */
static bool key_after(const struct bch_bkey *k, u32 *inode, u64 *end)
{
	*inode = k->inode;
	*end = k->end + 1;
	if (k->end < U64_MAX)
		return true;
	*inode = k->inode + 1;
	*end = 0;
	return k->inode < U32_MAX;
}

/*
 * The live key after @prev (NULL: the first). Walks by position, not by
 * index, so they survive changes to the node between steps.
 */
static struct bch_bkey *node_next(const struct bch_node *n, const struct bch_bkey *prev)
{
	u64 end = 0;
	u32 inode = 0;

	if (prev && !key_after(prev, &inode, &end))
		return NULL;
	return node_search(n, inode, end);
}

/* The child of interior node @n that holds key (inode, end), if resident. */
static struct bch_node *node_child(const struct bch_btree *b, const struct bch_node *n,
				   u32 inode, u64 end)
{
	const struct bch_bkey *k = node_search(n, inode, end);
	struct bch_node *c = k ? node_find(b, node_loc(k)) : NULL;

	if (c && WARN_ON(c->level + 1 != n->level))
		return NULL;
	return c;
}

/* The leaf holding sector @sector of @inode (@sector < U64_MAX), if resident. */
static struct bch_node *find_leaf(const struct bch_btree *b, u32 inode, u64 sector)
{
	struct bch_node *n = b->root;

	while (n && n->level)
		n = node_child(b, n, inode, sector + 1);
	return n;
}

static int node_load(struct bch_btree *b, const struct bch_bkey *key, unsigned int level,
		     const struct bch_bkey *lo, struct bch_node **out);

/* The live key of interior node @n before pointer @k, or @n's own lower bound. */
static void node_prev(const struct bch_node *n, const struct bch_bkey *k,
		      struct bch_bkey *lo)
{
	const struct bch_bkey *best = NULL;
	unsigned int i;
	u32 j;

	for (i = 0; i < n->nsets; i++) {
		const struct bch_bset *s = &n->sets[i];

		for (j = bch_bset_search(s, k->inode, k->end); j--;) {
			if (!s->keys[j].size)
				continue;
			if (!best || bch_bkey_cmp(&s->keys[j], best) > 0)
				best = &s->keys[j];
			break;
		}
	}
	*lo = best ? *best : n->lo;
}

/* The child of interior node @p for pointer @k, read if not resident. */
static int node_get(struct bch_btree *b, struct bch_node *p, const struct bch_bkey *k,
		    struct bch_node **out)
{
	struct bch_node *c = node_find(b, node_loc(k));
	struct bch_bkey lo;

	if (c) {
		/* a bucket at two levels or under two keys: corrupt */
		if (c->level + 1 != p->level || bch_bkey_cmp(&c->key, k))
			return -EUCLEAN;
		*out = c;
		return 0;
	}
	node_prev(p, k, &lo);
	return node_load(b, k, p->level - 1, &lo, out);
}

/* find_leaf(), reading the nodes on the way that are not resident. */
static int find_leaf_load(struct bch_btree *b, u32 inode, u64 sector, struct bch_node **out)
{
	struct bch_node *n = b->root;
	const struct bch_bkey *k;
	int ret;

	if (!n)
		return -EIO;
	while (n->level) {
		k = node_search(n, inode, sector + 1);
		if (WARN_ON(!k))
			return -EIO;	/* the last pointer is the max key */
		ret = node_get(b, n, k, &n);
		if (ret)
			return ret;
	}
	WRITE_ONCE(n->accessed, true);
	*out = n;
	return 0;
}

/* Where the part of [.., end) of @inode that belongs in @leaf ends. */
static u64 leaf_end(const struct bch_node *leaf, u32 inode, u64 end)
{
	if (leaf->key.inode == inode && leaf->key.end < end)
		return leaf->key.end;
	return end;
}

static struct bch_node *node_parent(const struct bch_btree *b, const struct bch_node *n)
{
	struct bch_node *p = b->root;

	if (p == n)
		return NULL;
	while (p && p->level > n->level + 1)
		p = node_child(b, p, n->key.inode, n->key.end);
	return p;
}

static void node_open_set(struct bch_btree *b, struct bch_node *n)
{
	n->sets[n->nsets].keys = n->keys + n->nkeys;
	n->sets[n->nsets].nkeys = 0;
	n->nsets++;
	n->stamp = atomic64_inc_return(&b->stamps);
}

/*
 * Merge the open sets of @n from set @from on into one, in place. Only
 * deleted keys go: a dead key may still hide an older one in a written
 * set.
 */
static void node_merge_open(struct bch_btree *b, struct bch_node *n,
			    unsigned int from)
{
	struct bch_bset *first = &n->sets[from];
	/* The sets lie back to back: those from @from on end the buffer. */
	u32 nr, old = n->nkeys - (first->keys - n->keys);

	if (WARN_ON(from < n->nwritten) || n->nsets - from < 2)
		return;
	nr = bch_bset_merge(b->scratch, first, n->nsets - from, NULL, NULL);
	memcpy(first->keys, b->scratch, nr * sizeof(*b->scratch));
	first->nkeys = nr;
	n->nsets = from + 1;
	n->nkeys -= old - nr;
	n->ndeleted -= min(n->ndeleted, old - nr);
	n->stamp = atomic64_inc_return(&b->stamps);
}

/*
 * Make room for @nr more keys in an open set of @n, opening a set or
 * compacting as needed. -ENOSPC: @n must be split.
 */
static int node_reserve(struct bch_btree *b, struct bch_node *n, u32 nr)
{
	bool compacted = false;

	/* Searches step over deleted keys one by one: do not let them pile up. */
	if (n->ndeleted > b->node_keys / 4) {
		node_compact(b, n);
		compacted = true;
	}
	if (n->nwritten == n->nsets) {
		if (n->nsets < b->max_sets && n->nkeys + nr <= b->node_keys) {
			node_open_set(b, n);
		} else {
			node_compact(b, n);
			compacted = true;
		}
	}
	/*
	 * An insert shifts the keys of the last set after its own. Only the
	 * last two open sets merge: the first may be the whole node (after
	 * a compaction), and the second grows only until the next write.
	 */
	if (n->sets[n->nsets - 1].nkeys >= b->open_set_keys) {
		if (n->nsets - n->nwritten >= BCH_BTREE_OPEN_SETS)
			node_merge_open(b, n, n->nsets - 2);
		node_open_set(b, n);
	}
	if (n->nkeys + nr > b->node_keys && !compacted) {
		node_compact(b, n);
		compacted = true;
	}
	if (n->nkeys + nr > b->node_keys || (compacted && n->nkeys > b->split_keys))
		return -ENOSPC;
	return 0;
}

/*
 * Room for the two pointers a split of a child adds. Interior nodes never
 * hold more than split_keys live keys, so that a flush can always make
 * room for a replaced pointer by compacting.
 */
static int node_reserve_ptrs(struct bch_btree *b, struct bch_node *p)
{
	if (node_live(p) + 1 > b->split_keys)
		return -ENOSPC;
	return node_reserve(b, p, 2);
}

/* Set pointer @k in interior node @p, replacing the one with its (inode, end). */
static void node_set_ptr(struct bch_btree *b, struct bch_node *p, const struct bch_bkey *k)
{
	struct bch_bset *open = &p->sets[p->nsets - 1];
	struct bch_bkey *old;
	unsigned int i;

	WARN_ON(p->nwritten == p->nsets || !p->level);
	node_dirty(b, p);
	for (i = 0; i < p->nsets; i++) {
		old = bch_bset_next(&p->sets[i], k->inode, k->end);
		if (!old || bch_bkey_cmp(old, k))
			continue;
		if (i + 1 == p->nsets) {
			*old = *k;
			return;
		}
		old->size = 0;	/* the newer set will say where it went */
		p->ndeleted++;
	}
	bch_bset_insert(open, k);
	p->nkeys++;
}

/* Insert extent @k, all of it inside @n, which has room for 2 keys. */
static void leaf_insert(struct bch_btree *b, struct bch_node *n, const struct bch_bkey *k)
{
	struct bch_bset *open = &n->sets[n->nsets - 1];
	struct bch_bkey tail = { .size = 0 };
	unsigned int i;

	WARN_ON(n->nwritten == n->nsets || n->nkeys + 2 > b->node_keys);
	for (i = 0; i < n->nsets; i++)
		n->ndeleted += bch_bset_fixup(&n->sets[i], k, &tail);
	if (tail.size) {
		bch_bset_insert(open, &tail);
		n->nkeys++;
	}
	bch_bset_insert(open, k);
	n->nkeys++;
	node_dirty(b, n);
}

/*
 * Split @n into two new nodes, growing the tree if @n is the root. The
 * parent gets room first, which may split it too. On error the tree holds
 * the same keys as before (a split of an ancestor may have happened).
 */
static int node_split(struct bch_btree *b, struct bch_node *n)
{
	struct bch_node *p, *l = NULL, *r = NULL, *root = NULL;
	u32 nr, mid;
	int ret;

	for (;;) {
		p = node_parent(b, n);
		if (!p)
			break;
		ret = node_reserve_ptrs(b, p);
		if (!ret)
			break;
		if (ret != -ENOSPC)
			return ret;
		ret = node_split(b, p);
		if (ret)
			return ret;
	}
	if (!p && n != b->root)
		return -EIO;
	if (!p) {
		if (b->level + 1 >= BCH_BTREE_MAX_DEPTH)
			return -ENOSPC;
		ret = node_create(b, n->level + 1, &root);
		if (ret)
			return ret;
	}
	ret = node_create(b, n->level, &l);
	if (!ret)
		ret = node_create(b, n->level, &r);
	if (!ret) {
		node_compact(b, n);
		if (WARN_ON(n->nkeys < 2))
			ret = -EIO;
	}
	if (ret) {
		node_discard(b, r);
		node_discard(b, l);
		node_discard(b, root);
		return ret;
	}

	nr = n->nkeys;
	mid = nr / 2;
	memcpy(l->keys, n->keys, mid * sizeof(*n->keys));
	l->nkeys = mid;
	l->sets[0].nkeys = mid;
	l->key.inode = n->keys[mid - 1].inode;
	l->key.end = n->keys[mid - 1].end;
	memcpy(r->keys, n->keys + mid, (nr - mid) * sizeof(*n->keys));
	r->nkeys = nr - mid;
	r->sets[0].nkeys = nr - mid;
	r->key.inode = n->key.inode;
	r->key.end = n->key.end;
	l->lo = n->lo;
	r->lo = l->key;

	hash_del(b, n);
	hash_add(b, l);
	hash_add(b, r);
	if (root) {
		root->key.inode = U32_MAX;
		root->key.end = U64_MAX;
		bch_bset_insert(&root->sets[0], &l->key);
		bch_bset_insert(&root->sets[0], &r->key);
		root->nkeys = 2;
		hash_add(b, root);
		b->root = root;
		b->level = root->level;
	} else {
		node_set_ptr(b, p, &l->key);
		node_set_ptr(b, p, &r->key);	/* replaces n's */
	}
	b->ops->free(b, n->bucket);
	node_free(n);
	b->splits++;
	return 0;
}

int bch_btree_insert(struct bch_btree *b, const struct bch_bkey *k)
{
	u64 start, end, pos, next;
	struct bch_node *n;
	int ret;

	if (!b->root || !k->size || k->size > k->end)
		return -EINVAL;
	start = bch_key_start(k);
	end = k->end;

	/* First room in every leaf the extent spans, so that the rest cannot fail. */
	for (pos = start; pos < end;) {
		ret = find_leaf_load(b, k->inode, pos, &n);
		if (ret)
			goto out;
		ret = node_reserve(b, n, 2);
		if (ret == -ENOSPC) {
			ret = node_split(b, n);
			if (ret)
				goto out;
			continue;
		}
		pos = leaf_end(n, k->inode, end);
	}

	for (pos = start; pos < end; pos = next) {
		struct bch_bkey piece = *k;

		n = find_leaf(b, k->inode, pos);
		next = leaf_end(n, k->inode, end);
		bch_key_slice(&piece, pos, next);
		leaf_insert(b, n, &piece);
	}
	ret = 0;
out:
	btree_evict(b);
	return ret;
}

/* The first live key of leaf @n at or after (inode, end) into @out: under its lock. */
static bool leaf_search(struct bch_node *n, u32 inode, u64 end, struct bch_bkey *out)
{
	const struct bch_bkey *k;

	read_lock(&n->lock);
	k = node_search(n, inode, end);
	if (k)
		*out = *k;
	read_unlock(&n->lock);
	return k;
}

/*
 * node_reserve() for a shared insert: only what changes @n alone (an open
 * set opened; the leaf made dirty by the insert), never a merge or a
 * compaction, which use the tree's buffers. Leaf lock held.
 */
static bool leaf_reserve_shared(struct bch_btree *b, struct bch_node *n, u32 nr)
{
	if (n->writing || n->ndeleted > b->node_keys / 4 ||
	    n->nkeys + nr > b->node_keys)
		return false;
	if (n->nwritten == n->nsets) {
		if (n->nsets >= b->max_sets)
			return false;
		node_open_set(b, n);
	} else if (n->sets[n->nsets - 1].nkeys >= b->open_set_keys) {
		if (n->nsets - n->nwritten >= BCH_BTREE_OPEN_SETS)
			return false;
		node_open_set(b, n);
	}
	return true;
}

struct bch_node *bch_btree_leaf_lock(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_node *n;

	if (!b->root || !k->size || k->size > k->end)
		return NULL;
	n = find_leaf(b, k->inode, bch_key_start(k));
	if (!n || leaf_end(n, k->inode, k->end) != k->end)
		return NULL;
	write_lock(&n->lock);
	if (leaf_reserve_shared(b, n, 2)) {
		WRITE_ONCE(n->accessed, true);
		return n;
	}
	write_unlock(&n->lock);
	return NULL;
}

void bch_btree_leaf_insert(struct bch_btree *b, struct bch_node *n,
			   const struct bch_bkey *k)
{
	leaf_insert(b, n, k);
}

void bch_btree_leaf_unlock(struct bch_node *n)
{
	write_unlock(&n->lock);
}

u64 bch_btree_dirty_leaves(struct bch_btree *b)
{
	return b->leaves - READ_ONCE(b->nclean);
}

u64 bch_btree_evictable(struct bch_btree *b)
{
	u64 over = b->leaves > b->max_leaves ? b->leaves - b->max_leaves : 0;

	return min_t(u64, over, READ_ONCE(b->nclean));
}

int bch_btree_lookup(struct bch_btree *b, u32 inode, u64 start, u64 end,
		     struct bch_bkey *out)
{
	struct bch_bkey found, *k = &found;
	struct bch_node *n;
	u64 pos = start;

	memset(out, 0, sizeof(*out));
	if (start >= end)
		return -EINVAL;
	if (end - start > U32_MAX)
		end = start + U32_MAX;

	n = find_leaf(b, inode, pos);
	while (pos < end) {
		if (!n) {
			out->inode = inode;
			out->end = pos;
			return -EAGAIN;
		}
		if (!READ_ONCE(n->accessed))
			WRITE_ONCE(n->accessed, true);
		if (leaf_search(n, inode, pos + 1, &found) && k->inode == inode &&
		    bch_key_start(k) < end) {
			if (!(k->flags & BCH_KEY_HOLE) && !key_dead(b, k)) {
				if (bch_key_start(k) <= start) {
					*out = *k;
					bch_key_slice(out, start, min(k->end, end));
					return 1;
				}
				pos = bch_key_start(k);
				break;
			}
			pos = k->end;		/* holes and dead keys extend the hole */
			continue;
		}
		if (n->key.inode != inode || n->key.end >= end) {
			pos = end;
			break;
		}
		pos = n->key.end;		/* on into the next leaf */
		n = find_leaf(b, inode, pos);
	}
	out->inode = inode;
	out->size = min(pos, end) - start;
	out->end = start + out->size;
	out->flags = BCH_KEY_HOLE;
	out->nptrs = 0;
	return 0;
}

int bch_btree_load_range(struct bch_btree *b, u32 inode, u64 start, u64 end)
{
	struct bch_node *n;
	u64 pos = start;
	int ret;

	while (pos < end) {
		ret = find_leaf_load(b, inode, pos, &n);
		if (ret)
			return ret;
		if (n->key.inode != inode || n->key.end >= end)
			break;
		pos = n->key.end;
	}
	return 0;
}

/* Every node below @n; each must be new: a bucket twice is a corrupt tree. */
static int node_read_all(struct bch_btree *b, struct bch_node *n)
{
	struct bch_bkey *k, pos;
	struct bch_node *c;
	int ret;

	if (!n->level)
		return 0;
	for (k = node_next(n, NULL); k; k = node_next(n, &pos)) {
		pos = *k;
		if (node_find(b, node_loc(&pos)))
			return -EUCLEAN;
		ret = node_get(b, n, &pos, &c);
		if (!ret)
			ret = node_read_all(b, c);
		if (ret)
			return ret;
	}
	return 0;
}

int bch_btree_read_all(struct bch_btree *b)
{
	if (!b->root)
		return -EINVAL;
	return node_read_all(b, b->root);
}

int bch_btree_lookup_load(struct bch_btree *b, u32 inode, u64 start, u64 end,
			  struct bch_bkey *out)
{
	int ret;

	/* Ends: nothing is evicted in between, so each round reads a leaf. */
	btree_evict(b);
	for (;;) {
		ret = bch_btree_lookup(b, inode, start, end, out);
		if (ret != -EAGAIN)
			return ret;
		ret = bch_btree_load_range(b, inode, out->end, out->end + 1);
		if (ret)
			return ret;
	}
}

/*
 * A GC pass enters @n: compact it if it holds garbage and report its own
 * pointer; a leaf's live keys too. Interior nodes are entered once per
 * pass (gc_gen), on the way to their first leaf.
 */
static void node_gc(struct bch_btree *b, struct bch_node *n, bch_btree_gc_fn fn,
		    void *arg, bool clean)
{
	const struct bch_bkey *k;
	unsigned int i;
	u32 j;

	if (n->level && n->gc_gen == b->gc_gen)
		return;
	n->gc_gen = b->gc_gen;
	if (!clean && node_has_garbage(b, n))
		node_compact(b, n);
	fn(b, &n->key, true, arg);
	if (n->level)
		return;
	/*
	 * Compacted or clean of garbage: every key is live, but for one whose
	 * bucket was invalidated since a shared step looked (or merged).
	 */
	for (i = 0; i < n->nsets; i++) {
		for (j = 0; j < n->sets[i].nkeys; j++) {
			k = &n->sets[i].keys[j];
			if (!clean || !key_garbage(k, b))
				fn(b, k, false, arg);
		}
	}
}

/* node_gc() would compact @n: only exclusive access will do. */
static bool node_gc_compacts(struct bch_btree *b, const struct bch_node *n)
{
	return !(n->level && n->gc_gen == b->gc_gen) && node_has_garbage(b, n);
}

void bch_btree_gc_start(struct bch_btree *b)
{
	b->gc_gen++;
	memset(&b->gc_pos, 0, sizeof(b->gc_pos));
	memset(&b->gc_prep, 0, sizeof(b->gc_prep));
	b->aside.stamp = 0;
}

/*
 * The leaf a step enters and the nodes on the way to it into @path: 1,
 * or 0 if the pass is done, or -EAGAIN if one is not resident (or looks
 * corrupt: node_get() says so under exclusive access).
 */
static int gc_path(struct bch_btree *b, struct bch_node **path, unsigned int *depth)
{
	struct bch_node *n = b->root, *c;
	struct bch_bkey *k;
	u64 end;
	u32 inode;

	if (!key_after(&b->gc_pos, &inode, &end))
		return 0;
	*depth = 0;
	for (;;) {
		if (*depth == BCH_BTREE_MAX_DEPTH)
			return -EAGAIN;
		path[(*depth)++] = n;
		if (!n->level)
			return 1;
		k = node_search(n, inode, end);
		c = k ? node_find(b, node_loc(k)) : NULL;
		if (!c || c->level + 1 != n->level || bch_bkey_cmp(&c->key, k))
			return -EAGAIN;
		n = c;
	}
}

/* The end of a step: @n is the leaf it went through. */
static int gc_step_done(struct bch_btree *b, struct bch_node *n, bool read)
{
	u64 end;
	u32 inode;

	/* Read for the pass alone: first to go, not the working set. */
	if ((read || n->gc_read) && !list_empty(&n->lru))
		list_move(&n->lru, &b->clean);
	n->gc_read = false;
	b->gc_pos = n->key;
	memset(&b->gc_prep, 0, sizeof(b->gc_prep));
	return key_after(&b->gc_pos, &inode, &end);
}

/*
 * Enter the leaf after gc_pos, and the nodes on the way to it. Leaves
 * partition the key space and a split only divides a leaf, so the leaves
 * at or below gc_pos are exactly those the pass has been through,
 * whatever changed between steps. (No leaf ends at (0, 0): keys are never
 * empty.)
 */
int bch_btree_gc_step(struct bch_btree *b, bch_btree_gc_fn fn, void *arg)
{
	struct bch_node *n = b->root;
	u64 reads = b->reads, end;
	struct bch_bkey *k;
	u32 inode;
	int ret;

	if (!n)
		return -EINVAL;
	if (!key_after(&b->gc_pos, &inode, &end))
		return 0;
	n = aside_install(b);
	if (n) {
		/* The shared step counts it, unless it changes meanwhile. */
		b->gc_prep.installed = n->stamp;
		return 1;
	}
	n = b->root;
	node_gc(b, n, fn, arg, false);
	while (n->level) {
		k = node_search(n, inode, end);
		if (WARN_ON(!k))
			return -EIO;	/* the last pointer is the max key */
		ret = node_get(b, n, k, &n);
		if (ret)
			return ret;
		node_gc(b, n, fn, arg, false);
	}
	ret = gc_step_done(b, n, b->reads != reads);
	btree_evict(b);
	return ret;
}

/*
 * A leaf with garbage is merged aside here, once per step, for the
 * exclusive step to swap in; once in, and unchanged since, it is counted
 * as it is (but for keys gone stale since). A leaf that keeps changing
 * falls to the exclusive step.
 */
int bch_btree_gc_step_shared(struct bch_btree *b, bch_btree_gc_fn fn, void *arg)
{
	struct bch_node *path[BCH_BTREE_MAX_DEPTH], *n;
	unsigned int depth, i;
	int ret;

	if (!b->root)
		return -EINVAL;
	ret = gc_path(b, path, &depth);
	if (ret <= 0)
		return ret;
	n = path[depth - 1];
	for (i = 0; i + 1 < depth; i++)
		if (node_gc_compacts(b, path[i]))
			return -EAGAIN;
	if (n->stamp != b->gc_prep.installed && node_has_garbage(b, n)) {
		if (b->gc_prep.tried)
			return -EAGAIN;
		b->gc_prep.tried = true;
		aside_merge(b, n);
		return -EAGAIN;
	}
	for (i = 0; i < depth; i++)
		node_gc(b, path[i], fn, arg, true);
	return gc_step_done(b, n, false);
}

u32 bch_btree_gc_passed(const struct bch_btree *b, const struct bch_bkey *k)
{
	const struct bch_bkey *pos = &b->gc_pos;
	u64 start = bch_key_start(k);

	if (k->inode != pos->inode)
		return k->inode < pos->inode ? k->size : 0;
	if (k->end <= pos->end)
		return k->size;
	return pos->end > start ? pos->end - start : 0;
}

int bch_btree_gc(struct bch_btree *b, bch_btree_gc_fn fn, void *arg)
{
	int ret;

	bch_btree_gc_start(b);
	do {
		/* A pass over a large index must not hog the CPU (it may sleep). */
		cond_resched();
		ret = bch_btree_gc_step(b, fn, arg);
	} while (ret > 0);
	return ret;
}

/* IO. */

/*
 * A flush step only chooses the node it writes and what of it; the node
 * is packed and written in bch_btree_flush_write(), with lookups let in
 * meanwhile, so the exclusive hold does not grow with the node. So
 * whatever a lookup reads (the hash, pointers, sets) changes here, before
 * the write, and what only the flush reads (how much of the bucket is
 * ours, cleanliness) changes once the write is done.
 */
static void write_pend(struct bch_btree *b, struct bch_node *n, u64 bucket,
		       u32 offset, u64 seq, bool whole)
{
	/* Shared inserts keep out until it is written, or the flush dropped. */
	n->writing = true;
	b->pend.node = n;
	b->pend.bucket = bucket;
	b->pend.offset = offset;
	b->pend.seq = seq;
	b->pend.whole = whole;
}

/* A step's choice that no write followed (a flush abandoned). */
static void pend_drop(struct bch_btree *b)
{
	if (b->pend.node)
		b->pend.node->writing = false;
	b->pend.node = NULL;
}

/* Write @n whole as the only set of @bucket, under a new @seq. */
static int node_write_whole(struct bch_btree *b, struct bch_node *n, u64 bucket, u64 seq)
{
	if (WARN_ON(n->nsets != 1))
		return -EIO;
	write_pend(b, n, bucket, 0, seq, true);
	return 0;
}

/*
 * Rewrite @n whole to a new bucket and point @parent (NULL: root) there.
 * The pointer moves before the write: until the flush is done, no node on
 * disk is written to name it.
 */
static int node_cow(struct bch_btree *b, struct bch_node *n, struct bch_node *parent)
{
	u64 bucket, old = n->bucket;
	u8 gen;
	int ret;

	/* Room for the new pointer before anything changes. */
	if (parent) {
		ret = node_reserve(b, parent, 1);
		if (WARN_ON(ret))
			return -EIO;
	}
	ret = b->ops->alloc(b, &bucket, &gen);
	if (ret)
		return ret;
	/* Compacted since its last write, or several sets open: merge them. */
	if (n->nsets > 1 || n->ndeleted)
		node_compact(b, n);
	ret = node_write_whole(b, n, bucket, get_random_u64());
	if (ret) {
		b->ops->free(b, bucket);
		return ret;
	}
	hash_del(b, n);
	node_set_bucket(b, n, bucket, gen);
	hash_add(b, n);
	if (parent)
		node_set_ptr(b, parent, &n->key);
	b->ops->free(b, old);
	b->cows++;
	return 0;
}

/* Choose what of @n to write, if anything, for bch_btree_flush_write(). */
static int node_write(struct bch_btree *b, struct bch_node *n, struct bch_node *parent)
{
	u32 block_bytes = b->block_sectors << BCH_SECTOR_SHIFT;
	size_t bytes;

	if (!n->dirty)
		return 0;
	if (!n->written) {
		/* Nothing of ours in the bucket yet: write in place. */
		if (n->nsets > 1 || node_has_garbage(b, n))
			node_compact(b, n);
		return node_write_whole(b, n, n->bucket, n->seq);
	}
	if (!n->need_cow) {
		if (n->nwritten == n->nsets) {
			node_clean(b, n);
			return 0;
		}
		/* What is open goes to disk as one set. */
		node_merge_open(b, n, n->nwritten);
		bytes = bch_bset_bytes(bch_bset_live(&n->sets[n->nsets - 1]),
				       b->key_bytes, block_bytes);
		if (n->written + (bytes >> BCH_SECTOR_SHIFT) <= b->bucket_sectors) {
			write_pend(b, n, n->bucket, n->written, n->seq, false);
			return 0;
		}
	}
	return node_cow(b, n, parent);
}

/* A flush under way has written @n, or found it clean. */
static bool node_done(const struct bch_btree *b, const struct bch_node *n)
{
	return n->flushed == b->flush_gen;
}

/*
 * The first node at or below @n that the flush has not passed, children
 * first: their new buckets go into @n before @n is written. A child that
 * is not resident is clean; a clean leaf is passed on the way. *@parent
 * becomes the parent of the node returned.
 */
static struct bch_node *flush_next(struct bch_btree *b, struct bch_node *n,
				   struct bch_node **parent)
{
	struct bch_bkey *k, pos;
	struct bch_node *c;

	if (!n->level)
		return n;
	for (k = node_next(n, NULL); k; k = node_next(n, &pos)) {
		pos = *k;
		c = node_find(b, node_loc(k));
		if (!c || node_done(b, c))
			continue;
		if (!c->level && !c->dirty) {
			c->flushed = b->flush_gen;
			continue;
		}
		*parent = n;
		return flush_next(b, c, parent);
	}
	return n;
}

void bch_btree_flush_start(struct bch_btree *b)
{
	b->flush_gen++;
	memset(&b->flush_pos, 0, sizeof(b->flush_pos));
	pend_drop(b);
}

/*
 * The nodes a flush has passed lie at or below flush_pos in key order.
 * Nodes that splits made since may lie anywhere: under a node the flush
 * has passed, whose copy on disk does not name them, or under one it has
 * not (the path to flush_pos), which flush_next() finds before it.
 */
int bch_btree_flush_step(struct bch_btree *b)
{
	struct bch_node *n = b->root, *p = NULL, *c;
	struct bch_bkey *k, pos;
	int ret;

	if (!n)
		return -EINVAL;
	pend_drop(b);
	if (node_done(b, n))
		return 0;
	while (n->level) {
		c = NULL;
		for (k = node_search(n, b->flush_pos.inode, b->flush_pos.end); k;
		     k = node_next(n, &pos)) {
			pos = *k;
			c = node_find(b, node_loc(k));
			if (c && !node_done(b, c) && (c->level || c->dirty))
				break;
			if (c)
				c->flushed = b->flush_gen;	/* clean leaf */
			c = NULL;
		}
		if (!c)
			break;		/* all below n is done: n itself */
		if (c->level) {
			p = n;
			n = c;
			continue;
		}
		ret = node_write(b, c, n);
		if (ret)
			return ret;
		c->flushed = b->flush_gen;
		b->flush_pos = c->key;
		btree_evict(b);
		return 1;
	}
	/* What splits left under n first, a node a step; then n. */
	c = flush_next(b, n, &p);
	ret = node_write(b, c, p);
	if (ret)
		return ret;
	c->flushed = b->flush_gen;
	if (c != n)
		return 1;
	b->flush_pos = n->key;
	btree_evict(b);
	return n == b->root ? 0 : 1;
}

int bch_btree_flush_write(struct bch_btree *b)
{
	u32 block_bytes = b->block_sectors << BCH_SECTOR_SHIFT;
	struct bch_node *n = b->pend.node;
	u32 sectors;
	int ret;

	if (!n)
		return 0;
	b->pend.node = NULL;
	/* Unchanged since the step: the whole node, or its open set. */
	sectors = bch_bset_pack(b->iobuf, &n->sets[n->nsets - 1], b->pend.seq,
				n->level, b->pend.whole ? 0 : n->nwritten,
				block_bytes, b->key_bytes) >> BCH_SECTOR_SHIFT;
	ret = b->ops->io(b, true, b->pend.bucket, b->pend.offset, b->iobuf, sectors);
	write_lock(&n->lock);
	n->writing = false;
	if (ret) {
		write_unlock(&n->lock);
		return ret;	/* still dirty: the next flush writes it again */
	}
	if (b->pend.whole) {
		n->seq = b->pend.seq;
		n->written = sectors;
		n->nwritten = 1;
		n->need_cow = false;
	} else {
		n->written += sectors;
		n->nwritten++;
	}
	node_clean(b, n);
	write_unlock(&n->lock);
	b->set_writes++;
	return 0;
}

int bch_btree_flush(struct bch_btree *b)
{
	int ret, w;

	bch_btree_flush_start(b);
	do {
		ret = bch_btree_flush_step(b);
		w = ret < 0 ? 0 : bch_btree_flush_write(b);
	} while (ret > 0 && !w);
	return ret < 0 ? ret : w;
}

void bch_btree_root(struct bch_btree *b, struct bch_bkey *root, unsigned int *level)
{
	if (b->root) {
		*root = b->root->key;
		*level = b->level;
	} else {
		memset(root, 0, sizeof(*root));
		*level = 0;
	}
}

/* Load. */

/* Redo on the older sets the cuts the keys of every newer set made. */
static void node_replay(struct bch_node *n)
{
	struct bch_bkey tail, *old;
	unsigned int i, j;
	u32 x;

	for (j = 1; j < n->nsets; j++) {
		for (x = 0; x < n->sets[j].nkeys; x++) {
			const struct bch_bkey *k = &n->sets[j].keys[x];

			for (i = 0; i < j; i++) {
				if (!n->level) {
					/* a split's tail went to set j or later: drop it */
					bch_bset_fixup(&n->sets[i], k, &tail);
					continue;
				}
				old = bch_bset_next(&n->sets[i], k->inode, k->end);
				if (old && !bch_bkey_cmp(old, k))
					old->size = 0;
			}
		}
	}
}

/*
 * A leaf key on disk was valid when written, dead or alive: one that the
 * caller's rule refuses means a corrupt node, whatever its checksum says.
 */
static int leaf_keys_check(struct bch_btree *b, const struct bch_node *n,
			   const struct bch_bkey *k, u32 nr)
{
	const char *why;
	u32 i;

	if (n->level || !b->ops->key_invalid)
		return 0;
	for (i = 0; i < nr; i++) {
		why = b->ops->key_invalid(b, &k[i]);
		if (why) {
			pr_err("node in bucket %llu: leaf key (inode %u, end %llu, cache sector %llu, %u sectors) %s\n",
			       n->bucket, k[i].inode, k[i].end, bch_key_sector(&k[i]), k[i].size,
			       why);
			return -EUCLEAN;
		}
	}
	return 0;
}

/* Take @n's sets from @buf, a copy of its bucket. */
static int node_parse(struct bch_btree *b, struct bch_node *n, const u8 *buf)
{
	size_t bucket_bytes = (size_t)b->bucket_sectors << BCH_SECTOR_SHIFT;
	size_t off = 0, bytes;
	int ret;

	/* We never write more than BCH_BTREE_MAX_SETS sets to one bucket. */
	n->nsets = 0;
	while (off < bucket_bytes && n->nsets < BCH_BTREE_MAX_SETS) {
		ret = bch_bset_unpack(buf + off, bucket_bytes - off, &n->seq,
				      n->level, n->nsets, n->keys + n->nkeys,
				      b->node_keys - n->nkeys,
				      b->block_sectors << BCH_SECTOR_SHIFT, b->key_bytes,
				      &bytes);
		if (ret == -EUCLEAN) {
			pr_err("node in bucket %llu: set %u holds a key no index key can be\n",
			       n->bucket, n->nsets);
			return ret;
		}
		if (ret < 0)
			break;		/* torn, stale or never written */
		if (leaf_keys_check(b, n, n->keys + n->nkeys, ret))
			return -EUCLEAN;
		n->sets[n->nsets].keys = n->keys + n->nkeys;
		n->sets[n->nsets].nkeys = ret;
		n->nsets++;
		n->nkeys += ret;
		off += bytes;
	}
	if (!n->nsets)
		return -EUCLEAN;
	n->written = off >> BCH_SECTOR_SHIFT;
	n->nwritten = n->nsets;
	node_replay(n);
	n->ndeleted = n->nkeys - node_live(n);
	return 0;
}

/*
 * Check that the live keys of @n are sorted, above the node's lower bound
 * (@lo, exclusive: the previous sibling's max) and at most its max; that
 * no extent crosses either bound; that pointers look like pointers.
 */
static bool bad_ptr(const struct bch_btree *b, const struct bch_bkey *k)
{
	u32 rem;

	div_u64_rem(bch_key_sector(k), b->bucket_sectors, &rem);
	return k->size != 1 || k->nptrs != 1 ||
	       bch_ptr_dev(k->ptr[0]) >= max_t(u32, b->nr_members, 1) || rem;
}

/* The bucket of a node's pointer key, as the ops name it. */
static u64 key_bucket(const struct bch_btree *b, const struct bch_bkey *k)
{
	return bch_node_bucket_id(bch_ptr_dev(k->ptr[0]),
				  div_u64(bch_key_sector(k), b->bucket_sectors));
}

static int node_check(struct bch_btree *b, const struct bch_node *n, const struct bch_bkey *lo)
{
	const struct bch_bkey *k, *prev = lo;
	u32 nr, i;

	nr = bch_bset_merge(b->scratch, n->sets, n->nsets, NULL, NULL);
	for (i = 0; i < nr; prev = k, i++) {
		k = &b->scratch[i];
		if (bch_bkey_cmp(k, prev) <= 0 || bch_bkey_cmp(k, &n->key) > 0)
			return -EUCLEAN;
		if (n->level) {
			if (bad_ptr(b, k))
				return -EUCLEAN;
		} else if (k->size > k->end ||
			   (k->inode == prev->inode && bch_key_start(k) < prev->end)) {
			return -EUCLEAN;
		}
	}
	if (n->level && (!nr || nr > b->split_keys || bch_bkey_cmp(prev, &n->key)))
		return -EUCLEAN;
	return 0;
}

/*
 * Read the node @key points to, at @level, above @lo; resident and clean.
 * @buf, if not NULL, already holds a copy of its bucket.
 */
static int node_load_from(struct bch_btree *b, const struct bch_bkey *key,
			  unsigned int level, const struct bch_bkey *lo,
			  const void *buf, struct bch_node **out)
{
	struct bch_node *n;
	int ret;

	if (bad_ptr(b, key))
		return -EUCLEAN;
	n = node_new(b, level);
	if (!n)
		return -ENOMEM;
	n->key = *key;
	n->lo = *lo;
	n->bucket = key_bucket(b, key);

	ret = 0;
	if (!buf) {
		ret = b->ops->io(b, false, n->bucket, 0, b->iobuf, b->bucket_sectors);
		buf = b->iobuf;
	}
	if (!ret)
		ret = node_parse(b, n, buf);
	if (!ret)
		ret = node_check(b, n, lo);
	if (ret) {
		if (ret == -EUCLEAN)
			pr_err("bad node at level %u in bucket %llu\n", level, n->bucket);
		node_free(n);
		return ret;
	}
	hash_add(b, n);
	node_clean(b, n);
	b->reads++;
	*out = n;
	return 0;
}

static int node_load(struct bch_btree *b, const struct bch_bkey *key, unsigned int level,
		     const struct bch_bkey *lo, struct bch_node **out)
{
	return node_load_from(b, key, level, lo, NULL, out);
}

/*
 * Nodes read with no lock held. Under the caller's lock (read will do),
 * bch_btree_want() or bch_btree_gc_want() names the first node a lookup
 * or the next GC step lacks; the caller lets go, reads its bucket into a
 * buffer of its own (bch_btree_want_read()), and gives it to
 * bch_btree_want_fill() under the lock held for write.
 *
 * Only a node in memory is ever written to a bucket that a pointer
 * names, so a node that stayed out of memory all along still has on
 * disk what was read. One that came in meanwhile is resident still, or
 * left memory again: hash_del() notes when, in drop_seq[] by a hash of
 * its pointer, and the fill refuses if that is after the want (now and
 * then for another node of the same hash: only a read is wasted). A
 * tree freed or set up again refuses every want named before.
 */
static void want_set(const struct bch_btree *b, const struct bch_node *p,
		     const struct bch_bkey *k, struct bch_btree_want *w)
{
	w->key = *k;
	node_prev(p, k, &w->lo);
	w->level = p->level - 1;
	w->drops = b->drops;
}

/* Down toward (inode, end): the leaf, or NULL with *@w set if a node lacks. */
static struct bch_node *want_walk(const struct bch_btree *b, u32 inode, u64 end,
				  struct bch_btree_want *w, bool *missing)
{
	struct bch_node *n = b->root, *c;
	const struct bch_bkey *k;

	*missing = false;
	while (n && n->level) {
		k = node_search(n, inode, end);
		if (!k)
			return NULL;	/* corrupt: the locked path says so */
		c = node_find(b, node_loc(k));
		if (!c) {
			want_set(b, n, k, w);
			*missing = true;
			return NULL;
		}
		if (c->level + 1 != n->level)
			return NULL;
		n = c;
	}
	return n;
}

bool bch_btree_want(const struct bch_btree *b, u32 inode, u64 start, u64 end,
		    struct bch_btree_want *w)
{
	struct bch_node *n;
	bool missing;

	while (start < end) {
		n = want_walk(b, inode, start + 1, w, &missing);
		if (!n)
			return missing;
		if (n->key.inode != inode || n->key.end >= end)
			break;
		start = n->key.end;
	}
	return false;
}

bool bch_btree_gc_want(const struct bch_btree *b, struct bch_btree_want *w)
{
	bool missing;
	u32 inode;
	u64 end;

	if (!key_after(&b->gc_pos, &inode, &end))
		return false;
	want_walk(b, inode, end, w, &missing);
	return missing;
}

int bch_btree_want_read(struct bch_btree *b, const struct bch_btree_want *w, void *buf)
{
	if (bad_ptr(b, &w->key))
		return -EUCLEAN;
	return b->ops->io(b, false, key_bucket(b, &w->key), 0, buf,
			  b->bucket_sectors);
}

static bool want_intact(const struct bch_btree *b, const struct bch_btree_want *w)
{
	return w->drops >= b->drops_floor &&
	       b->drop_seq[drop_slot(node_loc(&w->key))] <= w->drops;
}

int bch_btree_want_fill(struct bch_btree *b, const struct bch_btree_want *w,
			const void *buf, bool for_gc)
{
	struct bch_node *p = b->root, *n;
	const struct bch_bkey *k;
	int ret;

	if (node_find(b, node_loc(&w->key)))
		return 0;		/* read by another meanwhile */
	if (!want_intact(b, w))
		return -EAGAIN;
	while (p && p->level > w->level + 1)
		p = node_child(b, p, w->key.inode, w->key.end);
	if (!p || p->level != w->level + 1)
		return -EAGAIN;
	k = node_search(p, w->key.inode, w->key.end);
	if (!k || bch_bkey_cmp(k, &w->key) || k->ptr[0] != w->key.ptr[0])
		return -EAGAIN;
	ret = node_load_from(b, k, w->level, &w->lo, buf, &n);
	if (ret)
		return ret;
	/*
	 * A second chance for the user, who has yet to take the lock again;
	 * the GC pass's leaves are the first to go once it went through.
	 */
	WRITE_ONCE(n->accessed, !for_gc);
	n->gc_read = for_gc && !n->level;
	b->reads_unlocked++;
	return 0;
}

/* Tunables, buffers and the hash; the tree itself is up to the caller. */
static int btree_setup(struct bch_btree *b)
{
	size_t bucket_bytes;

	if (!b->max_sets)
		b->max_sets = BCH_BTREE_DEFAULT_SETS;
	if (!b->open_set_keys)
		b->open_set_keys = BCH_BTREE_OPEN_SET_KEYS;
	if (!b->key_bytes)
		b->key_bytes = BCH_KEY_BYTES_V3;
	if (!b->ops || !b->block_sectors || !b->bucket_sectors ||
	    (b->key_bytes != BCH_KEY_BYTES_V2 && b->key_bytes != BCH_KEY_BYTES_V3) ||
	    b->bucket_sectors % b->block_sectors ||
	    b->bucket_sectors > BCH_MAX_BUCKET_SECTORS || b->max_sets > BCH_BTREE_MAX_SETS)
		return -EINVAL;
	bucket_bytes = (size_t)b->bucket_sectors << BCH_SECTOR_SHIFT;

	b->root = NULL;
	b->level = 0;
	b->node_keys = bch_node_keys(bucket_bytes, b->key_bytes);
	b->split_keys = b->node_keys * 3 / 4;
	b->nodes = 0;
	b->compactions = 0;
	b->merged_aside = 0;
	b->splits = 0;
	b->cows = 0;
	b->set_writes = 0;
	b->reads = 0;
	b->reads_unlocked = 0;
	b->evictions = 0;
	b->leaves = 0;
	b->nclean = 0;
	INIT_LIST_HEAD(&b->clean);
	spin_lock_init(&b->lru_lock);
	b->hash_bits = BCH_HASH_MIN_BITS;
	b->drops_floor = ++b->drops;	/* no want survives */
	memset(&b->gc_prep, 0, sizeof(b->gc_prep));
	memset(&b->aside, 0, sizeof(b->aside));
	b->scratch = bch_kvzalloc(b->node_keys * sizeof(*b->scratch));
	b->aside_keys = bch_kvzalloc(b->node_keys * sizeof(*b->aside_keys));
	b->iobuf = bch_kvzalloc(bucket_bytes);
	b->hash = bch_kvzalloc(sizeof(*b->hash) << b->hash_bits);
	if (!b->scratch || !b->aside_keys || !b->iobuf || !b->hash) {
		bch_btree_free(b);
		return -ENOMEM;
	}
	return 0;
}

int bch_btree_init(struct bch_btree *b)
{
	struct bch_node *n;
	int ret;

	ret = btree_setup(b);
	if (ret)
		return ret;
	ret = node_create(b, 0, &n);
	if (ret) {
		bch_btree_free(b);
		return ret;
	}
	n->key.inode = U32_MAX;
	n->key.end = U64_MAX;
	hash_add(b, n);
	b->root = n;
	return 0;
}

int bch_btree_load(struct bch_btree *b, const struct bch_bkey *root, unsigned int level)
{
	struct bch_bkey lo = { 0 };
	struct bch_node *n;
	int ret;

	if (level >= BCH_BTREE_MAX_DEPTH || root->inode != U32_MAX || root->end != U64_MAX)
		return -EINVAL;
	ret = btree_setup(b);
	if (ret)
		return ret;
	ret = node_load(b, root, level, &lo, &n);
	if (ret) {
		bch_btree_free(b);
		return ret;
	}
	b->root = n;
	b->level = level;
	lru_del(b, n);			/* the root stays */
	return 0;
}

void bch_btree_free(struct bch_btree *b)
{
	struct bch_node *n;
	u32 i;

	if (b->hash) {
		for (i = 0; i < (1U << b->hash_bits); i++) {
			while ((n = b->hash[i])) {
				b->hash[i] = n->hnext;
				node_free(n);
			}
		}
	}
	bch_kvfree(b->hash);
	bch_kvfree(b->iobuf);
	bch_kvfree(b->scratch);
	bch_kvfree(b->aside_keys);
	b->hash = NULL;
	b->iobuf = NULL;
	b->scratch = NULL;
	b->aside_keys = NULL;
	b->aside.stamp = 0;
	b->root = NULL;
	b->level = 0;
	b->nodes = 0;
	b->leaves = 0;
	b->nclean = 0;
	b->drops_floor = ++b->drops;
	INIT_LIST_HEAD(&b->clean);
}
