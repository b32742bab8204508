/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: in-core structures shared by the subsystems.
 *
 * A cache set is one formatted cache device, shared by every target whose
 * table names it (found by dev_t, refcounted). Each target caches one
 * origin and holds one UUID slot of the set.
 */
#ifndef _DM_BCACHE_H
#define _DM_BCACHE_H

#include <linux/blkdev.h>
#include <linux/device-mapper.h>
#include <linux/dm-io.h>
#include <linux/list.h>
#include <linux/mempool.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "bcache_ondisk.h"
#include "btree.h"
#include "csum.h"
#include "copies.h"
#include "journal.h"
#include "seq.h"
#include "track.h"

#define DM_MSG_PREFIX "bcache"

/*
 * In-core bucket states; only prio, gen and flags are on disk. A bucket
 * whose gen was bumped may be written again only once the new gen is on
 * disk: else a crash would bring back keys that match its old gen.
 */
enum bch_bucket_state {
	BCH_B_FREE,		/* on the free FIFO, its gen on disk */
	BCH_B_FREE_INC,		/* gen bumped, not yet written */
	BCH_B_PERSISTING,	/* gen being written */
	BCH_B_OPEN,		/* data is being appended */
	BCH_B_DATA,		/* full of (possibly stale) cached data */
	BCH_B_BTREE,		/* holds a btree node */
	BCH_B_FREEING,		/* held a node the checkpoint may still name */
	BCH_B_FREEING_NEXT,	/* ... or the one under way may */
	BCH_B_META,		/* superblock, bucket arrays, UUID tables */
	BCH_B_JOURNAL,		/* the journal ring */
};

/*
 * A bucket can be invalidated only while gen - last_gc stays below this,
 * so no key older than the last GC can ever match a wrapped gen.
 */
#define BCH_GC_GEN_MAX		64

/* bch_slot_inode() of a slot that holds no data: matches no key. */
#define BCH_INODE_NONE		U32_MAX

/* Index nodes read at once with the btree lock let go (index.c). */
#define BCH_READ_BUFS		4

struct bch_bucket {
	u16	prio;
	u8	gen;
	u8	last_gc;	/* gen at the last checkpointed GC */
	u8	flags;		/* BCH_BUCKET_* */
	u8	state;		/* enum bch_bucket_state */
	u8	gc_start_gen;	/* gen when the GC pass under way began */
	bool	gc_seen;	/* a node the pass under way found or made */
	atomic_t pending;	/* fills allocated here, key not yet inserted */
	u32	sectors;	/* live sectors: never fewer (a GC pass recounts) */
	u32	dirty;		/* dirty sectors: never fewer, but for written back */
	/* The GC pass under way counts into these (gc.c). */
	u32	gc_sectors, gc_dirty;
};

/*
 * One cache device of the set: its superblock, its buckets and their
 * allocator. Block and bucket size are the set's; everything else about
 * the device is its own. Pointers name a member by idx (bch_ptr_dev()).
 */
/*
 * A bucket open for data. A member has one for data and one for the
 * second copies of dirty data, which writeback drops: kept apart, their
 * buckets empty out whole and GC frees them.
 */
enum { BCH_OPEN_DATA, BCH_OPEN_COPY, BCH_OPENS };

struct bch_open {
	u64			bucket;
	u32			offset;		/* sectors used in it */
	bool			have;
};

struct bch_member {
	unsigned int		idx;
	struct block_device	*bdev;
	struct bch_sb_disk	*sb;		/* in-core copy, written as is */
	u64			nbuckets;
	u64			first_bucket;
	u32			journal_buckets;
	struct bch_bucket	*buckets;	/* nbuckets entries */
	void			*prio_buf;	/* the copy the open read */
	void			*prio_chunk;	/* a write's piece of a copy */

	/* Allocator, under the set's alloc_lock. */
	u32			*free_fifo;
	u64			free_head, nr_free;
	struct bch_open		open[BCH_OPENS];
	u64			nr_data, nr_btree;	/* buckets in use */
	u64			nr_free_inc;	/* FREE_INC + PERSISTING */

	atomic_t		reads;		/* of data with two copies, in flight */

	/*
	 * Lost (member.c): its IO errors passed the limit, or it was
	 * missing at open (then bdev is NULL). No IO goes to it, and its
	 * copies count as stale: the set runs degraded on the others.
	 */
	unsigned long		lost;		/* bit 0 */
	bool			removed;	/* and no pointer left to it */
	bool			marked;		/* lost, and so on disk */
	bool			joining;	/* make-bcache --add, at open */
	atomic_t		io_errors;
};

struct bch_prio_tunables {
	unsigned int	initial;	/* prio of newly filled buckets */
	unsigned int	hit;		/* added per 4 KiB hit */
	unsigned int	seek;		/* added per hit, whatever its size */
	u64		rescale;	/* sectors of IO between 7/8 rescales */
};

/*
 * Writes in flight per slot (track.c): every write, for the fills that
 * must not insert data older than one; and writes bound for the origin,
 * which a writeback batch must not land after.
 */
enum bch_track_kind {
	BCH_TRACK_ALL,
	BCH_TRACK_ORIGIN,
	BCH_TRACKS,
};

/* In-core state of a UUID slot that is not on disk. */
struct bch_slot {
	unsigned int		holders;	/* tables using the slot */
	struct mapped_device	*md;		/* the device they belong to */
	dev_t			origin;		/* and its origin device */
	struct block_device	*bdev;		/* the origin, while held */
	/*
	 * Writes to the origin's first 4 KiB (the fingerprint): they go
	 * only while BCH_UUID_FP_WRITING is on disk (fp_flagged), so that
	 * a crash amid them is not taken for a changed origin. Under
	 * uuid_waiters_lock (irq-safe: completions take it).
	 */
	bool			fp_stale;	/* one completed: refresh */
	bool			fp_flagged;	/* FP_WRITING is on disk */
	bool			fp_wanted;	/* a write waits for that */
	unsigned int		fp_writes;	/* let go, not completed */
	struct bch_track	*track;		/* BCH_TRACKS: enum bch_track_kind */
	u32			inode;		/* bch_slot_inode() */
	atomic64_t		dirty;		/* sectors; never fewer */
	atomic64_t		dirty_inserts;	/* dirty keys indexed, ever */
	u64			gc_dirty;	/* counted by the GC pass */
};

struct bch_cache_set {
	struct list_head	list;		/* on bch_cache_sets */
	refcount_t		ref;
	char			name[32];
	struct dm_io_client	*io;

	/* Protects the superblocks, the UUID table and the bucket arrays. */
	struct mutex		lock;
	/* Member 0's superblock: the set's fields are read from it. */
	struct bch_sb_disk	*sb;
	bool			meta_fallback;	/* an older metadata copy in use */
	/* A member's superblock missed the last write: states not trusted. */
	bool			members_behind;

	u32			block_size;	/* sectors */
	u32			bucket_size;	/* sectors */
	u32			version;	/* of the format: 2 or 3 */
	u32			key_bytes;	/* of a key on disk */
	unsigned int		nr_members;	/* members[0, nr_members) */
	unsigned int		nr_named;	/* those a table names, "-" too */
	struct bch_member	*members[BCH_MAX_MEMBERS];
	struct bch_member_geom	geom[BCH_MAX_MEMBERS];	/* for the key rules */

	struct bch_uuid_disk	*uuids;		/* BCH_UUID_SLOTS entries */
	struct bch_slot		slots[BCH_UUID_SLOTS];

	/* Allocator: protects bucket states, the FIFOs and the open buckets. */
	spinlock_t		alloc_lock;
	unsigned int		alloc_next;	/* the member data goes to next */
	struct bch_prio_tunables prio;
	atomic64_t		rescale_sectors;
	bool			need_gc;
	unsigned long		gc_allowed;	/* jiffies: reclaim's next GC */
	bool			gc_running;
	bool			gc_passed;	/* it went through the index */
	/* Members lost when the pass began, and those it found keys on. */
	unsigned long		gc_failed, gc_failed_seen;
	/* The bucket states on disk are ours (BCH_BUCKET_STATE); set->lock. */
	bool			states_ok;
	bool			gc_again;	/* what it counted died meanwhile */
	/* Nodes may take the last free buckets (btree lock held for write). */
	bool			btree_drain;
	bool			cp_window;	/* a checkpoint is writing the index */

	/*
	 * The index: lookups under read, and inserts a leaf can take as it
	 * is (bch_index_update()); the rest of the changes under write.
	 */
	struct rw_semaphore	btree_lock;
	/*
	 * Taken for read by those inserts, within btree_lock's read hold;
	 * for write, under the same, by the walks that count what inserts
	 * change or must not miss one (GC steps and bucket walks, the
	 * writeback's collection), which lookups may share.
	 */
	struct rw_semaphore	insert_gate;
	atomic64_t		inserts_shared;	/* by that way, ever */
	struct bch_btree	btree;
	int			node_cache_mb;	/* the budget max_leaves is of */
	/* Buckets to read nodes into with the lock let go; made on first use. */
	void			*read_buf[BCH_READ_BUFS];
	unsigned long		read_busy;	/* bit i: read_buf[i] taken */
	struct shrinker		*shrinker;	/* of clean index leaves */
	struct bch_journal	journal;
	struct mutex		checkpoint_lock;	/* one at a time */
	/*
	 * A checkpoint holds the journal (after an overflow): the index may
	 * not change until it ends (bch_index_lock()); lookups go on.
	 */
	bool			cp_held;
	wait_queue_head_t	cp_held_wait;
	bool			cp_flushing;	/* in a step (btree lock held) */
	atomic64_t		checkpoints;

	/* Writes held until BCH_UUID_FP_WRITING is on disk (irq-safe). */
	spinlock_t		uuid_waiters_lock;
	struct bio_list		fp_waiters;

	/* One checksummed range's buffer for the reads that confirm a mismatch. */
	mempool_t		*reread_pool;

	struct workqueue_struct	*wq;
	struct work_struct	reclaim_work;
	struct work_struct	gc_work;
	struct work_struct	rescale_work;
	struct work_struct	uuid_work;
	struct work_struct	member_work;	/* marks failed members so */
	/* Members lost or removed (bumped), and as of which write on disk. */
	atomic_t		marks_gen;
	int			marks_done;	/* set->lock */
	atomic64_t		gc_runs;
	atomic64_t		invalidations;	/* gen bumps */

	/* Cache device errors: past a point, every IO bypasses the cache. */
	atomic_t		io_errors;
	bool			failed;
	bool			failed_dropped;	/* origins invalidated for it */
};

/*
 * Members are members[0, nr_members), failed ones included (a missing
 * one has a bucket array but no device): bch_for_each_live_member()
 * for those that take IO.
 */
static inline bool bch_member_failed(const struct bch_member *m)
{
	return test_bit(0, &m->lost);
}

static inline bool bch_member_iter(struct bch_cache_set *set, unsigned int *i,
				   struct bch_member **m, bool live)
{
	while (*i < set->nr_members) {
		*m = set->members[(*i)++];
		if (!live || !bch_member_failed(*m))
			return true;
	}
	return false;
}

#define bch_for_each_member(m, set)					\
	for (unsigned int _i = 0; bch_member_iter(set, &_i, &(m), false);)

#define bch_for_each_live_member(m, set)				\
	for (unsigned int _i = 0; bch_member_iter(set, &_i, &(m), true);)

/* The member a pointer or location (bch_ptr_loc()) is on. */
static inline struct bch_member *bch_ptr_member(struct bch_cache_set *set,
						u64 ptr)
{
	return set->members[bch_ptr_dev(ptr)];
}

/* The bucket number a pointer or location points into, on its member. */
static inline u64 bch_ptr_bucket_nr(struct bch_cache_set *set, u64 ptr)
{
	return div_u64(bch_ptr_sector(ptr), set->bucket_size);
}

/* The bucket a pointer or location points into (one of a member's). */
static inline struct bch_bucket *bch_ptr_bucket(struct bch_cache_set *set,
						u64 ptr)
{
	return &bch_ptr_member(set, ptr)->buckets[bch_ptr_bucket_nr(set, ptr)];
}

/* The device a pointer or location is on. */
static inline struct block_device *bch_ptr_bdev(struct bch_cache_set *set,
						u64 ptr)
{
	return bch_ptr_member(set, ptr)->bdev;
}

/* The slot fingerprint covers the origin's first sectors. */
#define BCH_FINGERPRINT_SECTORS	8

/* Read errors tolerated (each retried from the origin) before failing. */
#define BCH_READ_ERRORS_MAX	8

/* Counters shown by the status line. */
struct bch_stats {
	atomic64_t	read_hits;
	atomic64_t	read_misses;
	atomic64_t	write_hits;
	atomic64_t	write_misses;
	atomic64_t	bypassed;
	atomic64_t	filled;		/* sectors indexed */
	atomic64_t	retries;	/* cache reads redone on the origin */
	atomic64_t	cache_errors;
	atomic64_t	rewritten;	/* sectors of pieces made one extent */
	atomic64_t	deferred;	/* bios mapped again to read the index */
	atomic64_t	csum_errors;	/* cached data that failed its checksum */
};

/* What is cached, and where writes go. */
enum bch_cache_mode {
	BCH_MODE_WRITETHROUGH,	/* reads and writes; writes to the origin */
	BCH_MODE_WRITEAROUND,	/* reads only */
	BCH_MODE_NONE,		/* nothing: every IO goes to the origin */
	BCH_MODE_WRITEBACK,	/* writes to the cache, later to the origin */
};

/* An origin range being written back: origin writes to it must wait. */
struct bch_wb_range {
	u64	start, end;
};

#define BCH_WB_EXTENTS		64		/* per batch */
#define BCH_WB_BATCH_SECTORS	BIT(13)		/* 4 MiB per batch */

#define BCH_WB_LOADS	8

struct bch_writeback {
	struct delayed_work	work;
	spinlock_t		lock;		/* ranges, waiters */
	struct bch_wb_range	ranges[BCH_WB_EXTENTS];
	unsigned int		nr_ranges;
	struct bio_list		waiters;	/* origin writes into ranges */
	struct bio_list		held;		/* origin writes to try again */
	bool			stopped;	/* the table is not live */
	struct work_struct	resubmit_work;	/* sends them on */
	void			*buf;		/* one batch of data */
	void			*bounce;	/* a checksummed range */
	u64			cursor;		/* origin sector to go on from */
	/*
	 * Batches in a row that found nothing dirty: where the first
	 * began, how far they went, and the slot's dirty_inserts then.
	 */
	bool			clean_run;
	u64			clean_from, clean_sectors, clean_inserts;
	unsigned int		percent;	/* writeback_percent tunable */
	bool			running;	/* writeback_running tunable */
	atomic_t		flushing;	/* someone waits for dirty == 0 */
	wait_queue_head_t	wait;
	atomic64_t		written;	/* sectors written back */
	int			error;		/* of the last batch */
	/* Index ranges the last walk missed: read before the next walk. */
	struct bch_wb_range	loads[BCH_WB_LOADS];
	unsigned int		nr_loads;
};

struct bch_target {
	struct dm_target	*ti;
	struct dm_dev		*cache_devs[BCH_MAX_MEMBERS];	/* the set's */
	unsigned int		nr_cache_devs;
	struct dm_dev		*origin_dev;
	struct bch_cache_set	*set;
	unsigned int		slot;
	bool			persistent;	/* origin_uuid given */
	enum bch_cache_mode	mode;		/* READ_ONCE: messages change it */
	bool			rewrite;	/* rewrite_fragmented tunable */
	bool			verify;		/* verify_csums tunable */
	struct bch_seq		seq;
	struct bio_set		bs;		/* clones: cached writes, read pieces */
	atomic_t		fills;		/* in flight */
	struct bch_stats	stats;
	struct bch_writeback	wb;
	/* Bios waiting for index nodes to be read (request.c). */
	spinlock_t		defer_lock;
	struct bio_list		deferred;
	struct delayed_work	defer_work;
};

static inline struct bch_track *bch_track_of(struct bch_target *bt)
{
	return &bt->set->slots[bt->slot].track[BCH_TRACK_ALL];
}

static inline struct bch_track *bch_origin_track_of(struct bch_target *bt)
{
	return &bt->set->slots[bt->slot].track[BCH_TRACK_ORIGIN];
}

/* super.c */
struct bch_cache_set *bch_set_get(struct dm_target *ti,
				  struct block_device **bdevs, unsigned int n,
				  char **error);
void bch_set_put(struct bch_cache_set *set);
bool bch_origin_busy(dev_t origin, struct mapped_device *md);
void bch_failed_exit(void);
int bch_dev_io(struct bch_cache_set *set, struct block_device *bdev,
	       blk_opf_t opf, sector_t sector, void *buf, size_t len);
int bch_member_io(struct bch_cache_set *set, struct bch_member *m,
		  blk_opf_t opf, sector_t sector, void *buf, size_t len);
int bch_loc_io(struct bch_cache_set *set, blk_opf_t opf, u64 loc, void *buf,
	       size_t len);
int bch_flush_others(struct bch_cache_set *set, struct bch_member *except);
int bch_sb_write(struct bch_cache_set *set);
int bch_meta_read(struct bch_cache_set *set, struct bch_member *m,
		  const char *what, const __le64 *offset, __le32 *cur,
		  __le32 *csum, __le32 *csum_other, void *buf, size_t len);

/* uuids.c */
int bch_uuids_read(struct bch_cache_set *set, char **error);
int bch_uuids_write(struct bch_cache_set *set);
void bch_uuids_recover(struct bch_cache_set *set, bool clean);
int bch_slot_attach(struct bch_cache_set *set, struct bch_target *bt,
		    const u8 *uuid, char **error);
void bch_slot_detach(struct bch_cache_set *set, struct bch_target *bt,
		     bool live);
int bch_slot_invalidate(struct bch_cache_set *set, unsigned int slot);
int bch_slot_invalidate_all(struct bch_cache_set *set);
bool bch_slot_fp_begin(struct bch_cache_set *set, unsigned int slot,
		       struct bio *bio);
int bch_slot_fp_begin_sync(struct bch_cache_set *set, unsigned int slot);
void bch_slot_fp_end(struct bch_cache_set *set, unsigned int slot);
u32 bch_slot_inode(struct bch_cache_set *set, unsigned int slot);
void bch_uuids_load_dirty(struct bch_cache_set *set);
void bch_uuids_work(struct work_struct *work);

/* alloc.c */
int bch_alloc_init(struct bch_cache_set *set);
u64 bch_set_buckets(struct bch_cache_set *set);
u64 bch_set_sectors(struct bch_cache_set *set);
u64 bch_set_used(struct bch_cache_set *set);
bool bch_set_free_low(struct bch_cache_set *set);
void bch_alloc_load(struct bch_cache_set *set);
int bch_alloc_data(struct bch_cache_set *set, u32 sectors, u64 *ptr, u8 *gen,
		   u32 *got);
int bch_alloc_mirrored(struct bch_cache_set *set, u32 sectors, u64 ptr[2],
		       u8 gen[2], u32 *got);
void bch_alloc_done(struct bch_cache_set *set, u64 ptr, u32 inserted);
void bch_alloc_done_dirty(struct bch_cache_set *set, u64 ptr, u32 inserted);
void bch_alloc_cleaned(struct bch_cache_set *set, const struct bch_bkey *k);
void bch_alloc_split(struct bch_cache_set *set, u64 ptr, unsigned int more);
void bch_alloc_abort(struct bch_cache_set *set, u64 ptr);
int bch_alloc_btree(struct bch_cache_set *set, u64 *bucket, u8 *gen);
void bch_free_btree(struct bch_cache_set *set, u64 bucket, bool by_checkpoint);
bool bch_ptr_reused(struct bch_cache_set *set, u64 ptr, u8 gen);
bool bch_ptr_stale(struct bch_cache_set *set, u64 ptr, u8 gen);
void bch_bucket_hit(struct bch_cache_set *set, u64 ptr, u32 sectors);
void bch_account_io(struct bch_cache_set *set, u32 sectors);
void bch_alloc_gc_start(struct bch_cache_set *set);
void bch_alloc_gc_passed(struct bch_cache_set *set);
void bch_alloc_gc_apply(struct bch_cache_set *set, bool done);
void bch_alloc_gc_take(struct bch_cache_set *set);
void bch_alloc_checkpoint_start(struct bch_cache_set *set);
void bch_alloc_checkpoint_end(struct bch_cache_set *set, bool done);
void bch_alloc_persist_fill(struct bch_cache_set *set, struct bch_member *m,
			    struct bch_bucket_disk *d, u64 first, u64 n);
void bch_alloc_persist_done(struct bch_cache_set *set, bool ok);

/* index.c */
/* A key to index, and what its caller does under the same lock. */
struct bch_index_op {
	struct bch_bkey	k;
	/* Whether to insert (0), or why not; changes to k's range wait. */
	int (*check)(struct bch_index_op *op);
	/* After, with the result (the check's or the insert's): journal, count. */
	void (*done)(struct bch_index_op *op, int r);
};

int bch_index_open(struct bch_cache_set *set, bool trusted, bool *lost);
int bch_index_insert(struct bch_cache_set *set, const struct bch_bkey *k);
int bch_index_update(struct bch_cache_set *set, struct bch_index_op *op);
void bch_index_downgrade(struct bch_cache_set *set);
void bch_index_read_gated(struct bch_cache_set *set);
void bch_index_unlock_gated(struct bch_cache_set *set);
void bch_index_drop_bad(struct bch_cache_set *set, u32 inode, u64 sector,
			u32 sectors, u64 ptr, u8 gen);
int bch_index_lookup(struct bch_cache_set *set, u32 inode, u64 start, u64 end,
		     struct bch_bkey *out);
void bch_index_trim(struct bch_cache_set *set);
void bch_index_yield(struct bch_cache_set *set);
int bch_index_buf_get(struct bch_cache_set *set);
void bch_index_buf_put(struct bch_cache_set *set, int slot);
void bch_index_read_ahead(struct bch_cache_set *set, u32 inode, u64 start,
			  u64 end, bool trim);
void bch_index_yield_gc(struct bch_cache_set *set, int slot);
void bch_index_lock(struct bch_cache_set *set);
int bch_checkpoint(struct bch_cache_set *set, bool gc);
bool bch_checkpoint_retry(int r);
int bch_checkpoint_sync(struct bch_cache_set *set, bool gc);
void bch_index_free(struct bch_cache_set *set);

/* gc.c */
void bch_gc_init(struct bch_cache_set *set);
int bch_gc_pass(struct bch_cache_set *set);
int bch_gc_initial(struct bch_cache_set *set);
void bch_gc_inserted(struct bch_cache_set *set, const struct bch_bkey *k);
void bch_gc_cleaned(struct bch_cache_set *set, const struct bch_bkey *k);
bool bch_key_dead(struct bch_btree *b, const struct bch_bkey *k);
bool bch_key_lost(struct bch_cache_set *set, const struct bch_bkey *k);
bool bch_key_on_lost(struct bch_cache_set *set, const struct bch_bkey *k);
int bch_key_stale_copy(struct bch_btree *b, const struct bch_bkey *k);

/* super.c: callable from bio completion */
void bch_cache_io_error(struct bch_cache_set *set, bool write);

static inline bool bch_cache_failed(struct bch_cache_set *set)
{
	return READ_ONCE(set->failed);
}

/* member.c */
void bch_member_io_error(struct bch_cache_set *set, u64 loc, bool write);
void bch_member_fail(struct bch_cache_set *set, struct bch_member *m);
bool bch_set_degraded(struct bch_cache_set *set);
unsigned int bch_set_live(struct bch_cache_set *set);
bool bch_loc_failed(struct bch_cache_set *set, u64 loc);
bool bch_members_mark(struct bch_cache_set *set);
int bch_members_mark_sync(struct bch_cache_set *set);
void bch_members_open(struct bch_cache_set *set);
void bch_members_removed(struct bch_cache_set *set, unsigned long mask);
void bch_member_init(struct bch_cache_set *set);
struct bch_member *bch_member_missing(struct bch_cache_set *set,
				      unsigned int idx,
				      const struct bch_member_disk *e);

/* Whether slot @i may hold dirty data (its count is exact after GC). */
static inline bool bch_slot_dirty_left(struct bch_cache_set *set,
				       unsigned int i)
{
	return atomic64_read(&set->slots[i].dirty) > 0;
}

/* target.c */
int bch_parse_mode(const char *name, enum bch_cache_mode *mode, char **error);
const char *bch_mode_name(enum bch_cache_mode mode);

/* request.c */
void bch_release_bio(struct bio *bio, blk_status_t status);
void bch_write_resume(struct bio *bio);
void bch_defer(struct bch_target *bt, struct bio *bio);
void bch_defer_init(struct bch_target *bt);
void bch_write_range(struct bio *bio, u64 *start, u64 *end);
size_t bch_io_size(void);
unsigned int bch_clone_front_pad(void);
int bch_map(struct dm_target *ti, struct bio *bio);
int bch_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error);
void bch_wait_fills(struct bch_target *bt);

/* writeback.c */
int bch_writeback_init(struct bch_target *bt);
void bch_writeback_exit(struct bch_target *bt);
void bch_writeback_kick(struct bch_target *bt);
void bch_writeback_soon(struct bch_target *bt);
u64 bch_wb_target_of(struct bch_target *bt);
int bch_writeback_flush(struct bch_target *bt);
bool bch_writeback_park(struct bch_target *bt, struct bio *bio, u64 start,
			u64 end);
void bch_writeback_hold(struct bch_target *bt, struct bio *bio, bool later);
void bch_writeback_stop(struct bch_target *bt);
void bch_writeback_start(struct bch_target *bt);
u64 bch_slot_dirty(struct bch_target *bt);

/* fault.c: test hooks */
enum bch_fault_point {
	BCH_FAULT_INSERT,
	BCH_FAULT_CHECKPOINT,
	BCH_FAULT_JOURNAL,
	BCH_FAULT_COPY,
	BCH_FAULT_CSUM,
	BCH_FAULT_KEEP_FAILED,
	BCH_FAULTS,
};

/* Test-only waits that widen a race to where a test can hit it. */
enum bch_fault_wait {
	BCH_WAIT_GC_PAUSE,
	BCH_WAIT_JOURNAL_HOLD,
	BCH_WAIT_MISS_PAUSE,
	BCH_WAIT_SB_MEMBER,
	BCH_WAITS,
};

bool bch_fault(enum bch_fault_point point);
unsigned int bch_fault_wait_ms(enum bch_fault_wait wait);

/* prio.c */
int bch_prios_read(struct bch_cache_set *set, struct bch_member *m,
		   char **error);
int bch_prios_write(struct bch_cache_set *set);
bool bch_prios_load_state(struct bch_cache_set *set);
void bch_prios_read_done(struct bch_cache_set *set);

/* checksum of on-disk structures: standard CRC-32C */
u32 bch_crc32c(const void *buf, size_t len);

#endif /* _DM_BCACHE_H */
