/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DM_BCACHE_TRACK_H
#define _DM_BCACHE_TRACK_H

#include <linux/spinlock.h>
#include <linux/types.h>

#define BCH_TRACK_REGION_SHIFT	10	/* 512 KiB regions of the origin */
#define BCH_TRACK_BITS		10
#define BCH_TRACK_SLOTS		BIT(BCH_TRACK_BITS)
#define BCH_TRACK_MAX_REGIONS	16	/* larger ranges are never cached */

/*
 * Writes seen per region of an origin: started and completed counts in a
 * small hash (collisions only make the check more conservative).
 */
struct bch_track {
	spinlock_t	lock;		/* taken from bio completion too */
	u32		started[BCH_TRACK_SLOTS];
	u32		done[BCH_TRACK_SLOTS];
};

void bch_track_init(struct bch_track *t);
bool bch_track_read(struct bch_track *t, u64 sector, u32 sectors, u64 *snap);
bool bch_track_write_start(struct bch_track *t, u64 sector, u32 sectors,
			   u64 *snap);
void bch_track_write_end(struct bch_track *t, u64 sector, u32 sectors);
bool bch_track_unchanged(struct bch_track *t, u64 sector, u32 sectors,
			 u64 snap);

#endif /* _DM_BCACHE_TRACK_H */
