// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: a member of a cache set lost.
 *
 * A member other than 0 fails when a write to it fails or reads fail
 * BCH_READ_ERRORS_MAX times, and is missing when a table names it "-".
 * Either way it is lost: no IO goes to it, and its copies count as stale
 * (bch_ptr_stale()), so clean data it held is read from the origin and
 * dirty data from its other copy. The set runs degraded on the others,
 * and the member is marked FAILED in their superblocks: the set opens
 * again only without it.
 *
 * Member 0 holds the index, the journal and the UUID table, so its loss
 * is the set's (bch_cache_io_error()); nodes go to member 0 alone
 * (bch_alloc_btree()) until they are written to two members.
 *
 * Dirty data has two copies on two members. While degraded, a dirty
 * write that cannot have two goes to the origin (bch_alloc_mirrored()),
 * and writeback writes back everything, not down to writeback_percent:
 * the dirty data that had a copy on the lost member has one copy left.
 * Dirty data whose copies are all lost (two members lost, or a copy
 * dropped earlier) is not taken for the origin's: reads of it fail.
 */
#include <linux/vmalloc.h>

#include "dm-bcache.h"

/*
 * Whether a member of @set is lost and keys may still point to it, until
 * a GC pass finds none and marks it REMOVED; or whether a set of several
 * has fewer than two members left, which dirty data needs (no lock).
 */
bool bch_set_degraded(struct bch_cache_set *set)
{
	struct bch_member *m;

	bch_for_each_member(m, set)
		if (bch_member_failed(m) && !READ_ONCE(m->removed))
			return true;
	return set->nr_members > 1 && bch_set_live(set) < 2;
}

/* Whether location @loc is on a lost member (no lock). */
bool bch_loc_failed(struct bch_cache_set *set, u64 loc)
{
	unsigned int dev = bch_ptr_dev(loc);

	return dev < set->nr_members && bch_member_failed(set->members[dev]);
}

/*
 * Lose member @m: its own errors, or it cannot take a metadata write.
 * Callable from bio completion: the allocator finds out at its next
 * allocation (bch_open_bucket()), the superblocks from the work.
 */
void bch_member_fail(struct bch_cache_set *set, struct bch_member *m)
{
	if (!m->idx) {
		bch_cache_io_error(set, true);
		return;
	}
	if (test_and_set_bit(0, &m->lost))
		return;
	atomic_inc(&set->marks_gen);
	DMERR("%s: member %u failing (%d errors): running degraded on the other members",
	      set->name, m->idx, atomic_read(&m->io_errors));
	queue_work(set->wq, &set->member_work);
}

/*
 * An IO of cached data at @loc failed. As for a device of its own
 * (bch_cache_io_error()): a write error, or a few read errors, and the
 * member is lost. Callable from bio completion.
 */
void bch_member_io_error(struct bch_cache_set *set, u64 loc, bool write)
{
	struct bch_member *m = bch_ptr_member(set, loc);
	int n;

	if (!m->idx) {
		bch_cache_io_error(set, write);
		return;
	}
	if (bch_member_failed(m))
		return;
	n = atomic_inc_return(&m->io_errors);
	if (write || n >= BCH_READ_ERRORS_MAX)
		bch_member_fail(set, m);
}

/*
 * Mark the lost members FAILED in the in-core superblock, and those no
 * key points to any more REMOVED (set->lock held); whether any was not
 * yet. The next superblock write takes it to the other members.
 */
bool bch_members_mark(struct bch_cache_set *set)
{
	struct bch_member *m;
	bool mark = false;

	lockdep_assert_held(&set->lock);
	bch_for_each_member(m, set) {
		struct bch_member_disk *e = &set->sb->members[m->idx];

		u32 state = le32_to_cpu(e->state);

		if (bch_member_failed(m) && state == BCH_MEMBER_ACTIVE) {
			e->state = cpu_to_le32(BCH_MEMBER_FAILED);
			mark = true;
		}
		if (READ_ONCE(m->removed) && state != BCH_MEMBER_REMOVED) {
			e->state = cpu_to_le32(BCH_MEMBER_REMOVED);
			mark = true;
		}
	}
	return mark;
}

/*
 * Write the marks. A member holding nodes takes the index with it (only
 * sets written before nodes stayed on member 0 can have such): the set
 * fails.
 */
static void bch_member_work(struct work_struct *work)
{
	struct bch_cache_set *set = container_of(work, struct bch_cache_set,
						 member_work);
	struct bch_member *m;
	bool nodes = false;

	spin_lock(&set->alloc_lock);
	bch_for_each_member(m, set)
		if (bch_member_failed(m))
			nodes |= m->nr_btree > 0;
	spin_unlock(&set->alloc_lock);
	if (nodes) {
		DMERR("%s: a lost member holds index nodes", set->name);
		bch_cache_io_error(set, true);
		return;
	}

	if (bch_members_mark_sync(set))
		bch_cache_io_error(set, true);
}

/*
 * Mark the members lost since the last mark FAILED on disk now. Before
 * keys are made durable (bch_flush_others()): they may name copies that
 * a member lost since its last flush never made durable, and after a
 * crash that member must not come back ACTIVE. Process context.
 */
/* Whether a member was lost or removed since the last superblock write. */
static bool bch_members_unmarked(struct bch_cache_set *set)
{
	struct bch_member *m;

	if (atomic_read(&set->marks_gen) != READ_ONCE(set->marks_done))
		return true;
	/* Lost, its count not bumped yet (bch_member_fail()). */
	bch_for_each_member(m, set)
		if (bch_member_failed(m) && !READ_ONCE(m->marked))
			return true;
	return false;
}

int bch_members_mark_sync(struct bch_cache_set *set)
{
	int r = 0;

	if (!bch_members_unmarked(set))
		return 0;
	mutex_lock(&set->lock);
	/* Every superblock write takes the marks (bch_sb_write()). */
	if (bch_members_unmarked(set) && !bch_cache_failed(set))
		r = bch_sb_write(set);
	mutex_unlock(&set->lock);
	return r;
}

/*
 * At open (set->lock held), before anything is written: members named
 * "-" are lost, and those still ACTIVE are marked FAILED, so that the set
 * opens again only without them; a member make-bcache --add formatted
 * joins, ACTIVE in the member table from now on.
 */
void bch_members_open(struct bch_cache_set *set)
{
	struct bch_member *m;

	lockdep_assert_held(&set->lock);
	bch_for_each_member(m, set) {
		struct bch_member_disk *e = &set->sb->members[m->idx];

		if (m->joining) {
			memcpy(e->uuid, m->sb->uuid, sizeof(e->uuid));
			e->nbuckets = m->sb->nbuckets;
			e->bucket_size = m->sb->bucket_size;
			e->state = cpu_to_le32(BCH_MEMBER_ACTIVE);
			DMINFO("%s: member %u added (%pg): dirty data is written to two members again",
			       set->name, m->idx, m->bdev);
		} else if (m->removed || m->bdev) {
			continue;
		} else if (le32_to_cpu(e->state) == BCH_MEMBER_ACTIVE) {
			DMWARN("%s: member %u missing: marked failed, running degraded",
			       set->name, m->idx);
		} else {
			DMINFO("%s: member %u failed earlier: running degraded",
			       set->name, m->idx);
		}
	}
	bch_members_mark(set);
}

/*
 * A GC pass whose checkpoint is durable found no key pointing to the lost
 * members in @mask: they are REMOVED (bch_members_mark()), and the set is
 * degraded no more on their account. make-bcache --add may reuse the
 * index: no key can take a new member's bucket for its own.
 */
void bch_members_removed(struct bch_cache_set *set, unsigned long mask)
{
	unsigned int i;

	if (!mask || bch_fault(BCH_FAULT_KEEP_FAILED))
		return;
	for_each_set_bit(i, &mask, BCH_MAX_MEMBERS) {
		WRITE_ONCE(set->members[i]->removed, true);
		DMINFO("%s: member %u: no key points to it any more: removed",
		       set->name, i);
	}
	atomic_inc(&set->marks_gen);
	queue_work(set->wq, &set->member_work);
}

void bch_member_init(struct bch_cache_set *set)
{
	INIT_WORK(&set->member_work, bch_member_work);
}

/*
 * Member @idx, which the table names "-", as member 0's table has it
 * (@e): lost from the start. Its bucket array is all metadata to the
 * allocator, so that nothing walks into it; keys may still point to it,
 * and are judged stale.
 */
struct bch_member *bch_member_missing(struct bch_cache_set *set,
				      unsigned int idx,
				      const struct bch_member_disk *e)
{
	struct bch_member *m = kzalloc(sizeof(*m), GFP_KERNEL);
	u64 i;

	if (!m)
		return NULL;
	m->idx = idx;
	__set_bit(0, &m->lost);
	m->removed = le32_to_cpu(e->state) == BCH_MEMBER_REMOVED;
	/*
	 * A REMOVED entry's geometry is not checked (nor needed): no bucket,
	 * so that a key pointing there is invalid. A FAILED one has the set's
	 * bucket size (bch_sb_members_invalid()).
	 */
	if (!m->removed) {
		m->nbuckets = le64_to_cpu(e->nbuckets);
		m->first_bucket = bch_first_bucket(m->nbuckets,
						   le32_to_cpu(e->bucket_size));
	}
	m->buckets = vzalloc(array_size(max_t(u64, m->nbuckets, 1),
					sizeof(*m->buckets)));
	if (!m->buckets) {
		kfree(m);
		return NULL;
	}
	for (i = 0; i < m->nbuckets; i++) {
		m->buckets[i].state = BCH_B_META;
		if (!(i % 4096))
			cond_resched();
	}
	return m;
}

/* Members that are not lost. */
unsigned int bch_set_live(struct bch_cache_set *set)
{
	unsigned int n = 0;
	struct bch_member *m;

	bch_for_each_live_member(m, set)
		n++;
	return n;
}
