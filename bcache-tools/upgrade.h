/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A version 2 cache (one device) made a version 3 one, offline, with its
 * cached data, dirty data included (Documentation/format-v3.rst,
 * "Upgrade"; bcache-check --upgrade).
 *
 * bch_upgrade_build() reads the index as the next attach builds it (the
 * checkpoint, the journal replayed over it, the keys the kernel would
 * drop left out) and builds it anew in memory with the kernel's btree
 * code, in version 3 keys, its nodes in buckets the version 2 cache holds
 * nothing in: no data of a live key, no node of its checkpoint or of the
 * index, no journal, no metadata (nor, if the bucket states are valid,
 * one they mark). bch_upgrade_write() writes those nodes, reads them back
 * and checks them against what was copied, and writes the bucket array
 * copy that is not current: nothing the version 2 superblock names
 * changes, so the cache is still the version 2 one, whole. Then
 * bch_upgrade_commit() writes the version 3 superblock naming them.
 */
#ifndef _BCACHE_TOOLS_UPGRADE_H
#define _BCACHE_TOOLS_UPGRADE_H

#include "index.h"

struct bch_upgrade {
	struct bch_cache	*c;
	/* the keys copied, as the kernel would keep them; the journal replayed */
	u64			keys, sectors, dirty_sectors;
	struct bch_replay	rp;
	/*
	 * The new tree (depth 0: no key, no index); the free buckets, and
	 * how many of them building it takes (its nodes, and those a split
	 * holds besides for a moment).
	 */
	u64			nodes, free, need;
	unsigned int		depth;
	/* nodes of the version 2 index: their buckets are free once upgraded */
	u64			old_nodes;
	/* where the upgraded cache's journal starts, empty */
	u64			jseq, jpos;
	/* the bucket array copy written: the version 2 one not current */
	unsigned int		prio_copy;

	/* private */
	struct bch_btree	nb;		/* the new tree */
	u64			*pool, npool;	/* free buckets, lowest last */
	u64			over;		/* nodes made beyond the free buckets */
	u64			next_virt, inuse;
	u8			*used;		/* per bucket: holds something */
	u8			*node;		/* per bucket: a node of the new tree */
	u8			*old;		/* per bucket: a node of the old index */
	u64			sum;		/* of the keys copied (key_sum()) */
	struct bch_bkey		root;
	unsigned int		level;
	bool			writing;
	int			err;
	struct bch_bucket_disk	*prio;		/* the new bucket array copy */
	u32			prio_csum;
	u64			written;	/* nodes written */
};

/*
 * Read @c (a version 2 cache of one device, its bucket array and UUID
 * table read, trusted) and build the new tree in memory: 0, or -1 with
 * bch_strerror() set. Then u->nodes, u->free and the rest say what it
 * takes; bch_upgrade_fits() whether the free buckets are enough.
 */
int bch_upgrade_build(struct bch_upgrade *u, struct bch_cache *c);

static inline bool bch_upgrade_fits(const struct bch_upgrade *u)
{
	return !u->over;
}

/*
 * Write the new tree into its free buckets, read it back and check it,
 * and write the bucket array copy that is not current, all synced. The
 * version 2 cache is left whole: its superblock names none of it.
 */
int bch_upgrade_write(struct bch_upgrade *u);
/* Then the version 3 superblock naming it (flushed before and after). */
int bch_upgrade_commit(struct bch_upgrade *u);
/* Bucket @nr is a node of the new tree. */
bool bch_upgrade_node(const struct bch_upgrade *u, u64 nr);
void bch_upgrade_free(struct bch_upgrade *u);

#endif /* _BCACHE_TOOLS_UPGRADE_H */
