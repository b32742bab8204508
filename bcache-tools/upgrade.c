// SPDX-License-Identifier: GPL-2.0
/*
 * A version 2 cache made a version 3 one (upgrade.h): the index read as
 * the next attach builds it, written anew in version 3 keys by the
 * kernel's own btree code into buckets the version 2 cache does not use,
 * then the version 3 superblock naming it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "upgrade.h"

/* The version 2 index, read: what the kernel would drop is dead. */

static bool old_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	return !bch_key_kept(bch_key_state(bch_cache_of(b), k));
}

static int old_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		  u32 sectors)
{
	if (write)
		return -EROFS;	/* the version 2 index is never written */
	return bch_index_io(b, false, bucket, offset, buf, sectors);
}

static const struct bch_btree_ops old_ops = {
	.alloc		= bch_index_mem_alloc,
	.free		= bch_index_mem_free,
	.io		= old_io,
	.key_dead	= old_key_dead,
	.key_invalid	= bch_index_key_invalid,
};

/* The new tree: its nodes go to the free buckets, lowest first. */

static int new_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	struct bch_upgrade *u = b->priv;
	u64 nr;

	/* a flush of nodes never written writes each in place */
	if (u->writing)
		return -ENOSPC;
	if (u->npool) {
		nr = u->pool[--u->npool];
		u->node[nr] = 1;
		*gen = u->c->prio[nr].gen;
	} else {
		/* counted only: bch_upgrade_fits() is then false */
		nr = u->c->nbuckets + u->next_virt++;
		if (nr > U32_MAX)
			return -ENOSPC;
		u->over++;
		*gen = 0;
	}
	if (++u->inuse > u->need)
		u->need = u->inuse;
	*bucket = bch_node_bucket_id(0, nr);
	return 0;
}

static void new_free(struct bch_btree *b, u64 bucket)
{
	struct bch_upgrade *u = b->priv;
	u64 nr = bch_node_bucket_nr(bucket);

	u->inuse--;
	if (nr >= u->c->nbuckets)
		return;
	u->node[nr] = 0;
	/* never written yet: free for another node (none is made while writing) */
	if (!u->writing)
		u->pool[u->npool++] = nr;
}

/* IO to the buckets chosen for the new tree, and to no other. */
static int new_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		  u32 sectors)
{
	struct bch_upgrade *u = b->priv;
	struct bch_cache *c = u->c;
	u64 nr = bch_node_bucket_nr(bucket), off;
	size_t len = (size_t)sectors << BCH_SECTOR_SHIFT;

	if (bch_node_bucket_dev(bucket) || nr < c->first_bucket || nr >= c->nbuckets ||
	    !u->node[nr] || offset + (u64)sectors > c->bucket_size)
		return -EINVAL;
	off = (nr * c->bucket_size + offset) << BCH_SECTOR_SHIFT;
	if (write) {
		u->written++;
		return bch_pwrite_all(&c->dev, buf, len, off) ? -EIO : 0;
	}
	return bch_pread_all(&c->dev, buf, len, off) ? -EIO : 0;
}

static const struct bch_btree_ops new_ops = {
	.alloc	= new_alloc,
	.free	= new_free,
	.io	= new_io,
};

/* Reading the new tree back: as the kernel will, by the version 3 rules. */

static int ro_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	(void)b;
	(void)bucket;
	(void)gen;
	return -EROFS;
}

static void ro_free(struct bch_btree *b, u64 bucket)
{
	(void)b;
	(void)bucket;
}

static const char *v3_key_invalid(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_upgrade *u = b->priv;

	return bch_leaf_key_invalid(k, 3, &u->c->geom[0], 1);
}

static const struct bch_btree_ops verify_ops = {
	.alloc		= ro_alloc,
	.free		= ro_free,
	.io		= new_io,
	.key_invalid	= v3_key_invalid,
};

/* What a set of keys holds, to tell the copy from the original. */
struct tally {
	u64	keys, sectors, dirty, nodes, sum;
	bool	bad_gen;
};

static u64 mix(u64 h, u64 v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/* A key's every field that the copy keeps, hashed: summed, order does not count. */
static u64 key_sum(const struct bch_bkey *k)
{
	u64 h = mix(k->inode, (u64)k->size << 16 | (u64)k->flags << 8 | k->nptrs);

	h = mix(h, k->end);
	h = mix(h, k->ptr[0]);
	return mix(h, k->ptr[1]);
}

static void tally_key(struct tally *t, const struct bch_bkey *k)
{
	t->keys++;
	t->sectors += k->size;
	if (k->flags & BCH_KEY_DIRTY)
		t->dirty += k->size;
	t->sum += key_sum(k);
}

/* The layout's buckets, the checkpoint's nodes, and what the states mark. */
static void mark_layout(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	bool states = bch_bucket_state_valid(&c->sb);
	u64 i;
	u8 f;

	for (i = 0; i < c->nbuckets; i++) {
		f = c->prio[i].flags;
		if (i < c->first_bucket || bch_journal_bucket(&c->sb, i) ||
		    (f & (BCH_BUCKET_META | BCH_BUCKET_JOURNAL)))
			u->used[i] = 1;
		if (c->node_level[i]) {
			u->used[i] = 1;
			u->old[i] = 1;
		}
		if (states && (f & (BCH_BUCKET_BTREE | BCH_BUCKET_DATA | BCH_BUCKET_DIRTY)))
			u->used[i] = 1;
	}
}

/* First walk: the buckets the index uses, and what it holds. */
static void mark_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct bch_upgrade *u = arg;
	struct bch_cache *c = u->c;
	u64 id = bch_node_bucket_id(bch_ptr_dev(k->ptr[0]), bch_key_sector(k) / c->bucket_size);
	unsigned int i;

	(void)b;
	if (is_node) {
		/* nodes the replay made are in memory only */
		if (!bch_index_mem_bucket(c, id)) {
			u->used[bch_node_bucket_nr(id)] = 1;
			u->old[bch_node_bucket_nr(id)] = 1;
		}
		return;
	}
	for (i = 0; i < k->nptrs; i++)
		if (!bch_ptr_stale(c, k->ptr[i]))
			u->used[bch_ptr_sector(k->ptr[i]) / c->bucket_size] = 1;
	u->keys++;
	u->sectors += k->size;
	if (k->flags & BCH_KEY_DIRTY)
		u->dirty_sectors += k->size;
	u->sum += key_sum(k);
}

/* Second walk: every key into the new tree. */
static void insert_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct bch_upgrade *u = arg;
	int r;

	(void)b;
	if (is_node || u->err)
		return;
	r = bch_btree_insert(&u->nb, k);
	if (r)
		u->err = r;
}

/*
 * Where the journal of the upgraded cache starts: where the next entry
 * would go, as after a checkpoint, with a seq above anything in the ring
 * that looks like an entry of this cache (as a repair empties it). Its
 * version 2 entries can never be replayed anyway: a version 3 cache takes
 * only entries with the magic "jst3".
 */
static int journal_start(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	struct bch_journal j;
	struct bch_jentry e;
	uint64_t max;
	int r;

	if (bch_journal_open(&j, &c->dev, &c->sb))
		return -1;
	while ((r = bch_journal_next(&j, &e)) > 0)
		;
	u->jseq = j.seq;
	u->jpos = j.pos;
	bch_journal_close(&j);
	if (r < 0 || bch_journal_max_seq(&c->dev, &c->sb, &max))
		return -1;
	if (max >= u->jseq)
		u->jseq = max + 1;
	return 0;
}

/* The version 2 index, as the next attach builds it. */
static int load_old(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	int r;

	bch_btree_free(&c->b);
	free(c->node_level);
	c->node_level = NULL;
	c->bad_set = NULL;
	r = bch_index_load(c, &old_ops);
	if (r)
		return bch_err("the index cannot be loaded: %s", c->load_msg);
	r = bch_index_replay(c, &u->rp);
	if (r)
		return bch_err("the journal cannot be replayed: %s", c->load_msg);
	if (u->rp.bad)
		return bch_err("the journal holds a key the kernel refuses: it would drop the index");
	return 0;
}

static int alloc_maps(struct bch_upgrade *u)
{
	u64 n = u->c->nbuckets;

	u->used = calloc(n, 1);
	u->node = calloc(n, 1);
	u->old = calloc(n, 1);
	u->pool = calloc(n, sizeof(*u->pool));
	if (!u->used || !u->node || !u->old || !u->pool)
		return bch_err("out of memory");
	return 0;
}

/* Free buckets, the lowest last: handed out first. */
static void fill_pool(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	u64 i;

	for (i = c->nbuckets; i-- > c->first_bucket;)
		if (!u->used[i])
			u->pool[u->npool++] = i;
	u->free = u->npool;
	for (i = 0; i < c->nbuckets; i++)
		u->old_nodes += u->old[i];
}

static int build_tree(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	struct bch_btree *nb = &u->nb;
	int r;

	memset(nb, 0, sizeof(*nb));
	nb->ops = &new_ops;
	nb->priv = u;
	nb->bucket_sectors = c->bucket_size;
	nb->block_sectors = c->block_size;
	nb->key_bytes = BCH_KEY_BYTES_V3;
	nb->max_sets = BCH_BTREE_DEFAULT_SETS;
	nb->nr_members = 1;
	nb->max_leaves = U64_MAX;	/* all of it in memory, written at once */
	r = bch_btree_init(nb);
	if (!r)
		r = bch_btree_gc(&c->b, insert_fn, u);
	if (!r)
		r = u->err;
	if (r)
		return bch_err("building the version 3 index failed: %s", strerror(-r));
	u->nodes = bch_btree_nodes(nb);
	u->depth = bch_btree_depth(nb);
	return 0;
}

int bch_upgrade_build(struct bch_upgrade *u, struct bch_cache *c)
{
	int r;

	memset(u, 0, sizeof(*u));
	u->c = c;
	if (le32toh(c->sb.version) != 2 || c->nr_members != 1)
		return bch_err("%s is not a version 2 cache", c->dev.path);
	u->prio_copy = !le32toh(c->sb.prio_current);
	if (journal_start(u) || load_old(u) || alloc_maps(u))
		return -1;
	mark_layout(u);
	r = bch_btree_gc(&c->b, mark_fn, u);
	if (r)
		return bch_err("the index cannot be walked: %s", strerror(-r));
	fill_pool(u);
	/* No key: no index (a root of size 0), as a fresh format has. */
	if (!u->keys)
		return 0;
	return build_tree(u);
}

bool bch_upgrade_node(const struct bch_upgrade *u, u64 nr)
{
	return nr < u->c->nbuckets && u->node[nr];
}

/* Verifying the new tree as read back: every node, each key of the copy. */
static void verify_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct bch_upgrade *u = b->priv;
	struct tally *t = arg;
	u64 nr = bch_key_sector(k) / u->c->bucket_size;

	if (!is_node) {
		tally_key(t, k);
		return;
	}
	t->nodes++;
	if (!bch_upgrade_node(u, nr) || u->c->prio[nr].gen != bch_key_gen(k))
		t->bad_gen = true;
}

static int verify_tree(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	struct bch_btree vb = {
		.ops		= &verify_ops,
		.priv		= u,
		.bucket_sectors	= c->bucket_size,
		.block_sectors	= c->block_size,
		.key_bytes	= BCH_KEY_BYTES_V3,
		.max_sets	= BCH_BTREE_DEFAULT_SETS,
		.nr_members	= 1,
		.max_leaves	= U64_MAX,
	};
	struct tally t = { 0 };
	int r;

	r = bch_btree_load(&vb, &u->root, u->level);
	if (!r)
		r = bch_btree_read_all(&vb);
	if (!r)
		r = bch_btree_gc(&vb, verify_fn, &t);
	bch_btree_free(&vb);
	if (r)
		return bch_err("the version 3 index written does not read back: %s", strerror(-r));
	if (t.keys != u->keys || t.sectors != u->sectors || t.dirty != u->dirty_sectors ||
	    t.sum != u->sum || t.nodes != u->nodes || t.bad_gen)
		return bch_err("the version 3 index written is not the version 2 one (%llu keys of %llu, %llu nodes of %llu)",
			       (unsigned long long)t.keys, (unsigned long long)u->keys,
			       (unsigned long long)t.nodes, (unsigned long long)u->nodes);
	return 0;
}

/*
 * The bucket array of the upgraded cache: gens and priorities as they
 * are; the new tree's buckets nodes, those of the old one free. Its
 * states are not valid (state_seq 0: the kernel counts the index at the
 * next open), so the other state flags are cleared.
 */
static int build_prio(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	size_t len = bch_prio_bytes(c);
	struct bch_bucket_disk *p = malloc(len);
	u64 i;

	if (!p)
		return bch_err("out of memory");
	memcpy(p, c->prio, len);
	for (i = c->first_bucket; i < c->nbuckets; i++) {
		if (p[i].flags & (BCH_BUCKET_META | BCH_BUCKET_JOURNAL))
			continue;
		p[i].flags = 0;
		if (u->node[i]) {
			p[i].flags = BCH_BUCKET_BTREE;
			p[i].prio = htole16(U16_MAX);	/* as the kernel's node buckets */
		} else if (u->old[i]) {
			p[i].prio = 0;
		}
	}
	u->prio = p;
	u->prio_csum = bch_csum(p, len);
	return 0;
}

int bch_upgrade_write(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	int r;

	if (!bch_upgrade_fits(u))
		return bch_err("not enough free buckets for the version 3 index");
	if (u->keys) {
		u->writing = true;
		r = bch_btree_flush(&u->nb);
		if (r)
			return bch_err("writing the version 3 index failed: %s", strerror(-r));
		bch_btree_root(&u->nb, &u->root, &u->level);
		if (bch_dev_sync(&c->dev) || verify_tree(u))
			return -1;
	}
	if (build_prio(u))
		return -1;
	/* never over the current copy: the version 2 superblock names it */
	if (bch_pwrite_all(&c->dev, u->prio, bch_prio_bytes(c),
			   le64toh(c->sb.prio_offset[u->prio_copy]) << BCH_SECTOR_SHIFT))
		return -1;
	return bch_dev_sync(&c->dev);
}

/* Member 0 of a set of one: this device. */
static void set_members(struct bch_sb_disk *sb)
{
	struct bch_member_disk *m = &sb->members[0];

	sb->dev_idx = 0;
	sb->members_pad = 0;
	memset(sb->members, 0, sizeof(sb->members));
	memcpy(m->uuid, sb->uuid, sizeof(m->uuid));
	m->nbuckets = sb->nbuckets;
	m->bucket_size = sb->bucket_size;
	m->state = htole32(BCH_MEMBER_ACTIVE);
}

int bch_upgrade_commit(struct bch_upgrade *u)
{
	struct bch_cache *c = u->c;
	struct bch_sb_disk sb = c->sb, tmp;

	if (!u->prio)
		return bch_err("the version 3 index is not written");
	sb.version = htole32(3);
	bch_sb_clear_root(&sb);
	if (u->keys)
		bch_sb_set_root(&sb, &u->root);
	sb.btree_level = htole32(u->keys ? u->level : 0);
	set_members(&sb);
	/* the journal empty: nothing in the ring can be replayed */
	sb.journal_seq = htole64(u->jseq);
	sb.journal_pos = htole64(u->jpos);
	/* the kernel counts the index at the next open */
	sb.state_seq = 0;
	sb.prio_current = htole32(u->prio_copy);
	sb.prio_csum_other = c->sb.prio_csum;
	sb.prio_csum = htole32(u->prio_csum);

	/* as bch_sb_write() will write it: nothing the tools would refuse */
	tmp = sb;
	tmp.seq = htole64(le64toh(sb.seq) + 1);
	tmp.csum = htole32(bch_sb_csum(&tmp));
	if (bch_sb_validate(&tmp, c->dev.size >> BCH_SECTOR_SHIFT))
		return -1;
	if (bch_sb_write(&c->dev, &sb))
		return -1;
	c->sb = sb;
	return 0;
}

void bch_upgrade_free(struct bch_upgrade *u)
{
	bch_btree_free(&u->nb);
	free(u->pool);
	free(u->used);
	free(u->node);
	free(u->old);
	free(u->prio);
	u->pool = NULL;
	u->used = NULL;
	u->node = NULL;
	u->old = NULL;
	u->prio = NULL;
}
