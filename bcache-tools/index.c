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
	[BCH_KEY_DEAD_RANGE]	= "dead:bad-pointer",
	[BCH_KEY_DEAD_FUTURE]	= "dead:future-epoch",
	[BCH_KEY_DEAD_STALE]	= "dead:stale-gen",
	[BCH_KEY_DEAD_EPOCH]	= "dead:old-epoch",
	[BCH_KEY_DEAD_FREE]	= "dead:free-slot",
	[BCH_KEY_DEAD_EPHEMERAL] = "dead:ephemeral-slot",
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

	return m->prio[bch_ptr_sector(p) / m->bucket_size].gen != bch_ptr_gen(p);
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
 * stands (the journal recovers it after a crash).
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
	if (!live)
		return BCH_KEY_DEAD_STALE;
	if (!(flags & BCH_UUID_VALID))
		return BCH_KEY_DEAD_FREE;
	if (bch_inode_epoch(k->inode) != epoch)
		return BCH_KEY_DEAD_EPOCH;
	if (flags & BCH_UUID_EPHEMERAL)
		return BCH_KEY_DEAD_EPHEMERAL;
	return BCH_KEY_LIVE;
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

/* Members ACTIVE or FAILED: those whose keys may be in the index. */
static unsigned int members_in_use(const struct bch_sb_disk *sb)
{
	return bch_sb_members(sb, BCH_MEMBER_ACTIVE) + bch_sb_members(sb, BCH_MEMBER_FAILED);
}

/* Same set, layout version and sizes, each member once. */
static int check_named(struct bch_cache **m, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		const struct bch_sb_disk *a = &m[i]->sb, *b = &m[0]->sb;

		if (memcmp(a->set_uuid, b->set_uuid, 16) || a->version != b->version ||
		    a->block_size != b->block_size || a->bucket_size != b->bucket_size)
			return bch_err("%s and %s are devices of different cache sets",
				       m[0]->dev.path, m[i]->dev.path);
		for (j = 0; j < i; j++)
			if (a->dev_idx == m[j]->sb.dev_idx)
				return bch_err("%s and %s are both member %u of the set (a device named twice?)",
					       m[j]->dev.path, m[i]->dev.path, le32toh(a->dev_idx));
	}
	if (le32toh(m[0]->sb.version) == 2)
		return bch_err("%s is a version 2 cache: a set of several devices needs format version 3",
			       m[0]->dev.path);
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

/* Every member that member 0 names ACTIVE is named, numbered from 0, as it says. */
static int check_table(struct bch_cache **m, unsigned int n, const struct bch_cache *m0)
{
	const struct bch_sb_disk *sb0 = &m0->sb;
	unsigned int i, active = bch_sb_members(sb0, BCH_MEMBER_ACTIVE);

	if (bch_sb_members(sb0, BCH_MEMBER_FAILED))
		return bch_err("%s: the cache set has a failed member: not supported",
			       m0->dev.path);
	if (active != n)
		return bch_err("the cache set has %u members, %u named: name every member",
			       active, n);
	for (i = 0; i < n; i++) {
		const struct bch_member_disk *e;
		u32 idx = le32toh(m[i]->sb.dev_idx);

		if (idx >= n)
			return bch_err("%s is member %u: members not numbered from 0 are not supported",
				       m[i]->dev.path, idx);
		e = &sb0->members[idx];
		if (le32toh(e->state) != BCH_MEMBER_ACTIVE || memcmp(e->uuid, m[i]->sb.uuid, 16) ||
		    e->nbuckets != m[i]->sb.nbuckets)
			return bch_err("%s is not the member %u of the set that member 0 names",
				       m[i]->dev.path, idx);
	}
	return 0;
}

/* One device named: a set of one, or refused naming what is missing. */
static int assemble_one(struct bch_cache *c, struct bch_cache *m)
{
	const struct bch_sb_disk *sb = &m->sb;
	unsigned int used = members_in_use(sb);

	if (le32toh(sb->version) != 2 && used > 1) {
		if (bch_sb_members(sb, BCH_MEMBER_FAILED))
			return bch_err("%s is member %u of a set of %u members: a set with a failed member is not supported",
				       m->dev.path, le32toh(sb->dev_idx), used);
		return bch_err("%s is member %u of a set of %u members: %u member%s missing: name every member of the set",
			       m->dev.path, le32toh(sb->dev_idx), used, used - 1,
			       used - 1 == 1 ? " is" : "s are");
	}
	*c = *m;
	free(m);
	bch_cache_sb_fields(c);
	return 0;
}

int bch_set_assemble(struct bch_cache *c, struct bch_cache **named, unsigned int n)
{
	struct bch_cache *m0 = NULL;
	unsigned int i, idx;
	bool ahead = false;

	if (n == 1) {
		if (assemble_one(c, named[0]))
			return -1;
		named[0] = NULL;
		return 0;
	}
	if (check_named(named, n))
		return -1;
	for (i = 0; i < n; i++)
		if (!named[i]->sb.dev_idx)
			m0 = named[i];
	if (!m0)
		return bch_err("no device named is member 0 of the cache set: name every member");
	if (check_seqs(named, n, m0, &ahead) || check_table(named, n, m0))
		return -1;
	*c = *m0;
	c->members_ahead = ahead;
	for (i = 0; i < n; i++) {
		idx = le32toh(named[i]->sb.dev_idx);
		c->members[idx] = named[i] == m0 ? c : named[i];
		bch_sb_geom(&named[i]->sb, &c->geom[idx]);
		if (named[i] != m0)
			bch_cache_sb_fields(named[i]);
		named[i] = NULL;
	}
	c->nr_members = n;
	free(m0);
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
	unsigned int i;

	for (i = 0; i < c->nr_members; i++)
		if (bch_cache_read_meta(c->members[i]))
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
