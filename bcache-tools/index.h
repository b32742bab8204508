/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The index (dm-bcache/btree.c, bset.c) in userspace, for the tools that
 * read or build it: bcache-check, bcache-dump and the test fixtures.
 *
 * A tool fills a struct bch_cache from the device (superblock, the current
 * bucket array, the current UUID table), then loads the index checkpoint
 * with its own btree ops and replays the journal over it, as the kernel
 * does at open; bch_index_io() reads and writes node buckets on the device.
 * A cache set of several devices is a struct bch_cache per member, member
 * 0's holding the set (bch_set_assemble()): its superblock, UUID table,
 * journal and index; each member its own device and bucket array. A
 * member the set lost has neither (lost): as in the kernel, its copies
 * count as stale (bch_ptr_stale()). So has a member the set removed (it
 * keeps its index: indexes may have gaps), and nothing but the
 * superblock of one that joins at the next open is read: no key may
 * point to either (bch_key_stray_ptr()).
 */
#ifndef _BCACHE_TOOLS_INDEX_H
#define _BCACHE_TOOLS_INDEX_H

#include <string.h>

#include "bset.h"
#include "lib.h"

struct bch_cache {
	struct bch_dev		dev;
	struct bch_sb_disk	sb;
	u32			block_size, bucket_size;	/* sectors */
	u64			nbuckets, first_bucket;
	bool			clean;

	/* the copies the superblock names, read by bch_cache_read_meta() */
	struct bch_bucket_disk	*prio;		/* prio_sectors long */
	struct bch_uuid_disk	*uuids;		/* BCH_UUID_SLOTS */
	bool			prio_csum_ok, uuid_csum_ok;

	/* the index, once loaded */
	struct bch_btree	b;
	bool			loaded;
	u8			*node_level;	/* per bucket: level + 1 of a node read */
	u64			nodes_read;	/* by the last load, for progress */
	char			load_msg[512];	/* what btree.c said on failure */
	/*
	 * Called while loading for a set that carries its node's seq, index
	 * and level but fails its checksum: after a clean shutdown that is
	 * corruption, not a torn write, and its keys are lost (btree.c stops
	 * reading the node there, as it would for a torn set).
	 */
	void			(*bad_set)(struct bch_cache *c, u64 bucket,
					   unsigned int idx, unsigned int level);
	void			*arg;		/* the tool's */
	/*
	 * The set (struct bch_cache is member 0, or the one device of a set
	 * of one): members[i] is member i, members[0] this one; geom[] as
	 * the kernel's rules want it. members_ahead: some member's
	 * superblock is one write ahead of member 0's (a crash between them).
	 */
	unsigned int		nr_members;
	struct bch_cache	*members[BCH_MAX_MEMBERS];
	struct bch_member_geom	geom[BCH_MAX_MEMBERS];
	bool			members_ahead;
	/*
	 * A member of the set that is lost: member 0's superblock marks it
	 * FAILED, or it was named "-" (unmarked: still ACTIVE there, the
	 * kernel marks it at the next open), or REMOVED (removed: not named,
	 * a placeholder for its index). No device, no bucket array: only
	 * its geometry, from member 0's member table. A member that joins
	 * (make-bcache --add formatted it, superblock seq 0; its index NONE
	 * or REMOVED in member 0's table) is lost too for what the index
	 * holds, but has its device and superblock: the next open takes it
	 * in, live.
	 */
	bool			lost, unmarked, removed, joining;
	/* nodes made while replaying the journal: memory only, from nbuckets up */
	u64			mem_next;
	/*
	 * bch_index_replay() inserts the keys after one bch_jkey_invalid()
	 * refuses too, skipping only the refused ones: not what the kernel
	 * does (it drops the whole index), but what the journal holds, for
	 * counting the dirty data a dropped index loses.
	 */
	bool			replay_past_refused;
};

/* What bch_index_replay() did. */
struct bch_replay {
	u64			entries;	/* good entries replayed */
	u64			keys;		/* keys inserted */
	/* keys not inserted: the first one bch_jkey_invalid() refused, and all after it */
	u64			bad;
};

/* What the kernel would make of a leaf key at the next attach. */
enum bch_key_state {
	BCH_KEY_LIVE,
	/*
	 * Dirty, every copy on a lost member: the kernel keeps it, and reads
	 * of it fail (its origin is older). Not dead: it hides older keys.
	 */
	BCH_KEY_LOST,
	BCH_KEY_DEAD_RANGE,	/* pointer outside the data buckets: corrupt */
	BCH_KEY_DEAD_FUTURE,	/* epoch newer than its slot's: corrupt */
	BCH_KEY_DEAD_STALE,	/* bucket generation moved on */
	BCH_KEY_DEAD_EPOCH,	/* slot invalidated since */
	BCH_KEY_DEAD_FREE,	/* slot not in use */
	BCH_KEY_DEAD_EPHEMERAL,	/* slot freed at the next attach */
	BCH_KEY_DEAD_FAILED,	/* clean, every copy on a lost member */
	BCH_KEY_NR_STATES
};

extern const char * const bch_key_state_names[BCH_KEY_NR_STATES];

/* Does the kernel keep a key in this state in the index? */
static inline bool bch_key_kept(enum bch_key_state st)
{
	return st == BCH_KEY_LIVE || st == BCH_KEY_LOST;
}

static inline unsigned int bch_inode_slot(u32 inode)
{
	return inode & (BCH_UUID_SLOTS - 1);
}

static inline u32 bch_inode_epoch(u32 inode)
{
	return inode >> BCH_INODE_SLOT_BITS;
}

static inline struct bch_cache *bch_cache_of(struct bch_btree *b)
{
	return b->priv;
}

/* Byte size of one bucket array copy, and of one UUID table copy. */
static inline size_t bch_prio_bytes(const struct bch_cache *c)
{
	return (size_t)le32toh(c->sb.prio_sectors) << BCH_SECTOR_SHIFT;
}

static inline size_t bch_uuid_bytes(const struct bch_cache *c)
{
	return (size_t)le32toh(c->sb.uuid_sectors) << BCH_SECTOR_SHIFT;
}

/* Open @path and load its superblock; -1 with bch_strerror() set. */
int bch_cache_open(struct bch_cache *c, const char *path, bool rw);
/* The fields above from c->sb, once the caller validated it: a set of one. */
void bch_cache_sb_fields(struct bch_cache *c);
/* A member named "-", as a table names one that is missing. */
static inline bool bch_missing_name(const char *path)
{
	return !strcmp(path, "-");
}

/*
 * Make @c the set of the @n devices @named (opened, superblocks
 * validated, in any order; NULL for one named "-"), by the kernel's rules
 * (bch_members_place()): member 0's superblock decides; every member it
 * names ACTIVE is named once, or "-"; one it names FAILED is left out (or
 * "-"): its device is refused (its superblock stopped being written);
 * one it names REMOVED is left out (not even "-"): its device is refused;
 * a device make-bcache --add formatted (seq 0) at an index it names NONE
 * or REMOVED joins; all of one set, each at the set's last superblock
 * write (but those that join). The set has as many members as its
 * highest index not NONE (or that joins) + 1. One device whose table has
 * no index but its own (0) is a set of one, as always. The members not
 * named are lost. On success @c is member 0 and
 * owns the others (named[] is cleared; free()d if it held member 0);
 * else -1 with bch_strerror() saying why, named[] left to the caller.
 */
int bch_set_assemble(struct bch_cache *c, struct bch_cache **named, unsigned int n);
/*
 * Open the @n devices at @paths with @open (each a struct bch_cache of
 * its own; none for "-"), then bch_set_assemble() them into @c; 0 or -1.
 * The members' handles that @c does not own are closed either way.
 */
int bch_set_open(struct bch_cache *c, char **paths, unsigned int n,
		 int (*open)(struct bch_cache *m, const char *path));
/* Member @dev of the set, or NULL if it has none. */
struct bch_cache *bch_member(const struct bch_cache *c, unsigned int dev);

/* The next member of @c from index *@i on that is not lost, *@i past it. */
static inline bool bch_live_member_iter(const struct bch_cache *c,
					unsigned int *i, struct bch_cache **m)
{
	while (*i < c->nr_members) {
		*m = c->members[(*i)++];
		if (!(*m)->lost)
			return true;
	}
	return false;
}

/* Each member @m of the set @c that is not lost (bch_member_idx()). */
#define bch_for_each_live_member(m, c)					\
	for (unsigned int _i = 0; bch_live_member_iter(c, &_i, &(m));)

/* A live member's index in its set: its own superblock's. */
static inline unsigned int bch_member_idx(const struct bch_cache *m)
{
	return le32toh(m->sb.dev_idx);
}

/* Members whose device the next open uses: live ones and those that join. */
unsigned int bch_set_live(const struct bch_cache *c);
/*
 * Does the next open run the set degraded, as the kernel's status says:
 * a member lost that is not removed, or a set of several with fewer than
 * two live members (dirty writes need two)?
 */
bool bch_set_degraded(const struct bch_cache *c);
/*
 * "N members (R removed, J joining), STATE": STATE "all named",
 * "degraded", or "degraded: one member left" (bch_set_degraded(), and
 * fewer than two live members). A static buffer.
 */
const char *bch_set_describe(const struct bch_cache *c);
/*
 * The member of a pointer of @k that no key may point to (REMOVED, or
 * one that joins), or -1; bch_stray_why() says why, after "points to ".
 */
int bch_key_stray_ptr(const struct bch_cache *c, const struct bch_bkey *k);
const char *bch_stray_why(const struct bch_cache *c, unsigned int dev);
/* "bucket N", or "member M bucket N" in a set of several (rotating buffers). */
const char *bch_bucket_name(const struct bch_cache *c, unsigned int dev, u64 nr);
/* Read the current bucket array and UUID table copies and checksum them. */
int bch_cache_read_meta(struct bch_cache *c);
/* ... of every member of the set that is not lost. */
int bch_set_read_meta(struct bch_cache *c);
/* Closes every member of the set. */
void bch_cache_close(struct bch_cache *c);

/* A whole metadata region into a new buffer (free() it). */
void *bch_read_region(struct bch_dev *dev, u64 sector, u64 sectors);

/*
 * Is data pointer @p stale (its bucket's gen moved on, or on a lost
 * member)? Pointer in range.
 */
bool bch_ptr_stale(const struct bch_cache *c, u64 p);
/*
 * Dead only once every copy is stale (a live key may have one stale
 * copy); lost, not dead, if dirty with every copy on a lost member.
 */
enum bch_key_state bch_key_state(const struct bch_cache *c, const struct bch_bkey *k);
/* bch_jkey_invalid() with the whole set's geometry. */
const char *bch_set_jkey_invalid(const struct bch_cache *c, const struct bch_jentry *e, u32 i);

/*
 * ops->key_invalid: the kernel's rule for the leaf keys of the nodes it
 * loads (bch_leaf_key_invalid(), as for journal keys): a tool that judges
 * the index as the kernel will sets it, a dump that shows what is there
 * does not.
 */
const char *bch_index_key_invalid(struct bch_btree *b, const struct bch_bkey *k);

/*
 * ops->alloc and ->free for a tool's index that is never written: new
 * nodes (an empty tree, splits while replaying the journal) get bucket
 * numbers from nbuckets up, which no IO ever reaches.
 */
int bch_index_mem_alloc(struct bch_btree *b, u64 *bucket, u8 *gen);
void bch_index_mem_free(struct bch_btree *b, u64 bucket);

/* @bucket: a node bucket id (bch_node_bucket_id()); mem ones are member 0's. */
static inline bool bch_index_mem_bucket(const struct bch_cache *c, u64 bucket)
{
	return !bch_node_bucket_dev(bucket) && bucket >= c->nbuckets;
}

/*
 * ops->io for node buckets (bch_node_bucket_id()) of the set's members'
 * devices (write only if opened rw).
 */
int bch_index_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		 u32 sectors);
/* Set up c->b with @ops (c as priv); then bch_btree_init() or _load(). */
void bch_index_setup(struct bch_cache *c, const struct bch_btree_ops *ops);
/*
 * Load the index checkpoint the superblock names, or an empty tree if it
 * names none (one ops->alloc): 0, or -errno with c->load_msg saying why
 * (btree.c's own message when it gave one).
 */
int bch_index_load(struct bch_cache *c, const struct bch_btree_ops *ops);
/*
 * Then replay the journal over it, as the next attach does: every key of
 * every good entry inserted in order, up to the first that
 * bch_jkey_invalid() refuses (from there on counted in r->bad: the
 * kernel drops the whole index for one; with c->replay_past_refused only
 * the refused keys are counted there, the others inserted). A journal
 * damaged in the middle (struct bch_journal's damaged) costs the kernel
 * the whole index too; this replays the entries before the damage. 0, or
 * -errno with c->load_msg saying why.
 */
int bch_index_replay(struct bch_cache *c, struct bch_replay *r);

#endif /* _BCACHE_TOOLS_INDEX_H */
