// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: sequential IO detection.
 *
 * Large copies and backups would wash the cache out while gaining
 * nothing from it: a disk streams sequential IO fast. Each origin keeps
 * a few recent streams; an IO that continues a stream extends it, and
 * once a stream has run for sequential_cutoff it bypasses the cache, as
 * does any single IO of that size. A new stream replaces the least
 * recently used one.
 */
#include <linux/jiffies.h>
#include <linux/string.h>

#include "seq.h"

void bch_seq_init(struct bch_seq *q, u64 cutoff)
{
	spin_lock_init(&q->lock);
	q->cutoff = cutoff;
	memset(q->streams, 0, sizeof(q->streams));
}

bool bch_seq_bypass(struct bch_seq *q, u64 sector, u32 sectors)
{
	u64 cutoff = READ_ONCE(q->cutoff);
	struct bch_seq_stream *s, *lru = &q->streams[0];
	bool bypass;

	if (!cutoff)
		return false;
	if (sectors >= cutoff)
		return true;

	spin_lock(&q->lock);
	for (s = q->streams; s < q->streams + BCH_SEQ_STREAMS; s++) {
		if (s->end == sector && s->sectors)
			goto found;
		if (time_before(s->last, lru->last))
			lru = s;
	}
	s = lru;
	s->sectors = 0;
found:
	s->sectors += sectors;
	s->end = sector + sectors;
	s->last = jiffies;
	bypass = s->sectors >= cutoff;
	spin_unlock(&q->lock);
	return bypass;
}
