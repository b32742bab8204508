// SPDX-License-Identifier: GPL-2.0
/*
 * bcache-writeback: an offline rescue of one origin's dirty data (compare
 * cache_writeback in thin-provisioning-tools), for when no table can
 * write it back: no kernel module, a cache moved to another machine.
 *
 * The index is loaded as bcache-check loads it (the checkpoint the
 * superblock names, with the kernel's own btree code, the journal
 * replayed over it) and must pass the same tests; then every live key
 * of the origin's UUID slot, of the slot's current epoch and flagged
 * dirty, is copied from the cache to the origin in ascending order, its
 * data checksum (version 3) verified first. The cache is only read,
 * unless --mark-clean: once everything was copied and the origin
 * flushed, the slot's epoch is bumped in a new UUID table copy, as the
 * kernel drops an origin's cached data, so that the next attach finds
 * none of it, dirty or clean.
 *
 * Exit status: 0 all dirty data copied; 1 checksum mismatches (those
 * extents are not copied), the origin refused or a write to it failed;
 * 2 usage; 3 the cache cannot be read, is not a dm-bcache device, holds
 * no slot for the origin, or its index cannot be trusted.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index.h"

#define PROG "bcache-writeback"

#define EXIT_OK		0
#define EXIT_PROBLEMS	1
#define EXIT_USAGE	2
#define EXIT_UNREADABLE	3

/* What the slot's fingerprint covers: the kernel's BCH_FINGERPRINT_SECTORS. */
#define FP_SECTORS	8
#define FP_BYTES	(FP_SECTORS << BCH_SECTOR_SHIFT)

#define WHY_LEN		256

/* Where a live key's data is: all the index's, to find overwritten data. */
struct live {
	u64	sector;
	u64	size;
};

static struct {
	bool		dry_run, mark_clean, quiet;
	u8		uuid[16];
	const char	*cache_path, *origin_path;

	unsigned int	slot;
	u32		inode;		/* the slot's keys now: epoch << 8 | slot */
	/* the first reason the index cannot be trusted */
	char		untrusted[WHY_LEN];
	u8		*node;		/* per bucket: holds a node of the index */
	struct live	*live;		/* where every live leaf key's data is */
	size_t		nlive, live_size;
	struct bch_bkey	*dirty;		/* the origin's dirty keys */
	size_t		ndirty, dirty_size;
	bool		oom;

	/* the copy */
	u64		extents, sectors, total_sectors;
	u64		mismatched, unreadable;
	bool		origin_failed;
	bool		wrote_fp;	/* into the origin's first 4 KiB */
} S;

__printf(1, 2) static void err(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__printf(1, 2) static void note(const char *fmt, ...)
{
	va_list ap;

	if (S.quiet)
		return;
	fputs(PROG ": note: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Why the index cannot be trusted; the first reason stands. */
__printf(1, 2) static void untrusted(const char *fmt, ...)
{
	va_list ap;

	if (S.untrusted[0])
		return;
	va_start(ap, fmt);
	vsnprintf(S.untrusted, sizeof(S.untrusted), fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--dry-run] [--mark-clean] [-q] --uuid <origin uuid>\n"
		"                        <cache device> <origin device>\n"
		"Copy the dirty data (written in writeback mode, not yet written back) of\n"
		"one origin from a dm-bcache cache device that no table is using to the\n"
		"origin, without the kernel module.\n\n"
		"  -u, --uuid UUID  the origin_uuid its table gave the origin\n"
		"  -n, --dry-run    list the dirty extents and verify their checksums;\n"
		"                   write nothing to either device\n"
		"  -m, --mark-clean once all was copied: drop the origin's cached data in\n"
		"                   the cache's UUID table, so that the cache opens clean\n"
		"  -q, --quiet      no progress and no notes; errors and the summary only\n"
		"  -h, --help       show this help\n\n"
		"Exit status: 0 all dirty data copied, 1 checksum mismatches (not copied),\n"
		"the origin refused or a write to it failed, 2 bad arguments, 3 the cache\n"
		"is unreadable, holds no slot for the origin or its index cannot be trusted.\n");
}

/* The cache. */

static int open_cache(struct bch_cache *c)
{
	const char *path = S.cache_path;

	/* rw only to mark clean: exclusive then, so a device in use is refused */
	if (!S.mark_clean && bch_dev_in_use(path))
		return bch_err("%s is in use (by a dm-bcache table?): its metadata may change under a copy, and a table writes its dirty data back itself",
			       path);
	if (bch_cache_open(c, path, S.mark_clean))
		return -1;
	/* Its keys may point to the other members: nothing is read. */
	if (bch_sb_one_member(&c->sb, path, "writing back")) {
		bch_cache_close(c);
		return -1;
	}
	if (bch_cache_read_meta(c)) {
		bch_cache_close(c);
		return -1;
	}
	return 0;
}

/*
 * The metadata the index depends on, as bcache-check trusts it: a current
 * copy that fails its checksum makes the kernel fall back to the other
 * and drop every origin's cached data, so the gens and epochs here would
 * judge the keys wrongly.
 */
static int check_meta(struct bch_cache *c)
{
	unsigned int i;

	if (!c->prio_csum_ok)
		return bch_err("%s: the current bucket array copy fails its checksum: the index cannot be judged (bcache-check says more)",
			       S.cache_path);
	if (!c->uuid_csum_ok)
		return bch_err("%s: the current UUID table copy fails its checksum: the index cannot be judged (bcache-check says more)",
			       S.cache_path);
	/* The kernel refuses such a table (bch_uuids_read()). */
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		if (le32toh(c->uuids[i].epoch) >= BCH_INODE_EPOCH_MAX)
			return bch_err("%s: UUID slot %u: epoch %u is out of range: the UUID table cannot be trusted",
				       S.cache_path, i, le32toh(c->uuids[i].epoch));
	return 0;
}

/* The valid persistent slot holding the origin, as the kernel's bch_slot_find(). */
static int find_slot(struct bch_cache *c)
{
	char s[BCH_UUID_STR_LEN];
	unsigned int i;
	bool found = false;

	bch_uuid_format(S.uuid, s);
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		const struct bch_uuid_disk *u = &c->uuids[i];
		u32 flags = le32toh(u->flags);

		if (!(flags & BCH_UUID_VALID) || (flags & BCH_UUID_EPHEMERAL) ||
		    memcmp(u->uuid, S.uuid, 16))
			continue;
		if (found)
			return bch_err("%s: UUID slots %u and %u both hold origin_uuid %s: the UUID table cannot be trusted",
				       S.cache_path, S.slot, i, s);
		found = true;
		S.slot = i;
		S.inode = le32toh(u->epoch) << BCH_INODE_SLOT_BITS | i;
	}
	if (!found)
		return bch_err("%s: no UUID slot holds origin_uuid %s: the cache holds no data of that origin",
			       S.cache_path, s);
	return 0;
}

/*
 * The journal as replay finds it: a key the kernel refuses, or a damaged
 * entry in the middle, and the next attach drops the whole index.
 */
static int check_journal(struct bch_cache *c)
{
	struct bch_journal j;
	struct bch_jentry e;
	const char *why;
	u32 i;
	int r;

	if (bch_journal_open(&j, &c->dev, &c->sb))
		return -1;
	while ((r = bch_journal_next(&j, &e)) > 0) {
		for (i = 0; i < e.nkeys; i++) {
			why = bch_jkey_invalid(&c->sb, &e, i);
			if (why)
				untrusted("journal entry seq %llu, key %u: %s: the kernel drops the whole index",
					  (unsigned long long)e.seq, i, why);
		}
	}
	if (!r && j.damaged)
		untrusted("the journal is damaged before entry %llu (a later one, seq %llu, is good): the kernel drops the whole index",
			  (unsigned long long)j.seq, (unsigned long long)j.later_seq);
	bch_journal_close(&j);
	return r < 0 ? -1 : 0;
}

static bool wb_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_cache *c = bch_cache_of(b);
	enum bch_key_state st = bch_key_state(c, k);

	if (st == BCH_KEY_DEAD_FUTURE)
		untrusted("an index key of slot %u epoch %u is newer than its slot (epoch %u): the UUID table is older than the index",
			  bch_inode_slot(k->inode), bch_inode_epoch(k->inode),
			  le32toh(c->uuids[bch_inode_slot(k->inode)].epoch));
	return st != BCH_KEY_LIVE;
}

static int wb_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		 u32 sectors)
{
	if (write)
		return -EROFS;	/* never through the index, even with --mark-clean */
	return bch_index_io(b, false, bucket, offset, buf, sectors);
}

/* Nodes the replay makes stay in memory. */
static const struct bch_btree_ops wb_ops = {
	.alloc		= bch_index_mem_alloc,
	.free		= bch_index_mem_free,
	.io		= wb_io,
	.key_dead	= wb_key_dead,
	.key_invalid	= bch_index_key_invalid,
};

/* A torn set is what a crash leaves; after a clean shutdown it is corruption. */
static void bad_set(struct bch_cache *c, u64 bucket, unsigned int idx, unsigned int level)
{
	if (c->clean)
		untrusted("set %u of the index node in bucket %llu (level %u) is corrupt: its keys are lost, older ones would show through",
			  idx, (unsigned long long)bucket, level);
}

/*
 * Array @p of *@n elements of @size bytes, @used used, with room for one
 * more: @p or its new place; NULL out of memory (@p is then left as is).
 */
static void *grow(void *p, size_t *n, size_t used, size_t size)
{
	size_t want = *n ? 2 * *n : 4096;
	void *q;

	if (used < *n)
		return p;
	q = realloc(p, want * size);
	if (!q) {
		S.oom = true;
		return NULL;
	}
	*n = want;
	return q;
}

static void walk_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct bch_cache *c = bch_cache_of(b);
	u64 bucket = bch_key_sector(k) / c->bucket_size;
	struct bch_bkey *dirty;
	struct live *live;

	(void)arg;
	if (is_node) {
		if (bch_index_mem_bucket(c, bucket))
			return;		/* made by the replay */
		if (bucket < c->first_bucket || bch_journal_bucket(&c->sb, bucket))
			untrusted("an index node lies in bucket %llu, not a data bucket",
				  (unsigned long long)bucket);
		else if (c->prio[bucket].gen != bch_key_gen(k))
			untrusted("the index node in bucket %llu has gen %u, the bucket array says %u",
				  (unsigned long long)bucket, bch_key_gen(k), c->prio[bucket].gen);
		else if (S.node[bucket]++)
			untrusted("bucket %llu holds two index nodes", (unsigned long long)bucket);
		return;
	}
	live = grow(S.live, &S.live_size, S.nlive, sizeof(*live));
	if (!live)
		return;
	S.live = live;
	S.live[S.nlive++] = (struct live){ bch_key_sector(k), k->size };
	if (k->inode != S.inode || !(k->flags & BCH_KEY_DIRTY))
		return;
	dirty = grow(S.dirty, &S.dirty_size, S.ndirty, sizeof(*dirty));
	if (!dirty)
		return;
	S.dirty = dirty;
	S.dirty[S.ndirty++] = *k;
	S.total_sectors += k->size;
}

static int cmp_sector(const void *l, const void *r)
{
	u64 a = ((const struct live *)l)->sector, b = ((const struct live *)r)->sector;

	return a < b ? -1 : a > b;
}

static int cmp_start(const void *l, const void *r)
{
	u64 a = bch_key_start(l), b = bch_key_start(r);

	return a < b ? -1 : a > b;
}

/*
 * Live data that shares cache sectors with other live data, or with an
 * index node (one the replay split away included: the kernel keeps those
 * until its next checkpoint), was overwritten: one of them is garbage.
 */
static void check_live(struct bch_cache *c)
{
	const struct live *a, *b;
	u64 bucket;
	size_t i;

	if (S.nlive)
		qsort(S.live, S.nlive, sizeof(*S.live), cmp_sector);
	for (i = 0; i < S.nlive; i++) {
		b = &S.live[i];
		bucket = b->sector / c->bucket_size;
		if (S.node[bucket] || c->node_level[bucket])
			untrusted("bucket %llu holds an index node and live data",
				  (unsigned long long)bucket);
		if (!i)
			continue;
		a = &S.live[i - 1];
		if (a->sector + a->size > b->sector)
			untrusted("two live keys share cache sector %llu",
				  (unsigned long long)b->sector);
	}
}

/*
 * Load and judge the index, collecting the origin's dirty keys in
 * ascending order. 0, or -1 with bch_strerror() set: the cache cannot be
 * read, or the index cannot be trusted.
 */
static int load_index(struct bch_cache *c)
{
	struct bch_replay rp;
	int r;

	if (check_journal(c))
		return -1;
	if (S.untrusted[0])
		goto untrusted;
	S.node = calloc(c->nbuckets, 1);
	if (!S.node)
		return bch_err("out of memory");
	c->bad_set = bad_set;
	r = bch_index_load(c, &wb_ops);
	if (r == -ENOMEM)
		return bch_err("out of memory loading the index");
	if (r) {
		untrusted("it cannot be loaded: %s", c->load_msg);
		goto untrusted;
	}
	r = bch_index_replay(c, &rp);
	if (r == -ENOMEM)
		return bch_err("out of memory replaying the journal");
	if (r) {
		untrusted("replaying the journal failed: %s", c->load_msg);
		goto untrusted;
	}
	/* GC compacts nodes in memory only: nothing is written. */
	r = bch_btree_gc(&c->b, walk_fn, NULL);
	if (r == -ENOMEM || S.oom)
		return bch_err("out of memory walking the index");
	if (r) {
		untrusted("it cannot be walked: %s", strerror(-r));
		goto untrusted;
	}
	check_live(c);
	if (S.untrusted[0])
		goto untrusted;
	if (S.ndirty)
		qsort(S.dirty, S.ndirty, sizeof(*S.dirty), cmp_start);
	return 0;
untrusted:
	return bch_err("%s: the index cannot be trusted: %s (bcache-check says more)",
		       S.cache_path, S.untrusted);
}

/* The origin. */

static int origin_fingerprint(struct bch_dev *origin, u32 *fp)
{
	static u8 buf[FP_BYTES];

	if (origin->size < FP_BYTES)
		return bch_err("%s: smaller than 4 KiB", origin->path);
	if (bch_pread_all(origin, buf, sizeof(buf), 0))
		return -1;
	*fp = bch_csum(buf, sizeof(buf));
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The origin must look like the one the slot was attached to, as the
 * kernel checks it at attach (bch_slot_check_origin()): its size, and the
 * fingerprint of its first 4 KiB unless the cache was writing there when
 * it went down. Dirty data written to another device corrupts it.
 */
static int open_origin(const struct bch_cache *c, struct bch_dev *origin)
{
	const struct bch_uuid_disk *u = &c->uuids[S.slot];
	u32 flags = le32toh(u->flags), fp;

	if (same_file(S.cache_path, S.origin_path))
		return bch_err("%s is the cache device itself", S.origin_path);
	if (bch_dev_open(origin, S.origin_path, !S.dry_run))
		return -1;
	if (origin->size >> BCH_SECTOR_SHIFT != le64toh(u->sectors) ||
	    origin->size % BCH_SECTOR_SIZE)
		return bch_err("%s: %llu bytes, but slot %u recorded an origin of %llu sectors (%llu bytes): not that origin",
			       S.origin_path, (unsigned long long)origin->size, S.slot,
			       (unsigned long long)le64toh(u->sectors),
			       (unsigned long long)le64toh(u->sectors) << BCH_SECTOR_SHIFT);
	if (!(flags & BCH_UUID_FINGERPRINT)) {
		note("slot %u records no fingerprint of its origin: only its size was checked",
		     S.slot);
		return 0;
	}
	if (flags & BCH_UUID_FP_WRITING) {
		note("slot %u: the cache was writing the origin's first 4 KiB when it went down: the fingerprint is not checked",
		     S.slot);
		return 0;
	}
	if (origin_fingerprint(origin, &fp))
		return -1;
	if (fp != le32toh(u->fingerprint))
		return bch_err("%s: its first 4 KiB (crc32c %08x) do not match the fingerprint slot %u recorded of its origin (%08x): not that origin, or it was written while detached",
			       S.origin_path, fp, S.slot, le32toh(u->fingerprint));
	return 0;
}

/* Does the next attach check the origin's fingerprint? */
static bool fp_checked(const struct bch_cache *c)
{
	u32 flags = le32toh(c->uuids[S.slot].flags);

	return (flags & BCH_UUID_FINGERPRINT) && !(flags & BCH_UUID_FP_WRITING);
}

/* The copy. */

static void progress(size_t done, size_t n, bool last)
{
	bch_progress(last, "writeback: %zu of %zu extents, %llu of %llu sectors (%llu%%)",
		     done, n, (unsigned long long)S.sectors,
		     (unsigned long long)S.total_sectors,
		     S.total_sectors ? (unsigned long long)(S.sectors * 100 / S.total_sectors) :
		     100ULL);
}

/*
 * One dirty extent: its data read from the cache and, if it carries a
 * checksum, the whole checksummed range it is a part of (newer keys cut
 * older ones) verified as the kernel verifies it before writing back.
 * 1 copied (or would be), 0 not, -1 the origin failed.
 */
static int copy_extent(struct bch_cache *c, struct bch_dev *origin, const struct bch_bkey *k,
		       u8 **buf, size_t *buf_len)
{
	u64 sector = bch_key_sector(k), start = bch_key_start(k), from = sector;
	u32 sectors = k->size, front = 0, crc;
	size_t len;

	if (k->flags & BCH_KEY_CSUM) {
		from = sector - k->csum_front;
		sectors = k->csum_sectors;
		front = k->csum_front;
	}
	len = (size_t)sectors << BCH_SECTOR_SHIFT;
	if (len > *buf_len) {
		u8 *b = realloc(*buf, len);

		if (!b) {
			err("out of memory for an extent of %u sectors", sectors);
			S.unreadable++;
			return 0;
		}
		*buf = b;
		*buf_len = len;
	}
	if (bch_pread_all(&c->dev, *buf, len, from << BCH_SECTOR_SHIFT)) {
		err("origin sectors %llu+%u (cache sector %llu): %s: not copied",
		    (unsigned long long)start, k->size, (unsigned long long)sector,
		    bch_strerror());
		S.unreadable++;
		return 0;
	}
	if (k->flags & BCH_KEY_CSUM) {
		crc = bch_csum(*buf, len);
		if (crc != k->csum) {
			err("origin sectors %llu+%u (cache sector %llu): data checksum %08x, the key says %08x (range of %u sectors from cache sector %llu): not copied",
			    (unsigned long long)start, k->size, (unsigned long long)sector,
			    crc, k->csum, sectors, (unsigned long long)from);
			S.mismatched++;
			return 0;
		}
	}
	if (S.dry_run) {
		printf("%llu+%u at cache sector %llu\n", (unsigned long long)start, k->size,
		       (unsigned long long)sector);
	} else if (bch_pwrite_all(origin, *buf + ((size_t)front << BCH_SECTOR_SHIFT),
				  (size_t)k->size << BCH_SECTOR_SHIFT,
				  start << BCH_SECTOR_SHIFT)) {
		err("%s", bch_strerror());
		return -1;
	}
	if (start < FP_SECTORS)
		S.wrote_fp = true;
	S.extents++;
	S.sectors += k->size;
	return 1;
}

static void copy_all(struct bch_cache *c, struct bch_dev *origin)
{
	size_t i, buf_len = 0;
	u8 *buf = NULL;

	for (i = 0; i < S.ndirty; i++) {
		if (copy_extent(c, origin, &S.dirty[i], &buf, &buf_len) < 0) {
			S.origin_failed = true;
			break;
		}
		progress(i + 1, S.ndirty, false);
	}
	progress(i, S.ndirty, true);
	free(buf);
	/* Dirty data is the origin's only once it is on the media. */
	if (!S.dry_run && bch_dev_sync(origin)) {
		err("%s", bch_strerror());
		S.origin_failed = true;
	}
}

/*
 * --mark-clean: what the kernel does to drop an origin's cached data
 * (bch_slot_invalidate()): the slot's epoch bumped (its dirty count
 * zeroed) in the UUID table copy that is not current, then the
 * superblock naming it, so that every old key is dead at the next attach.
 * The fingerprint is retaken, as at a detach: the origin is as it will be
 * found, and the next attach then keeps the (empty) slot without a warning.
 */
static int mark_clean(struct bch_cache *c, struct bch_dev *origin)
{
	struct bch_sb_disk sb = c->sb;
	struct bch_uuid_disk *t, *u;
	u32 fp;
	int ret = -1;

	t = malloc(bch_uuid_bytes(c));
	if (!t)
		return bch_err("out of memory");
	memcpy(t, c->uuids, bch_uuid_bytes(c));
	u = &t[S.slot];
	if (!bch_slot_bump_epoch(u)) {
		bch_slot_free(u);	/* out of epochs: as the kernel does */
	} else {
		u->flags &= ~htole32(BCH_UUID_FP_WRITING);
		if (!origin_fingerprint(origin, &fp)) {
			u->fingerprint = htole32(fp);
			u->flags |= htole32(BCH_UUID_FINGERPRINT);
		}
	}
	if (bch_uuids_write(&c->dev, &sb, t, le32toh(sb.uuid_current)))
		goto out;
	/* The bucket states are not kept up to date here: the next open recounts. */
	sb.state_seq = 0;
	if (bch_sb_write(&c->dev, &sb))
		goto out;
	if (le32toh(u->flags) & BCH_UUID_VALID)
		printf("writeback: marked clean: slot %u now at epoch %u, none of its old data is used (written as UUID table copy %u)\n",
		       S.slot, le32toh(u->epoch), le32toh(sb.uuid_current));
	else
		printf("writeback: marked clean: slot %u ran out of epochs and was freed (written as UUID table copy %u)\n",
		       S.slot, le32toh(sb.uuid_current));
	ret = 0;
out:
	free(t);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "uuid",	required_argument, NULL, 'u' },
		{ "dry-run",	no_argument, NULL, 'n' },
		{ "mark-clean",	no_argument, NULL, 'm' },
		{ "quiet",	no_argument, NULL, 'q' },
		{ "help",	no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct bch_dev origin = { .fd = -1 };
	struct bch_cache c;
	bool have_uuid = false;
	int opt, ret = EXIT_OK;

	while ((opt = getopt_long(argc, argv, "u:nmqh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			if (bch_uuid_parse(optarg, S.uuid)) {
				fprintf(stderr, PROG ": %s\n", bch_strerror());
				return EXIT_USAGE;
			}
			have_uuid = true;
			break;
		case 'n':
			S.dry_run = true;
			break;
		case 'm':
			S.mark_clean = true;
			break;
		case 'q':
			S.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": %s\n", argc - optind < 2 ?
			"a cache device and an origin device are needed" : "too many arguments");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!have_uuid) {
		fprintf(stderr, PROG ": --uuid is needed: the origin_uuid of the origin's table\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (S.dry_run && S.mark_clean) {
		fprintf(stderr, PROG ": --mark-clean does not go with --dry-run\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	S.cache_path = argv[optind];
	S.origin_path = argv[optind + 1];
	if (!S.quiet)
		bch_progress_setup(true);

	if (open_cache(&c)) {
		err("%s", bch_strerror());
		return EXIT_UNREADABLE;
	}
	if (check_meta(&c) || find_slot(&c)) {
		err("%s", bch_strerror());
		bch_cache_close(&c);
		return EXIT_UNREADABLE;
	}
	if (open_origin(&c, &origin)) {
		err("%s", bch_strerror());
		ret = EXIT_PROBLEMS;
		goto out;
	}
	if (load_index(&c)) {
		err("%s", bch_strerror());
		ret = EXIT_UNREADABLE;
		goto out;
	}

	copy_all(&c, &origin);
	printf(S.dry_run ?
	       "writeback: would copy %llu extents, %llu sectors to %s, %llu mismatched" :
	       "writeback: %llu extents, %llu sectors copied to %s, %llu mismatched",
	       (unsigned long long)S.extents, (unsigned long long)S.sectors, S.origin_path,
	       (unsigned long long)S.mismatched);
	if (S.unreadable)
		printf(", %llu unreadable", (unsigned long long)S.unreadable);
	putchar('\n');
	if (S.unreadable)
		ret = EXIT_UNREADABLE;
	else if (S.mismatched || S.origin_failed)
		ret = EXIT_PROBLEMS;

	if (S.mark_clean && ret) {
		err("--mark-clean: not done: not all dirty data was copied; the cache still holds it");
	} else if (S.mark_clean && !S.extents) {
		note("--mark-clean: nothing to do: the cache holds no dirty data of this origin");
	} else if (S.mark_clean && mark_clean(&c, &origin)) {
		err("--mark-clean: %s: the cache still holds the dirty data (copied all the same)",
		    bch_strerror());
		ret = EXIT_UNREADABLE;
	} else if (!S.dry_run && !S.mark_clean && S.wrote_fp && fp_checked(&c)) {
		note("the origin's first 4 KiB were written: they no longer match the fingerprint the cache keeps, so the next attach drops the slot's cached data (all written back by now) and another run refuses the origin; --mark-clean records a new fingerprint");
	}
out:
	bch_dev_close(&origin);
	free(S.node);
	free(S.live);
	free(S.dirty);
	bch_cache_close(&c);
	return ret;
}
