/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: dirty data on two members (copies.c).
 */
#ifndef _DM_BCACHE_COPIES_H
#define _DM_BCACHE_COPIES_H

#include <linux/types.h>

struct bch_cache_set;
struct bch_bkey;

/* What bch_copy_choose() says of the copy a read uses. */
#define BCH_COPY_COUNTED	BIT(0)	/* bch_copy_read_done() when done */
#define BCH_COPY_OTHER		BIT(1)	/* if it fails, another may serve */

/* Whether dirty writes to @set are written to two members. */
bool bch_copies_mirrored(const struct bch_cache_set *set);

u8 bch_copy_choose(struct bch_cache_set *set, struct bch_bkey *k,
		   unsigned long avoid);
void bch_copy_read_done(struct bch_cache_set *set, u64 loc);
int bch_index_drop_copy(struct bch_cache_set *set, u32 inode, u64 sector,
			u32 sectors, u64 loc, u8 gen);

#endif /* _DM_BCACHE_COPIES_H */
