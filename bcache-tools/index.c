// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's index code (dm-bcache/btree.c, bset.c) run in userspace:
 * what bch_compat.h asks a program to provide, device IO for node
 * buckets, and reading the metadata a check or a dump starts from.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "index.h"

const char * const bch_key_state_names[BCH_KEY_NR_STATES] = {
	[BCH_KEY_LIVE]		= "live",
	[BCH_KEY_LOST]		= "lost",
	[BCH_KEY_DEAD_RANGE]	= "dead:bad-pointer",
	[BCH_KEY_DEAD_FUTURE]	= "dead:future-epoch",
	[BCH_KEY_DEAD_STALE]	= "dead:stale-gen",
	[BCH_KEY_DEAD_EPOCH]	= "dead:old-epoch",
	[BCH_KEY_DEAD_FREE]	= "dead:free-slot",
	[BCH_KEY_DEAD_EPHEMERAL] = "dead:ephemeral-slot",
	[BCH_KEY_DEAD_FAILED]	= "dead:failed-member",
};

/* What bch_compat.h wants from a userspace program. */

void *bch_kvzalloc(size_t size)
{
	return calloc(1, size);
}

void bch_kvfree(void *p)
{
	free(p);
}

u64 get_random_u64(void)
{
	static u64 x;
	u64 r;

	if (getrandom(&r, sizeof(r), 0) == sizeof(r))
		return r;
	/* no entropy source: node seqs only need to differ (splitmix64) */
	if (!x)
		x = (u64)time(NULL) ^ ((u64)getpid() << 32);
	r = (x += 0x9e3779b97f4a7c15ULL);
	r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ULL;
	r = (r ^ (r >> 27)) * 0x94d049bb133111ebULL;
	return r ^ (r >> 31);
}

u32 bch_crc32c(const void *buf, size_t len)
{
	return bch_csum(buf, len);
}

bool bch_ptr_stale(const struct bch_cache *c, u64 p)
{
	const struct bch_cache *m = bch_member(c, bch_ptr_dev(p));

	/* a lost member's data is as good as reused (the kernel's member.c) */
	return m->lost || m->prio[bch_ptr_sector(p) / m->bucket_size].gen != bch_ptr_gen(p);
}

/*
 * Is every copy of @k on a lost member (the kernel's bch_key_lost())? A
 * copy whose bucket a live member reused was written back: not lost.
 */
static bool key_lost(const struct bch_cache *c, const struct bch_bkey *k)
{
	unsigned int i;

	for (i = 0; i < k->nptrs; i++)
		if (!bch_member(c, bch_ptr_dev(k->ptr[i]))->lost)
			return false;
	return k->nptrs > 0;
}

/* Is data pointer @p outside its member's data buckets? */
static bool ptr_out_of_range(const struct bch_cache *c, u64 p)
{
	const struct bch_cache *m = bch_member(c, bch_ptr_dev(p));
	u64 bucket;

	if (!m)
		return true;
	bucket = bch_ptr_sector(p) / m->bucket_size;
	return bucket < m->first_bucket || bucket >= m->nbuckets ||
	       bch_journal_bucket(&m->sb, bucket);
}

/*
 * As the kernel decides at the next attach (bch_uuids_recover(), then
 * bch_key_dead()), plus the two states that only corruption produces. A
 * slot still marked attached was held when the cache went down: its data
 * stands (the journal recovers it after a crash). A key with no live copy
 * whose copies are all on lost members is dead if clean (its origin has
 * the data), kept and lost if dirty.
 */
enum bch_key_state bch_key_state(const struct bch_cache *c, const struct bch_bkey *k)
{
	const struct bch_uuid_disk *u = &c->uuids[bch_inode_slot(k->inode)];
	u32 flags = le32toh(u->flags), epoch = le32toh(u->epoch);
	unsigned int i, live = 0;

	if (!k->nptrs)
		return BCH_KEY_DEAD_RANGE;
	for (i = 0; i < k->nptrs; i++)
		if (ptr_out_of_range(c, k->ptr[i]))
			return BCH_KEY_DEAD_RANGE;
	if (bch_inode_epoch(k->inode) > epoch)
		return BCH_KEY_DEAD_FUTURE;
	for (i = 0; i < k->nptrs; i++)
		live += !bch_ptr_stale(c, k->ptr[i]);
	if (!live && !key_lost(c, k))
		return BCH_KEY_DEAD_STALE;
	if (!live && !(k->flags & BCH_KEY_DIRTY))
		return BCH_KEY_DEAD_FAILED;
	if (!(flags & BCH_UUID_VALID))
		return BCH_KEY_DEAD_FREE;
	if (bch_inode_epoch(k->inode) != epoch)
		return BCH_KEY_DEAD_EPOCH;
	if (flags & BCH_UUID_EPHEMERAL)
		return BCH_KEY_DEAD_EPHEMERAL;
	return live ? BCH_KEY_LIVE : BCH_KEY_LOST;
}

const char *bch_index_key_invalid(struct bch_btree *b, const struct bch_bkey *k)
{
	const struct bch_cache *c = bch_cache_of(b);

	return bch_leaf_key_invalid(k, le32toh(c->sb.version), c->geom, c->nr_members);
}

const char *bch_set_jkey_invalid(const struct bch_cache *c, const struct bch_jentry *e, u32 i)
{
	struct bch_bkey k;

	if (!bch_jentry_key(e, i, &k))
		return "is not a key of this format";
	return bch_leaf_key_invalid(&k, le32toh(c->sb.version), c->geom, c->nr_members);
}

/* The device. */

int bch_cache_open(struct bch_cache *c, const char *path, bool rw)
{
	memset(c, 0, sizeof(*c));
	if (bch_dev_open(&c->dev, path, rw))
		return -1;
	if (bch_sb_load(&c->dev, &c->sb)) {
		char why[256];

		snprintf(why, sizeof(why), "%s", bch_strerror());
		bch_err("%s: %s", path, why);
		bch_dev_close(&c->dev);
		return -1;
	}
	bch_cache_sb_fields(c);
	return 0;
}

void bch_cache_sb_fields(struct bch_cache *c)
{
	c->block_size = le32toh(c->sb.block_size);
	c->bucket_size = le32toh(c->sb.bucket_size);
	c->nbuckets = le64toh(c->sb.nbuckets);
	c->first_bucket = le64toh(c->sb.first_bucket);
	c->clean = le64toh(c->sb.flags) & BCH_SB_CLEAN;
	c->nr_members = 1;
	c->members[0] = c;
	bch_sb_geom(&c->sb, &c->geom[0]);
}

struct bch_cache *bch_member(const struct bch_cache *c, unsigned int dev)
{
	return dev < c->nr_members ? c->members[dev] : NULL;
}

/* Members with a device the next open uses: live ones, and those that join. */
unsigned int bch_set_live(const struct bch_cache *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < c->nr_members; i++)
		n += !c->members[i]->lost || c->members[i]->joining;
	return n;
}

bool bch_set_degraded(const struct bch_cache *c)
{
	const struct bch_cache *m;
	unsigned int i;

	for (i = 0; i < c->nr_members; i++) {
		m = c->members[i];
		if (m->lost && !m->removed && !m->joining)
			return true;
	}
	return c->nr_members > 1 && bch_set_live(c) < 2;
}

const char *bch_set_describe(const struct bch_cache *c)
{
	static char buf[128];
	unsigned int i, removed = 0, joining = 0;
	char also[48] = "";
	const char *state = "all named";

	for (i = 0; i < c->nr_members; i++) {
		removed += c->members[i]->removed;
		joining += c->members[i]->joining;
	}
	if (removed && joining)
		snprintf(also, sizeof(also), " (%u removed, %u joining)", removed, joining);
	else if (removed)
		snprintf(also, sizeof(also), " (%u removed)", removed);
	else if (joining)
		snprintf(also, sizeof(also), " (%u joining)", joining);
	if (bch_set_degraded(c))
		state = bch_set_live(c) < 2 ? "degraded: one member left" : "degraded";
	snprintf(buf, sizeof(buf), "%u members%s, %s", c->nr_members, also, state);
	return buf;
}

int bch_key_stray_ptr(const struct bch_cache *c, const struct bch_bkey *k)
{
	const struct bch_cache *m;
	unsigned int i;

	for (i = 0; i < k->nptrs; i++) {
		m = bch_member(c, bch_ptr_dev(k->ptr[i]));
		if (m && (m->removed || m->joining))
			return bch_ptr_dev(k->ptr[i]);
	}
	return -1;
}

const char *bch_stray_why(const struct bch_cache *c, unsigned int dev)
{
	static char buf[2][192];
	static unsigned int next;
	char *s = buf[next++ % ARRAY_SIZE(buf)];
	const struct bch_cache *m = bch_member(c, dev);

	if (m && m->joining)
		snprintf(s, sizeof(buf[0]), "member %u, which joins the set at the next open (make-bcache --add gave it an index no key can point to: the key would take the new member's data for its own)",
			 dev);
	else
		snprintf(s, sizeof(buf[0]), "member %u, which its set removed (once no key pointed to it): none should, a member added at its index would take the key's copy for its own",
			 dev);
	return s;
}

const char *bch_bucket_name(const struct bch_cache *c, unsigned int dev, u64 nr)
{
	static char buf[4][48];
	static unsigned int next;
	char *s = buf[next++ % ARRAY_SIZE(buf)];

	if (c->nr_members > 1)
		snprintf(s, sizeof(buf[0]), "member %u bucket %llu", dev, (unsigned long long)nr);
	else
		snprintf(s, sizeof(buf[0]), "bucket %llu", (unsigned long long)nr);
	return s;
}

/*
 * The set's member count, as the kernel's bch_members_place() has it:
 * the highest index not NONE, plus one. A REMOVED member keeps its index
 * (a set of several left with one member is still a set of several), so
 * indexes may have gaps.
 */
static unsigned int members_nr(const struct bch_sb_disk *sb)
{
	unsigned int i, nr = 0;

	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		if (le32toh(sb->members[i].state) != BCH_MEMBER_NONE)
			nr = i + 1;
	return nr;
}

/*
 * A device make-bcache --add formatted that no open set has written yet
 * (the kernel's bch_member_joining()): superblock seq 0.
 */
static bool sb_joining(const struct bch_sb_disk *sb)
{
	return le32toh(sb->version) != 2 && !le64toh(sb->seq);
}

/* Same set, layout version and sizes, each member once (NULL: "-"), as @first. */
static int check_named(struct bch_cache **m, unsigned int n, const struct bch_cache *first)
{
	const struct bch_sb_disk *b = &first->sb;
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		const struct bch_sb_disk *a;

		if (!m[i])
			continue;
		a = &m[i]->sb;
		if (memcmp(a->set_uuid, b->set_uuid, 16) || a->version != b->version ||
		    a->block_size != b->block_size || a->bucket_size != b->bucket_size)
			return bch_err("%s and %s are devices of different cache sets",
				       first->dev.path, m[i]->dev.path);
		for (j = 0; j < i; j++)
			if (m[j] && a->dev_idx == m[j]->sb.dev_idx)
				return bch_err("%s and %s are both member %u of the set (a device named twice?)",
					       m[j]->dev.path, m[i]->dev.path, le32toh(a->dev_idx));
	}
	if (le32toh(b->version) == 2)
		return bch_err("%s is a version 2 cache: a set of several devices needs format version 3",
			       first->dev.path);
	return 0;
}

/*
 * Member 0 (@m0) is written last: the others are at its seq, or one
 * ahead after a crash between the two writes.
 */
static int check_seqs(struct bch_cache **m, unsigned int n, const struct bch_cache *m0,
		      bool *ahead)
{
	u64 seq0 = le64toh(m0->sb.seq), seq;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!m[i] || m[i]->joining)
			continue;
		seq = le64toh(m[i]->sb.seq);
		if (seq == seq0 + 1)
			*ahead = true;
		else if (seq != seq0)
			return bch_err("%s (member %u, superblock seq %llu) is not at its set's last superblock write (member 0 is at seq %llu)",
				       m[i]->dev.path, le32toh(m[i]->sb.dev_idx),
				       (unsigned long long)seq, (unsigned long long)seq0);
	}
	return 0;
}

/*
 * Device @m against its entry in member 0's table (@m0), as the kernel's
 * bch_member_check(): a member it names ACTIVE, as it names it. One it
 * names FAILED is refused: its superblock stopped being written when it
 * was lost; one it names REMOVED too: it is no member any more. A device
 * make-bcache --add formatted (seq 0, @m->joining) joins at an index no
 * key can point to: NONE or REMOVED in member 0's table.
 */
static int check_entry(const struct bch_cache *m0, const struct bch_cache *m)
{
	u32 idx = le32toh(m->sb.dev_idx);
	const struct bch_member_disk *e = &m0->sb.members[idx];
	u32 state = le32toh(e->state);

	if (m->joining) {
		if (state == BCH_MEMBER_NONE || state == BCH_MEMBER_REMOVED)
			return 0;
		return bch_err("%s is a new member (superblock seq 0: make-bcache --add formatted it) at index %u, which member 0's superblock has %s: the index is in use; format it again with make-bcache --add",
			       m->dev.path, idx,
			       state == BCH_MEMBER_ACTIVE ? "active" : "failed");
	}
	if (state == BCH_MEMBER_FAILED)
		return bch_err("%s is member %u, which its set marks failed (in member 0's superblock): its own superblock is out of date; leave it out (or name it -)",
			       m->dev.path, idx);
	if (state == BCH_MEMBER_REMOVED)
		return bch_err("%s is member %u, which its set removed (in member 0's superblock): it is no member any more; leave it out, or make-bcache --add it again",
			       m->dev.path, idx);
	if (state != BCH_MEMBER_ACTIVE || memcmp(e->uuid, m->sb.uuid, 16) ||
	    e->nbuckets != m->sb.nbuckets)
		return bch_err("%s is not the member %u of the set that member 0 names",
			       m->dev.path, idx);
	return 0;
}

/*
 * The members of member 0's table (@m0, @nr in all) that no device was
 * named for (!@named[idx]): each FAILED, or ACTIVE and named "-" (the
 * @dashes stand for those first, then for FAILED ones), or REMOVED (never
 * named, not even "-").
 */
static int check_unnamed(const struct bch_cache *m0, const bool *named, unsigned int nr,
			 unsigned int dashes)
{
	unsigned int i, unnamed = 0, active = 0, removed = 0;
	u32 state;

	for (i = 0; i < nr; i++) {
		if (named[i])
			continue;
		state = le32toh(m0->sb.members[i].state);
		if (state == BCH_MEMBER_REMOVED) {
			removed++;
			continue;
		}
		if (state != BCH_MEMBER_ACTIVE && state != BCH_MEMBER_FAILED)
			return bch_err("%s: the members of its cache set are not numbered from 0 (member %u has no device and no state): not supported",
				       m0->dev.path, i);
		unnamed++;
		active += state == BCH_MEMBER_ACTIVE;
	}
	if (active > dashes)
		return bch_err("%s is member 0 of a set of %u members: %u member%s missing: name every member of the set (- for one whose device is lost)",
			       m0->dev.path, nr, active - dashes,
			       active - dashes == 1 ? " is" : "s are");
	if (dashes > unnamed)
		return bch_err("%s is member 0 of a set of %u members: %u named -, but %u member%s not named%s",
			       m0->dev.path, nr, dashes, unnamed, unnamed == 1 ? " is" : "s are",
			       removed ? " (a member its set removed is not named, not even -)" : "");
	return 0;
}

/*
 * The set member 0 (@m0, one of the @n named) decides, as the kernel's
 * bch_members_place(): its members in use into *@nr, those a device was
 * named for into @named[].
 */
static int check_set(struct bch_cache **m, unsigned int n, const struct bch_cache *m0,
		     unsigned int *nr, bool *named, bool *ahead)
{
	unsigned int i, idx, dashes = 0;

	*nr = members_nr(&m0->sb);
	for (i = 0; i < n; i++) {
		if (!m[i]) {
			dashes++;
			continue;
		}
		/* only its superblock is read: no key may point to it */
		m[i]->joining = m[i] != m0 && sb_joining(&m[i]->sb);
		m[i]->lost = m[i]->joining;
		if (check_entry(m0, m[i]))
			return -1;
		idx = le32toh(m[i]->sb.dev_idx);
		named[idx] = true;
		/* the kernel's count takes in a member that joins past it */
		if (idx >= *nr)
			*nr = idx + 1;
	}
	if (check_unnamed(m0, named, *nr, dashes))
		return -1;
	return check_seqs(m, n, m0, ahead);
}

/*
 * A device named alone, a set of one: v2, or a set of one index (a set
 * of several left with one member, the others REMOVED, is still one).
 */
static bool set_of_one(const struct bch_sb_disk *sb)
{
	return le32toh(sb->version) == 2 || members_nr(sb) <= 1;
}

/* One device named, a set of one: @c. */
static void assemble_one(struct bch_cache *c, struct bch_cache *m)
{
	*c = *m;
	free(m);
	bch_cache_sb_fields(c);
}

/*
 * Member @idx, which the set lost (not named) or removed: no device, its
 * geometry from member 0's (@m0) table, as the kernel's
 * bch_member_missing(). A REMOVED entry's geometry is not validated
 * (bch_sb_members_invalid()): one that is not of the set's bucket size
 * and of a bucket count it could have becomes a member of no buckets,
 * every pointer to which is invalid (the kernel would divide by its
 * bucket size).
 */
static struct bch_cache *member_lost(const struct bch_cache *m0, unsigned int idx)
{
	const struct bch_member_disk *e = &m0->sb.members[idx];
	struct bch_cache *m = calloc(1, sizeof(*m));
	u32 state = le32toh(e->state);

	if (!m) {
		bch_err("out of memory");
		return NULL;
	}
	m->dev.fd = -1;
	m->dev.path = "-";
	m->sb.version = m0->sb.version;
	m->sb.dev_idx = htole32(idx);
	memcpy(m->sb.uuid, e->uuid, sizeof(m->sb.uuid));
	m->sb.block_size = m0->sb.block_size;
	m->sb.bucket_size = e->bucket_size;
	m->sb.nbuckets = e->nbuckets;
	if (state == BCH_MEMBER_REMOVED &&
	    (e->bucket_size != m0->sb.bucket_size || !le64toh(e->nbuckets) ||
	     le64toh(e->nbuckets) > BCH_MAX_BUCKETS)) {
		m->sb.bucket_size = m0->sb.bucket_size;
		m->sb.nbuckets = 0;
	}
	m->sb.first_bucket = htole64(bch_first_bucket(le64toh(m->sb.nbuckets),
						      le32toh(m->sb.bucket_size)));
	bch_cache_sb_fields(m);
	m->lost = true;
	m->unmarked = state == BCH_MEMBER_ACTIVE;
	m->removed = state == BCH_MEMBER_REMOVED;
	return m;
}

/* @c (member 0, from @m0) owns the @n devices @named and the lost members @lost. */
static void set_place(struct bch_cache *c, struct bch_cache *m0, struct bch_cache **named,
		      unsigned int n, struct bch_cache **lost, unsigned int nr)
{
	unsigned int i;

	*c = *m0;
	for (i = 0; i < n; i++) {
		if (!named[i])
			continue;
		c->members[le32toh(named[i]->sb.dev_idx)] = named[i] == m0 ? c : named[i];
		if (named[i] != m0)
			bch_cache_sb_fields(named[i]);
		named[i] = NULL;
	}
	for (i = 0; i < nr; i++) {
		if (lost[i])
			c->members[i] = lost[i];
		bch_sb_geom(&c->members[i]->sb, &c->geom[i]);
	}
	c->nr_members = nr;
	free(m0);
}

int bch_set_assemble(struct bch_cache *c, struct bch_cache **named, unsigned int n)
{
	struct bch_cache *first = NULL, *m0 = NULL, *lost[BCH_MAX_MEMBERS] = { NULL };
	bool is_named[BCH_MAX_MEMBERS] = { false }, ahead = false;
	unsigned int i, nr;

	for (i = 0; i < n; i++) {
		if (named[i] && !first)
			first = named[i];
		if (named[i] && !named[i]->sb.dev_idx)
			m0 = named[i];
	}
	if (!first)
		return bch_err("no device named: member 0 of a cache set cannot be missing");
	if (n == 1 && set_of_one(&first->sb)) {
		assemble_one(c, first);
		named[0] = NULL;
		return 0;
	}
	if (check_named(named, n, first))
		return -1;
	if (!m0)
		return bch_err("%s is member %u of a set of %u members: member 0 is not named: name it (it holds the index: the set cannot do without it)",
			       first->dev.path, le32toh(first->sb.dev_idx),
			       members_nr(&first->sb));
	if (check_set(named, n, m0, &nr, is_named, &ahead))
		return -1;
	for (i = 0; i < nr; i++) {
		if (is_named[i])
			continue;
		lost[i] = member_lost(m0, i);
		if (!lost[i]) {
			while (i--)
				free(lost[i]);
			return -1;
		}
	}
	set_place(c, m0, named, n, lost, nr);
	c->members_ahead = ahead;
	return 0;
}

void *bch_read_region(struct bch_dev *dev, u64 sector, u64 sectors)
{
	size_t len = (size_t)sectors << BCH_SECTOR_SHIFT;
	void *buf = malloc(len ? len : 1);

	if (!buf) {
		bch_err("out of memory reading %llu sectors", (unsigned long long)sectors);
		return NULL;
	}
	if (bch_pread_all(dev, buf, len, sector << BCH_SECTOR_SHIFT)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int bch_cache_read_meta(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;

	c->prio = bch_read_region(&c->dev, le64toh(sb->prio_offset[le32toh(sb->prio_current)]),
				  le32toh(sb->prio_sectors));
	if (!c->prio)
		return -1;
	c->uuids = bch_read_region(&c->dev, le64toh(sb->uuid_offset[le32toh(sb->uuid_current)]),
				   le32toh(sb->uuid_sectors));
	if (!c->uuids)
		return -1;
	c->prio_csum_ok = bch_csum(c->prio, bch_prio_bytes(c)) == le32toh(sb->prio_csum);
	c->uuid_csum_ok = bch_csum(c->uuids, bch_uuid_bytes(c)) == le32toh(sb->uuid_csum);
	return 0;
}

int bch_set_read_meta(struct bch_cache *c)
{
	struct bch_cache *m;

	bch_for_each_live_member(m, c)
		if (bch_cache_read_meta(m))
			return -1;
	return 0;
}

/* One member's own resources. */
static void member_close(struct bch_cache *m)
{
	free(m->node_level);
	free(m->prio);
	free(m->uuids);
	m->node_level = NULL;
	m->prio = NULL;
	m->uuids = NULL;
	bch_dev_close(&m->dev);
}

void bch_cache_close(struct bch_cache *c)
{
	unsigned int i;

	for (i = 1; i < c->nr_members; i++) {
		member_close(c->members[i]);
		free(c->members[i]);
		c->members[i] = NULL;
	}
	c->nr_members = 0;
	bch_btree_free(&c->b);
	member_close(c);
}

/* The index. */

/*
 * A node bucket (id @bucket, of member @m) was read whole: note its
 * level, and look for a set after the last valid one that is this node's
 * but fails its checksum.
 */
static void snoop_node(struct bch_cache *c, struct bch_cache *m, u64 bucket, const u8 *buf)
{
	u64 bnr = bch_node_bucket_nr(bucket);
	size_t len = (size_t)c->bucket_size << BCH_SECTOR_SHIFT, off = 0, bytes;
	const struct bch_bset_disk *d = (const void *)buf;
	u32 max = bch_node_keys(len, bch_sb_key_bytes(&c->sb)), got = 0;
	unsigned int level = le16toh(d->level), idx;
	struct bch_bkey *keys;
	u64 seq = 0;
	int nr;

	keys = malloc((size_t)max * sizeof(*keys));
	if (!keys)
		return;
	for (idx = 0; idx < BCH_BTREE_MAX_SETS && off < len; idx++) {
		nr = bch_bset_unpack(buf + off, len - off, &seq, level, idx, keys, max - got,
				     c->block_size << BCH_SECTOR_SHIFT, bch_sb_key_bytes(&c->sb),
				     &bytes);
		if (nr < 0) {
			d = (const void *)(buf + off);
			if (idx && c->bad_set && len - off >= sizeof(*d) &&
			    le32toh(d->magic) == BCH_BSET_MAGIC && le16toh(d->set) == idx &&
			    le16toh(d->level) == level && le64toh(d->seq) == seq)
				c->bad_set(c, bucket, idx, level);
			break;
		}
		if (!idx && bnr < m->nbuckets && m->node_level)
			m->node_level[bnr] = level + 1;
		got += nr;
		off += bytes;
	}
	free(keys);
}

int bch_index_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		 u32 sectors)
{
	struct bch_cache *c = bch_cache_of(b);
	struct bch_cache *m = bch_member(c, bch_node_bucket_dev(bucket));
	u64 nr = bch_node_bucket_nr(bucket);
	size_t len = (size_t)sectors << BCH_SECTOR_SHIFT;
	u64 off;

	/* the node's member, by the pointer's dev: its own device and geometry */
	if (!m || nr < m->first_bucket || nr >= m->nbuckets ||
	    offset + (u64)sectors > m->bucket_size)
		return -EINVAL;
	if (m->lost)
		return -EIO;	/* a node on a lost member: the index is lost */
	off = (nr * m->bucket_size + offset) << BCH_SECTOR_SHIFT;
	if (write)
		return bch_pwrite_all(&m->dev, buf, len, off) ? -EIO : 0;
	if (bch_pread_all(&m->dev, buf, len, off))
		return -EIO;
	if (!offset && sectors == m->bucket_size) {
		snoop_node(c, m, bucket, buf);
		bch_progress(false, "index nodes read: %llu",
			     (unsigned long long)(++c->nodes_read));
	}
	return 0;
}

int bch_index_mem_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	struct bch_cache *c = bch_cache_of(b);

	*bucket = c->mem_next++;
	*gen = 0;
	return 0;
}

void bch_index_mem_free(struct bch_btree *b, u64 bucket)
{
	(void)b;
	(void)bucket;
}

void bch_index_setup(struct bch_cache *c, const struct bch_btree_ops *ops)
{
	c->mem_next = c->nbuckets;
	memset(&c->b, 0, sizeof(c->b));
	c->b.ops = ops;
	c->b.priv = c;
	c->b.bucket_sectors = c->bucket_size;
	c->b.block_sectors = c->block_size;
	c->b.key_bytes = bch_sb_key_bytes(&c->sb);
	c->b.max_sets = BCH_BTREE_DEFAULT_SETS;
	c->b.nr_members = c->nr_members;
	c->b.max_leaves = U64_MAX;	/* the tools read it all, and keep it */
}

/*
 * Run fn() with stderr going to a temporary file, then read what was
 * written there into @msg: btree.c reports bad nodes with pr_err().
 */
static int capture_stderr(int (*fn)(struct bch_cache *c), struct bch_cache *c,
			  char *msg, size_t size)
{
	FILE *tmp = tmpfile();
	int saved = -1, ret;
	size_t n = 0;

	fflush(stderr);
	if (tmp)
		saved = dup(STDERR_FILENO);
	if (saved >= 0 && dup2(fileno(tmp), STDERR_FILENO) < 0) {
		close(saved);
		saved = -1;
	}
	ret = fn(c);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, STDERR_FILENO);
		close(saved);
		rewind(tmp);
		n = fread(msg, 1, size - 1, tmp);
	}
	msg[n] = '\0';
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	/* one line: the first one says which node */
	msg[strcspn(msg, "\n")] = '\0';
	if (tmp)
		fclose(tmp);
	return ret;
}

static int do_load(struct bch_cache *c)
{
	struct bch_bkey root;
	int ret;

	if (!bch_sb_root(&c->sb, &root)) {
		snprintf(c->load_msg, sizeof(c->load_msg), "the superblock's root is no key");
		return -EUCLEAN;
	}
	if (!root.size)
		return bch_btree_init(&c->b);
	ret = bch_btree_load(&c->b, &root, le32toh(c->sb.btree_level));
	if (!ret) {
		ret = bch_btree_read_all(&c->b);
		if (ret)
			bch_btree_free(&c->b);
	}
	return ret;
}

/*
 * btree.c names a node by its bucket id (bch_node_bucket_id()): in a set
 * of several, "bucket <id>" becomes "member M bucket N".
 */
static void name_bucket_id(const struct bch_cache *c, char *msg, size_t size)
{
	char *p = strstr(msg, "bucket "), *end, rest[256];
	unsigned long long id;

	if (!p || c->nr_members < 2)
		return;
	id = strtoull(p + 7, &end, 10);
	if (end == p + 7)
		return;
	snprintf(rest, sizeof(rest), "%s", end);
	snprintf(p, size - (p - msg), "%s%s",
		 bch_bucket_name(c, bch_node_bucket_dev(id), bch_node_bucket_nr(id)), rest);
}

int bch_index_load(struct bch_cache *c, const struct bch_btree_ops *ops)
{
	const char *prefix = "dm-bcache: btree: ";
	char said[sizeof(c->load_msg) / 2];
	unsigned int i;
	int ret;

	c->load_msg[0] = '\0';
	c->loaded = false;
	for (i = 0; i < c->nr_members; i++) {
		struct bch_cache *m = c->members[i];

		/* nothing of a lost member is read (bch_index_io()) */
		if (m->lost)
			continue;
		if (!m->node_level)
			m->node_level = calloc(m->nbuckets, 1);
		if (!m->node_level) {
			snprintf(c->load_msg, sizeof(c->load_msg), "out of memory");
			return -ENOMEM;
		}
	}
	bch_index_setup(c, ops);
	c->nodes_read = 0;
	ret = capture_stderr(do_load, c, said, sizeof(said));
	bch_progress(true, "index nodes read: %llu%s", (unsigned long long)c->nodes_read,
		     ret ? ", failed" : "");
	if (!ret) {
		c->loaded = true;
		return 0;
	}
	if (!strncmp(said, prefix, strlen(prefix)))
		memmove(said, said + strlen(prefix), strlen(said) - strlen(prefix) + 1);
	name_bucket_id(c, said, sizeof(said));
	if (said[0])
		snprintf(c->load_msg, sizeof(c->load_msg), "%s (%s)", said, strerror(-ret));
	else if (ret == -EUCLEAN)
		snprintf(c->load_msg, sizeof(c->load_msg),
			 "malformed tree (a node bucket twice, or a bad pointer)");
	else if (ret == -EINVAL)
		snprintf(c->load_msg, sizeof(c->load_msg),
			 "the superblock's root key or level is invalid");
	else
		snprintf(c->load_msg, sizeof(c->load_msg), "%s", strerror(-ret));
	return ret;
}

int bch_index_replay(struct bch_cache *c, struct bch_replay *r)
{
	struct bch_journal j;
	struct bch_jentry e;
	struct bch_bkey k;
	u32 i;
	int ret;

	memset(r, 0, sizeof(*r));
	c->load_msg[0] = '\0';
	if (bch_journal_open(&j, &c->dev, &c->sb)) {
		snprintf(c->load_msg, sizeof(c->load_msg), "out of memory");
		return -ENOMEM;
	}
	while ((ret = bch_journal_next(&j, &e)) > 0) {
		r->entries++;
		for (i = 0; i < e.nkeys; i++) {
			/* the kernel inserts nothing from the first bad key on */
			if ((r->bad && !c->replay_past_refused) ||
			    !bch_jentry_key(&e, i, &k) ||
			    bch_set_jkey_invalid(c, &e, i)) {
				r->bad++;
				continue;
			}
			ret = bch_btree_insert(&c->b, &k);
			if (ret) {
				snprintf(c->load_msg, sizeof(c->load_msg),
					 "journal entry seq %llu, key %u: cannot be inserted: %s",
					 (unsigned long long)e.seq, i, strerror(-ret));
				goto out;
			}
			r->keys++;
		}
	}
	if (ret < 0) {
		snprintf(c->load_msg, sizeof(c->load_msg), "%s", bch_strerror());
		ret = -EIO;
	}
out:
	bch_journal_close(&j);
	return ret;
}

int bch_set_open(struct bch_cache *c, char **paths, unsigned int n,
		 int (*open)(struct bch_cache *m, const char *path))
{
	struct bch_cache *m[BCH_MAX_MEMBERS] = { NULL };
	unsigned int i;
	int ret = -1;

	if (n > BCH_MAX_MEMBERS)
		return bch_err("a cache set has at most %u members", BCH_MAX_MEMBERS);
	for (i = 0; i < n; i++) {
		if (bch_missing_name(paths[i]))
			continue;
		m[i] = malloc(sizeof(*m[i]));
		if (!m[i]) {
			bch_err("out of memory");
			goto out;
		}
		if (open(m[i], paths[i])) {
			free(m[i]);
			m[i] = NULL;
			goto out;
		}
	}
	ret = bch_set_assemble(c, m, n);
out:
	for (i = 0; i < n; i++) {
		if (m[i]) {
			bch_cache_close(m[i]);
			free(m[i]);
		}
	}
	return ret;
}
