// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the cache set's index, glued to its buckets and metadata IO.
 *
 * Until the journal exists, the on-disk index is a checkpoint: written
 * whole at a clean close, trusted only if the superblock says the close
 * was clean. After a crash the index starts empty and every origin's
 * data is invalidated (uuids.c), so nothing stale can be read back.
 */
#include "bset.h"
#include "dm-bcache.h"

static int bch_op_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	return bch_alloc_btree(b->priv, bucket, gen);
}

static void bch_op_free(struct bch_btree *b, u64 bucket)
{
	bch_free_btree(b->priv, bucket);
}

static int bch_op_io(struct bch_btree *b, bool write, u64 bucket, u32 offset,
		     void *buf, u32 sectors)
{
	struct bch_cache_set *set = b->priv;

	if (bucket < set->first_bucket || bucket >= set->nbuckets ||
	    offset + sectors > set->bucket_size)
		return -EINVAL;
	return bch_meta_io(set, write ? REQ_OP_WRITE : REQ_OP_READ,
			   bucket * set->bucket_size + offset, buf,
			   (size_t)sectors << SECTOR_SHIFT);
}

static const struct bch_btree_ops bch_btree_ops = {
	.alloc		= bch_op_alloc,
	.free		= bch_op_free,
	.io		= bch_op_io,
	.key_dead	= bch_key_dead,
};

static void bch_index_setup(struct bch_cache_set *set)
{
	struct bch_btree *b = &set->btree;

	memset(b, 0, sizeof(*b));
	b->ops = &bch_btree_ops;
	b->priv = set;
	b->bucket_sectors = set->bucket_size;
	b->block_sectors = set->block_size;
	b->max_sets = 4;
}

/*
 * Load the index at open: the checkpoint if the superblock says @clean,
 * else an empty one. *@lost is set if a checkpoint existed but could not
 * be read: the caller must then invalidate every origin.
 */
int bch_index_open(struct bch_cache_set *set, bool clean, bool *lost)
{
	struct bch_btree *b = &set->btree;
	struct bch_bkey root;
	bool loaded = false;
	int r;

	init_rwsem(&set->btree_lock);
	bch_index_setup(set);
	*lost = false;

	bch_bkey_unpack(&root, &set->sb->btree_root);
	if (clean && root.size) {
		r = bch_btree_load(b, &root, le32_to_cpu(set->sb->btree_level));
		if (!r)
			r = bch_gc_initial(set);
		if (r) {
			DMWARN("%s: cannot load the index (%d): cached data invalidated",
			       set->name, r);
			bch_btree_free(b);
			bch_index_setup(set);
			*lost = true;
		} else {
			loaded = true;
		}
	}
	bch_alloc_load(set);
	if (!loaded) {
		r = bch_btree_init(b);
		if (r)
			return r;
	}
	/* The checkpoint is consumed: a crash from here must not reuse it. */
	memset(&set->sb->btree_root, 0, sizeof(set->sb->btree_root));
	set->sb->btree_level = 0;
	return 0;
}

/* Write the index out; on success the superblock names its root. */
int bch_index_close(struct bch_cache_set *set)
{
	struct bch_bkey root;
	unsigned int level;
	int r;

	down_write(&set->btree_lock);
	r = bch_btree_flush(&set->btree);
	if (!r) {
		bch_btree_root(&set->btree, &root, &level);
		bch_bkey_pack(&set->sb->btree_root, &root);
		set->sb->btree_level = cpu_to_le32(level);
	}
	up_write(&set->btree_lock);
	if (r)
		DMERR("%s: cannot write the index: %d", set->name, r);
	return r;
}

void bch_index_free(struct bch_cache_set *set)
{
	bch_btree_free(&set->btree);
}
