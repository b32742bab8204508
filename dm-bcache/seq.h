/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DM_BCACHE_SEQ_H
#define _DM_BCACHE_SEQ_H

#include <linux/spinlock.h>
#include <linux/types.h>

#define BCH_SEQ_STREAMS		16

struct bch_seq_stream {
	u64		end;		/* next sector the stream would hit */
	u64		sectors;	/* contiguous sectors seen so far */
	unsigned long	last;		/* jiffies of the last IO */
};

/* Recent IO streams of one origin, to spot sequential IO. */
struct bch_seq {
	spinlock_t		lock;		/* protects streams */
	u64			cutoff;		/* sectors; 0 = never bypass */
	struct bch_seq_stream	streams[BCH_SEQ_STREAMS];
};

void bch_seq_init(struct bch_seq *q, u64 cutoff);
bool bch_seq_bypass(struct bch_seq *q, u64 sector, u32 sectors);

#endif /* _DM_BCACHE_SEQ_H */
