// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: which writes raced with a cache fill.
 *
 * A read miss copies what it read from the origin into the cache and
 * inserts a key for it after the copy is written. If a write to the same
 * range started after the read was issued, or was still in flight when
 * it was, the data read may be older than the origin's: inserting it
 * would return stale data. The same holds for the key of a write that is
 * being cached while another write to its range is in flight.
 *
 * So every write counts itself per region when it starts and when it
 * ends. A fill (or a cached write) takes a snapshot of the sum of the
 * start counts when it starts, and only if nothing was in flight; it
 * inserts its key only if the sum is still the same. Counts only grow,
 * so an equal sum means no write started in between.
 */
#include <linux/hash.h>

#include "track.h"

static u32 bch_track_slot(u64 region)
{
	return hash_64(region, BCH_TRACK_BITS);
}

static bool bch_track_range(u64 sector, u32 sectors, u64 *first, u64 *last)
{
	*first = sector >> BCH_TRACK_REGION_SHIFT;
	*last = (sector + sectors - 1) >> BCH_TRACK_REGION_SHIFT;
	return *last - *first < BCH_TRACK_MAX_REGIONS;
}

void bch_track_init(struct bch_track *t)
{
	spin_lock_init(&t->lock);
}

/* Sum of start counts over the range; false if a write is in flight. */
static bool bch_track_sum(struct bch_track *t, u64 first, u64 last, u64 *snap)
{
	bool idle = true;
	u64 r;

	*snap = 0;
	for (r = first; r <= last; r++) {
		u32 i = bch_track_slot(r);

		*snap += t->started[i];
		if (t->started[i] != t->done[i])
			idle = false;
	}
	return idle;
}

/* True if a fill of this range may be inserted later (see above). */
bool bch_track_read(struct bch_track *t, u64 sector, u32 sectors, u64 *snap)
{
	unsigned long flags;
	u64 first, last;
	bool idle;

	if (!bch_track_range(sector, sectors, &first, &last))
		return false;
	spin_lock_irqsave(&t->lock, flags);
	idle = bch_track_sum(t, first, last, snap);
	spin_unlock_irqrestore(&t->lock, flags);
	return idle;
}

/*
 * Count a write in. Returns true if the write had its range to itself,
 * so that its own data may be cached; *snap includes its own count.
 * Every write must be counted out by bch_track_write_end().
 */
bool bch_track_write_start(struct bch_track *t, u64 sector, u32 sectors,
			   u64 *snap)
{
	unsigned long flags;
	u64 first, last, r;
	bool idle = false;
	u32 i;

	spin_lock_irqsave(&t->lock, flags);
	if (bch_track_range(sector, sectors, &first, &last)) {
		idle = bch_track_sum(t, first, last, snap);
		for (r = first; r <= last; r++)
			t->started[bch_track_slot(r)]++;
		*snap += last - first + 1;
	} else {
		/* Too large to list: it counts against every region. */
		for (i = 0; i < BCH_TRACK_SLOTS; i++)
			t->started[i]++;
	}
	spin_unlock_irqrestore(&t->lock, flags);
	return idle;
}

void bch_track_write_end(struct bch_track *t, u64 sector, u32 sectors)
{
	unsigned long flags;
	u64 first, last, r;
	u32 i;

	spin_lock_irqsave(&t->lock, flags);
	if (bch_track_range(sector, sectors, &first, &last)) {
		for (r = first; r <= last; r++)
			t->done[bch_track_slot(r)]++;
	} else {
		for (i = 0; i < BCH_TRACK_SLOTS; i++)
			t->done[i]++;
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

bool bch_track_unchanged(struct bch_track *t, u64 sector, u32 sectors,
			 u64 snap)
{
	unsigned long flags;
	u64 first, last, now;

	if (!bch_track_range(sector, sectors, &first, &last))
		return false;
	spin_lock_irqsave(&t->lock, flags);
	bch_track_sum(t, first, last, &now);
	spin_unlock_irqrestore(&t->lock, flags);
	return now == snap;
}
