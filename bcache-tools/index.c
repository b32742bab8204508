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
	u64 bucket = bch_key_sector(k) / c->bucket_size;

	if (bucket < c->first_bucket || bucket >= c->nbuckets ||
	    bch_journal_bucket(&c->sb, bucket))
		return BCH_KEY_DEAD_RANGE;
	if (bch_inode_epoch(k->inode) > epoch)
		return BCH_KEY_DEAD_FUTURE;
	if (c->prio[bucket].gen != bch_key_gen(k))
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

	struct bch_member_geom g;

	bch_sb_geom(&c->sb, &g);
	return bch_leaf_key_invalid(k, le32toh(c->sb.version), &g, 1);
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

void bch_cache_close(struct bch_cache *c)
{
	bch_btree_free(&c->b);
	free(c->node_level);
	free(c->prio);
	free(c->uuids);
	c->node_level = NULL;
	c->prio = NULL;
	c->uuids = NULL;
	bch_dev_close(&c->dev);
}

/* The index. */

/*
 * A node bucket was read whole: note its level, and look for a set after
 * the last valid one that is this node's but fails its checksum.
 */
static void snoop_node(struct bch_cache *c, u64 bucket, const u8 *buf)
{
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
		if (!idx && bucket < c->nbuckets)
			c->node_level[bucket] = level + 1;
		got += nr;
		off += bytes;
	}
	free(keys);
}

int bch_index_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		 u32 sectors)
{
	struct bch_cache *c = bch_cache_of(b);
	u64 off = (bucket * c->bucket_size + offset) << BCH_SECTOR_SHIFT;
	size_t len = (size_t)sectors << BCH_SECTOR_SHIFT;

	if (bucket < c->first_bucket || bucket >= c->nbuckets ||
	    offset + (u64)sectors > c->bucket_size)
		return -EINVAL;
	if (write)
		return bch_pwrite_all(&c->dev, buf, len, off) ? -EIO : 0;
	if (bch_pread_all(&c->dev, buf, len, off))
		return -EIO;
	if (!offset && sectors == c->bucket_size) {
		snoop_node(c, bucket, buf);
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

int bch_index_load(struct bch_cache *c, const struct bch_btree_ops *ops)
{
	const char *prefix = "dm-bcache: btree: ";
	char said[sizeof(c->load_msg) / 2];
	int ret;

	c->load_msg[0] = '\0';
	c->loaded = false;
	if (!c->node_level) {
		c->node_level = calloc(c->nbuckets, 1);
		if (!c->node_level) {
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
			    bch_jkey_invalid(&c->sb, &e, i)) {
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
