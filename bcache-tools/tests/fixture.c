// SPDX-License-Identifier: GPL-2.0
/*
 * Test fixtures for bcache-check, bcache-dump and bcache-writeback:
 * writes, on a file that make-bcache formatted, the metadata a kernel
 * would leave at a clean shutdown, built with the kernel's own index
 * code, plus chosen damage.
 *
 *   fixture slots FILE UUID...    the current UUID table gets these
 *                                 persistent slots (0, 1, ...), epoch 1
 *   fixture flip FILE OFFSET      xor the byte at OFFSET with 0x5a
 *   fixture sb FILE EDIT...       edit the superblock (new csum): dirty,
 *                                 rootptr=SECTOR, jfirst=B, jbuckets=N,
 *                                 jseq=N, jpos=SECTOR
 *   fixture bucket FILE B FLAGS   set bucket B's flags in the current
 *                                 bucket array copy (new csum)
 *   fixture attach FILE           mark slot 0 attached (as a table left it)
 *   fixture uuidcsum FILE [both]  break the current UUID table's checksum
 *                                 (both: the other copy's too)
 *   fixture index FILE [OPT...]   an index for slot 0 (origin_uuid
 *                                 FIXTURE_UUID), and the bucket array
 *                                 and UUID table that go with it
 *     keys=N     N extents of 8 sectors (default 64), data buckets from
 *                the first one after the journal up, index nodes from the
 *                last one down
 *     flushes=N  write the index N times (appended sets), keys spread out
 *     stale=N    bump the gen of the first N data buckets (dead keys)
 *     dirty=N    flag the first N extents dirty (writeback: the data
 *                exists only on the cache)
 *     alias      a live key pointing into the root node's bucket
 *     outside    a key pointing into the metadata bucket
 *     cross      a live key crossing the end of its bucket
 *     future     a key newer than its slot's epoch
 *     injournal  a live key pointing into the first journal bucket
 *     csum       a key flagged csum (which nothing writes yet)
 *     data       write each extent's data (fx_pattern() of its cache
 *                sectors) and, in version 3, checksum it as the kernel
 *                does: the key flagged csum, its range itself
 *
 *   fixture journal FILE [start=POS] [seq=N] ENTRY...
 *                                 append entries to the journal as the
 *                                 kernel would (an entry that does not fit
 *                                 in the rest of a bucket goes to the next
 *                                 one, the ring wraps), from ring sector
 *                                 POS with seq N (both then written to the
 *                                 superblock as where replay starts;
 *                                 default: the superblock's). ENTRY is a
 *                                 comma-separated list of
 *     d:START+LEN@BUCKET[+OFF]   a key of slot 0 epoch 1: origin sectors
 *                                [START, START+LEN) at that cache bucket
 *                                and offset, in the bucket's gen
 *     h:START+LEN                a hole of slot 0 epoch 1
 *     r:START+N@BUCKET           N keys of 8 sectors from origin sector
 *                                START, at 8-sector steps from BUCKET
 *     sectors=N  the entry's size (default: the blocks its keys need)
 *     at=POS     at ring sector POS instead of where the next one goes
 *     skip       at the start of the next bucket, though it fits here
 *     torn       a byte of it changed after the checksum (a torn write)
 *     lost       zeros written in its place (a write the media lost)
 *     badseq     seq one above the one expected
 *     setseq=N   seq N, and the entries after it N + 1 on (an entry an
 *                earlier lap of the ring left, with at=POS)
 *     baduuid    another cache set's
 *     stale      its keys a generation behind their buckets'
 *     dirty      its data keys flagged dirty
 *     csum       its data keys flagged csum (which no journal holds)
 *     data       its data keys' data written and, in version 3,
 *                checksummed, as index's data
 *     slot=S     its keys of slot S (epoch 1 still), not slot 0; the
 *                slot is made valid (origin_uuid FIXTURE_UUID with S + 1
 *                as its last number) if it is not
 *     epoch=E    its keys of epoch E, not 1
 *   Prints "jset SEQ POS SECTORS NKEYS" per entry. Slot 0 is made valid
 *   (origin_uuid FIXTURE_UUID) if it is not.
 *
 *   fixture set FILE0 FILE1 [OPT...]
 *                                 an index for slot 0 on a set of two
 *                                 (make-bcache FILE0 FILE1), data written
 *                                 and checksummed, nodes on member 0:
 *                                 origin 0-8 dirty with copies on member
 *                                 0 (first data bucket) and member 1
 *                                 (its first data bucket), 8-16 clean on
 *                                 member 1 only, 16-24 dirty, two copies
 *                                 (8 sectors on in both buckets); both
 *                                 superblocks written at one seq
 *     stale1     bump member 1's gen of its first data bucket (the
 *                copies there stale: the keys live through member 0's)
 *     stale0     the same on member 0 (the dirty keys' copies there)
 *     behind     member 1's superblock a write behind member 0's
 *     ahead      member 1's superblock a write ahead (a crash between)
 *     nodes1     the index nodes on member 1 (from its last bucket down)
 *     dirty1     8-16 dirty too (its one copy on member 1)
 *     fail1      then member 1 lost, as the kernel leaves it: FAILED
 *                in member 0's table, written with the next seq;
 *                member 1's own superblock as it was
 *     m2=FILE2   FILE2 is member 2 (make-bcache FILE0 FILE1 FILE2): the
 *                copies that go to member 1 above go to member 2
 *                instead (its first data buckets); member 1 holds none.
 *                stale1 then bumps member 2's gen
 *     removed1   member 1 lost and then removed, as the kernel leaves it
 *                once a GC pass found no key pointing to it: REMOVED in
 *                the tables, written with the next seq to member 0 and
 *                the members still active; member 1's own superblock as
 *                it was; the keys' copies on it dropped, a key left with
 *                none dropped too (with m2=: nothing to drop)
 *     removed2   the same for member 2 (with m2=)
 *     keepptrs   with removed1 or removed2: the keys keep their copies
 *                on the removed member (which none should)
 *
 *   fixture upgrade FILE [stop]   bcache-check --upgrade's steps, without
 *                                 its check: the version 3 index written
 *                                 and read back, the bucket array copy
 *                                 that is not current, then (not with
 *                                 stop: an upgrade interrupted before it)
 *                                 the version 3 superblock. Prints
 *                                 "upgrade nodes N buckets B..." (the
 *                                 new index's) and "copy P" (the bucket
 *                                 array copy written)
 *
 *   fixture origin FILE ORIGIN [slot=S] [fpwriting]
 *                                 slot S (default 0, which must be valid)
 *                                 records ORIGIN as the kernel does at
 *                                 attach: its size and the fingerprint of
 *                                 its first 4 KiB (fpwriting: with
 *                                 BCH_UUID_FP_WRITING, as a crash amid
 *                                 writes there leaves it)
 *
 * "index" prints "root BUCKET level L nodes N" on success. The metadata
 * copies are rewritten in place (the current ones): this is a fixture,
 * not a kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "upgrade.h"

#define FIXTURE_UUID	"f1f1f1f1-0000-4000-8000-000000000001"
/* the origin_uuid a journal entry's slot=S gives slot S if it is free */
#define FIXTURE_UUID_FMT "f1f1f1f1-0000-4000-8000-%012x"

static struct bch_cache c;
static u64 next_node;		/* allocated downwards */
static u64 node_limit;		/* first bucket holding data */

/* The first data bucket: after the journal if it is at first_bucket. */
static u64 data_first(void)
{
	u64 jfirst = le64toh(c.sb.journal_first);

	if (jfirst == c.first_bucket)
		return jfirst + le32toh(c.sb.journal_buckets);
	return c.first_bucket;
}

static int die(const char *msg)
{
	fprintf(stderr, "fixture: %s\n", msg);
	exit(1);
}

static unsigned int node_dev;	/* the member nodes go to (fixture set) */

static int fx_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	struct bch_cache *m = bch_member(&c, node_dev);

	(void)b;
	if (next_node <= node_limit)
		return -ENOSPC;
	*gen = m->prio[next_node].gen;
	m->prio[next_node].prio = htole16(U16_MAX);
	*bucket = bch_node_bucket_id(node_dev, next_node--);
	return 0;
}

static void fx_free(struct bch_btree *b, u64 bucket)
{
	struct bch_cache *m = bch_member(&c, bch_node_bucket_dev(bucket));

	(void)b;
	bucket = bch_node_bucket_nr(bucket);
	m->prio[bucket].gen++;		/* as bch_bucket_invalidate() */
	m->prio[bucket].prio = 0;
}

static const struct bch_btree_ops fx_ops = {
	.alloc	= fx_alloc,
	.free	= fx_free,
	.io	= bch_index_io,
};

static void write_meta(void)
{
	struct bch_sb_disk *sb = &c.sb;

	u64 prio = le64toh(sb->prio_offset[le32toh(sb->prio_current)]);
	u64 uuid = le64toh(sb->uuid_offset[le32toh(sb->uuid_current)]);

	if (bch_pwrite_all(&c.dev, c.prio, bch_prio_bytes(&c), prio << BCH_SECTOR_SHIFT) ||
	    bch_pwrite_all(&c.dev, c.uuids, bch_uuid_bytes(&c), uuid << BCH_SECTOR_SHIFT))
		die(bch_strerror());
	sb->prio_csum = htole32(bch_csum(c.prio, bch_prio_bytes(&c)));
	sb->uuid_csum = htole32(bch_csum(c.uuids, bch_uuid_bytes(&c)));
	sb->seq = htole64(le64toh(sb->seq) + 1);
	sb->csum = htole32(bch_sb_csum(sb));
	if (bch_pwrite_all(&c.dev, sb, sizeof(*sb), BCH_SB_OFFSET) || bch_dev_sync(&c.dev))
		die(bch_strerror());
}

static void set_slot(unsigned int i, const char *uuid)
{
	struct bch_uuid_disk *u = &c.uuids[i];

	memset(u, 0, sizeof(*u));
	if (bch_uuid_parse(uuid, u->uuid))
		die(bch_strerror());
	u->epoch = htole32(1);
	u->flags = htole32(BCH_UUID_VALID);
	u->sectors = htole64(1 << 20);
}

/* @k's one pointer: cache sector @sector in a bucket of gen @gen. */
static void fx_ptr(struct bch_bkey *k, u64 sector, u8 gen)
{
	k->ptr[0] = bch_ptr(0, gen, sector);
	k->nptrs = 1;
}

/* The gen the bucket array gives the bucket of @sector (0 past the end). */
static u8 fx_gen(u64 sector)
{
	u64 b = sector / c.bucket_size;

	return b < c.nbuckets ? c.prio[b].gen : 0;
}

/*
 * Byte @i of cache sector @sector as "data" writes it: no two sectors of
 * a cache alike, nor like zeros.
 */
static u8 fx_pattern(u64 sector, unsigned int i)
{
	return (u8)(sector * 131 + (sector >> 8) * 29 + i * 7 + 0x5b);
}

/*
 * "data": @k's data written at its cache sectors and, in version 3,
 * checksummed as the kernel checksums a write (the range is the key).
 */
static void fx_data(struct bch_bkey *k)
{
	size_t len = (size_t)k->size << BCH_SECTOR_SHIFT, i;
	u64 sector = bch_key_sector(k);
	u8 *buf = malloc(len);

	if (!buf)
		die("out of memory");
	for (i = 0; i < len; i++)
		buf[i] = fx_pattern(sector + (i >> BCH_SECTOR_SHIFT), i & (BCH_SECTOR_SIZE - 1));
	if (bch_pwrite_all(&c.dev, buf, len, sector << BCH_SECTOR_SHIFT))
		die(bch_strerror());
	if (le32toh(c.sb.version) != 2) {
		if (k->size > BCH_CSUM_MAX_SECTORS)
			die("data: a key too long to checksum");
		k->flags |= BCH_KEY_CSUM;
		k->csum = bch_csum(buf, len);
		k->csum_sectors = k->size;
		k->csum_front = 0;
	}
	free(buf);
}

static void fx_insert(const struct bch_bkey *k)
{
	if (bch_btree_insert(&c.b, k))
		die("bch_btree_insert() failed");
}

static void fx_flush(void)
{
	if (bch_btree_flush(&c.b))
		die("bch_btree_flush() failed");
}

static int do_index(int argc, char **argv)
{
	unsigned long keys = 64, flushes = 1, stale = 0, dirty = 0, i, f;
	bool alias = false, outside = false, cross = false, future = false;
	bool injournal = false, csum = false, data = false;
	u32 inode = 1 << BCH_INODE_SLOT_BITS;	/* slot 0, epoch 1 */
	u32 per_bucket = c.bucket_size / 8;
	struct bch_bkey k = { 0 }, root;
	unsigned int level;
	u64 data_buckets;
	int a;

	for (a = 0; a < argc; a++) {
		if (!strncmp(argv[a], "keys=", 5))
			keys = strtoul(argv[a] + 5, NULL, 0);
		else if (!strncmp(argv[a], "flushes=", 8))
			flushes = strtoul(argv[a] + 8, NULL, 0);
		else if (!strncmp(argv[a], "stale=", 6))
			stale = strtoul(argv[a] + 6, NULL, 0);
		else if (!strncmp(argv[a], "dirty=", 6))
			dirty = strtoul(argv[a] + 6, NULL, 0);
		else if (!strcmp(argv[a], "alias"))
			alias = true;
		else if (!strcmp(argv[a], "outside"))
			outside = true;
		else if (!strcmp(argv[a], "cross"))
			cross = true;
		else if (!strcmp(argv[a], "future"))
			future = true;
		else if (!strcmp(argv[a], "injournal"))
			injournal = true;
		else if (!strcmp(argv[a], "csum"))
			csum = true;
		else if (!strcmp(argv[a], "data"))
			data = true;
		else
			die("unknown option");
	}
	if (!flushes || !per_bucket)
		die("bad options");
	data_buckets = (keys + per_bucket - 1) / per_bucket + 1;
	node_limit = data_first() + data_buckets;
	next_node = c.nbuckets - 1;
	if (le64toh(c.sb.journal_first) != c.first_bucket)
		die("index: the journal must be at the first bucket");
	if (node_limit >= next_node)
		die("device too small for that many keys");

	set_slot(0, FIXTURE_UUID);
	bch_index_setup(&c, &fx_ops);
	if (bch_btree_init(&c.b))
		die("btree init failed");

	/* Keys i*8 .. i*8+8 of slot 0 at data sector (first data bucket) + i*8. */
	for (f = 0; f < flushes; f++) {
		for (i = f; i < keys; i += flushes) {
			k.inode = inode;
			k.size = 8;
			k.end = i * 8 + 8;
			fx_ptr(&k, data_first() * c.bucket_size + i * 8,
			       fx_gen(data_first() * c.bucket_size + i * 8));
			k.flags = i < dirty ? BCH_KEY_DIRTY : 0;
			if (data)
				fx_data(&k);
			fx_insert(&k);
		}
		fx_flush();
	}
	k.size = 8;
	k.inode = inode;
	k.flags = 0;
	k.csum = 0;
	k.csum_sectors = 0;
	if (outside) {
		k.end = keys * 8 + 1000;
		fx_ptr(&k, 8, c.prio[0].gen);
		fx_insert(&k);
	}
	if (cross) {
		k.end = keys * 8 + 2000;
		fx_ptr(&k, (node_limit - 1) * c.bucket_size + c.bucket_size - 4,
		       c.prio[node_limit - 1].gen);
		fx_insert(&k);
	}
	if (future) {
		k.inode = 2 << BCH_INODE_SLOT_BITS;
		k.end = keys * 8 + 3000;
		fx_ptr(&k, (node_limit - 1) * c.bucket_size, c.prio[node_limit - 1].gen);
		fx_insert(&k);
		k.inode = inode;
	}
	if (injournal) {
		k.end = keys * 8 + 5000;
		fx_ptr(&k, le64toh(c.sb.journal_first) * c.bucket_size,
		       c.prio[le64toh(c.sb.journal_first)].gen);
		fx_insert(&k);
	}
	if (csum) {
		k.end = keys * 8 + 6000;
		fx_ptr(&k, (node_limit - 1) * c.bucket_size + 8, c.prio[node_limit - 1].gen);
		k.flags = BCH_KEY_CSUM;
		fx_insert(&k);
		k.flags = 0;
	}
	if (outside || cross || future || injournal || csum)
		fx_flush();
	if (alias) {
		bch_btree_root(&c.b, &root, &level);
		k.end = keys * 8 + 4000;
		fx_ptr(&k, bch_key_sector(&root), bch_key_gen(&root));
		fx_insert(&k);
		fx_flush();
		bch_btree_root(&c.b, &root, &level);
		if (bch_key_sector(&k) != bch_key_sector(&root))
			die("alias: the root moved");
	}
	for (i = 0; i < stale; i++)
		c.prio[data_first() + i].gen++;

	bch_btree_root(&c.b, &root, &level);
	bch_sb_set_root(&c.sb, &root);
	c.sb.btree_level = htole32(level);
	c.sb.flags = htole64(BCH_SB_CLEAN);
	write_meta();
	printf("root %llu level %u nodes %llu\n",
	       (unsigned long long)(bch_key_sector(&root) / c.bucket_size), level,
	       (unsigned long long)bch_btree_nodes(&c.b));
	return 0;
}

/* Member @m's metadata, with the set's fields of member 0's (c.sb), seq + @dseq. */
static void write_member_meta(struct bch_cache *m, int dseq)
{
	struct bch_sb_disk *sb = &m->sb;
	u64 prio = le64toh(sb->prio_offset[le32toh(sb->prio_current)]);
	/* its own layout (members differ in size), member 0's current copy */
	u64 uuid = le64toh(sb->uuid_offset[le32toh(c.sb.uuid_current)]);

	if (bch_pwrite_all(&m->dev, m->prio, bch_prio_bytes(m), prio << BCH_SECTOR_SHIFT) ||
	    bch_pwrite_all(&m->dev, c.uuids, bch_uuid_bytes(m), uuid << BCH_SECTOR_SHIFT))
		die(bch_strerror());
	sb->prio_csum = htole32(bch_csum(m->prio, bch_prio_bytes(m)));
	/* as the kernel's bch_sb_set_fields() */
	sb->flags = c.sb.flags;
	sb->seq = htole64(le64toh(c.sb.seq) + dseq);
	sb->last_attach = c.sb.last_attach;
	sb->btree_root = c.sb.btree_root;
	sb->btree_level = c.sb.btree_level;
	sb->btree_root3 = c.sb.btree_root3;
	sb->uuid_current = c.sb.uuid_current;
	sb->uuid_csum = c.sb.uuid_csum;
	sb->uuid_csum_other = c.sb.uuid_csum_other;
	sb->state_seq = c.sb.state_seq;
	memcpy(sb->members, c.sb.members, sizeof(sb->members));
	sb->csum = htole32(bch_sb_csum(sb));
	if (bch_pwrite_all(&m->dev, sb, sizeof(*sb), BCH_SB_OFFSET) || bch_dev_sync(&m->dev))
		die(bch_strerror());
}

/* A key of slot 0 epoch 1, its data (8 sectors) at each of its copies. */
static void set_key(u64 end, bool dirty, const u64 *ptr, unsigned int nptrs)
{
	static u8 buf[8 << BCH_SECTOR_SHIFT];
	struct bch_cache *m;
	struct bch_bkey k = { 0 };
	unsigned int i;
	size_t j;

	if (!nptrs)
		return;		/* every copy dropped: no key */
	for (j = 0; j < sizeof(buf); j++)
		buf[j] = fx_pattern(end * 8 + (j >> BCH_SECTOR_SHIFT), j & (BCH_SECTOR_SIZE - 1));
	k.inode = 1 << BCH_INODE_SLOT_BITS;
	k.size = 8;
	k.end = end;
	k.flags = BCH_KEY_CSUM | (dirty ? BCH_KEY_DIRTY : 0);
	k.csum = bch_csum(buf, sizeof(buf));
	k.csum_sectors = 8;
	k.nptrs = nptrs;
	for (i = 0; i < nptrs; i++) {
		m = bch_member(&c, bch_ptr_dev(ptr[i]));
		k.ptr[i] = bch_ptr(bch_ptr_dev(ptr[i]),
				   m->prio[bch_ptr_sector(ptr[i]) / m->bucket_size].gen,
				   bch_ptr_sector(ptr[i]));
		if (bch_pwrite_all(&m->dev, buf, sizeof(buf),
				   bch_ptr_sector(ptr[i]) << BCH_SECTOR_SHIFT))
			die(bch_strerror());
	}
	fx_insert(&k);
}

/*
 * The @n pointers at @p but those to a member in @drop (removed: the
 * kernel's GC dropped them), moved to the front; how many are left.
 */
static unsigned int set_ptrs(u64 *p, unsigned int n, const bool *drop)
{
	unsigned int i, left = 0;

	for (i = 0; i < n; i++)
		if (!drop[bch_ptr_dev(p[i])])
			p[left++] = p[i];
	return left;
}

/* Member @m's first data bucket's first sector. */
static u64 set_data_first(const struct bch_cache *m)
{
	u64 jfirst = le64toh(m->sb.journal_first);

	return (jfirst == m->first_bucket ? jfirst + le32toh(m->sb.journal_buckets) :
		m->first_bucket) * m->bucket_size;
}

static int do_set(int argc, char **argv)
{
	static struct bch_cache m1, m2;
	bool stale0 = false, stale1 = false, dirty1 = false, fail1 = false, keep = false;
	bool removed[BCH_MAX_MEMBERS] = { false }, drop[BCH_MAX_MEMBERS] = { false };
	const char *path2 = NULL;
	struct bch_cache *om;	/* the member the copies not on member 0 go to */
	struct bch_bkey root;
	unsigned int level, o, i;
	int a, dseq = 0;
	u64 d0, d1, p[2];

	for (a = 2; a < argc; a++) {
		if (!strcmp(argv[a], "stale1"))
			stale1 = true;
		else if (!strcmp(argv[a], "stale0"))
			stale0 = true;
		else if (!strcmp(argv[a], "dirty1"))
			dirty1 = true;
		else if (!strcmp(argv[a], "fail1"))
			fail1 = true;
		else if (!strcmp(argv[a], "behind"))
			dseq = -1;
		else if (!strcmp(argv[a], "ahead"))
			dseq = 1;
		else if (!strcmp(argv[a], "nodes1"))
			node_dev = 1;
		else if (!strncmp(argv[a], "m2=", 3))
			path2 = argv[a] + 3;
		else if (!strcmp(argv[a], "removed1"))
			removed[1] = true;
		else if (!strcmp(argv[a], "removed2"))
			removed[2] = true;
		else if (!strcmp(argv[a], "keepptrs"))
			keep = true;
		else
			die("unknown option");
	}
	if (bch_cache_open(&c, argv[0], true) || bch_cache_read_meta(&c) ||
	    bch_cache_open(&m1, argv[1], true) || bch_cache_read_meta(&m1))
		die(bch_strerror());
	if (le32toh(c.sb.version) != 3 || le32toh(c.sb.dev_idx) || le32toh(m1.sb.dev_idx) != 1)
		die("set: FILE0 and FILE1 must be members 0 and 1 of a version 3 set");
	if (path2 && (bch_cache_open(&m2, path2, true) || bch_cache_read_meta(&m2)))
		die(bch_strerror());
	if (path2 && le32toh(m2.sb.dev_idx) != 2)
		die("set: m2=FILE must be member 2 of the set");
	if ((removed[2] && !path2) || (fail1 && removed[1]) ||
	    (keep && !removed[1] && !removed[2]) || (node_dev && removed[1]))
		die("set: bad options");
	/* the set, for node IO on any member (bch_index_io()) */
	c.members[1] = &m1;
	bch_sb_geom(&m1.sb, &c.geom[1]);
	c.nr_members = 2;
	if (path2) {
		c.members[2] = &m2;
		bch_sb_geom(&m2.sb, &c.geom[2]);
		c.nr_members = 3;
	}
	o = path2 ? 2 : 1;
	om = c.members[o];
	d0 = data_first() * c.bucket_size;
	d1 = set_data_first(om);
	node_limit = data_first() + 1;
	next_node = bch_member(&c, node_dev)->nbuckets - 1;
	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		drop[i] = removed[i] && !keep;

	set_slot(0, FIXTURE_UUID);
	bch_index_setup(&c, &fx_ops);
	if (bch_btree_init(&c.b))
		die("btree init failed");
	p[0] = bch_ptr(0, 0, d0);
	p[1] = bch_ptr(o, 0, d1);
	set_key(8, true, p, set_ptrs(p, 2, drop));
	p[0] = bch_ptr(o, 0, d1 + om->bucket_size);
	set_key(16, dirty1, p, set_ptrs(p, 1, drop));
	p[0] = bch_ptr(o, 0, d1 + 8);
	p[1] = bch_ptr(0, 0, d0 + 8);
	set_key(24, true, p, set_ptrs(p, 2, drop));
	fx_flush();
	if (stale1)
		om->prio[d1 / om->bucket_size].gen++;
	if (stale0)
		c.prio[d0 / c.bucket_size].gen++;

	bch_btree_root(&c.b, &root, &level);
	bch_sb_set_root(&c.sb, &root);
	c.sb.btree_level = htole32(level);
	c.sb.flags = htole64(BCH_SB_CLEAN);
	write_meta();
	write_member_meta(&m1, dseq);
	if (path2)
		write_member_meta(&m2, 0);
	if (fail1 || removed[1] || removed[2]) {
		if (fail1)
			c.sb.members[1].state = htole32(BCH_MEMBER_FAILED);
		for (i = 1; i < BCH_MAX_MEMBERS; i++)
			if (removed[i])
				c.sb.members[i].state = htole32(BCH_MEMBER_REMOVED);
		write_meta();
		/* the members still active get the write; the lost ones not */
		for (i = 1; i < c.nr_members; i++)
			if (le32toh(c.sb.members[i].state) == BCH_MEMBER_ACTIVE)
				write_member_meta(c.members[i], 0);
	}
	printf("root %u:%llu level %u data %llu %llu\n", bch_ptr_dev(root.ptr[0]),
	       (unsigned long long)(bch_key_sector(&root) / c.bucket_size), level,
	       (unsigned long long)(d0 / c.bucket_size),
	       (unsigned long long)(d1 / om->bucket_size));
	if (path2)
		bch_cache_close(&m2);
	c.nr_members = 1;	/* m1 and m2 are not the set's to free */
	bch_cache_close(&m1);
	bch_cache_close(&c);
	return 0;
}

/* Raw edits that need no valid metadata. */
static int do_flip(const char *path, const char *offset)
{
	struct bch_dev dev;
	u64 off = strtoull(offset, NULL, 0);
	u8 b = 0;

	if (bch_dev_open(&dev, path, true) || bch_pread_all(&dev, &b, 1, off))
		die(bch_strerror());
	b ^= 0x5a;
	if (bch_pwrite_all(&dev, &b, 1, off) || bch_dev_sync(&dev))
		die(bch_strerror());
	bch_dev_close(&dev);
	return 0;
}

/* Point the root at another sector, as corruption would. */
static void fx_set_root_sector(u64 sector)
{
	struct bch_bkey root;

	if (!bch_sb_root(&c.sb, &root))
		die("the root is no key");
	fx_ptr(&root, sector, bch_key_gen(&root));
	bch_sb_set_root(&c.sb, &root);
}

static void do_sb(const char *what)
{
	if (what && !strcmp(what, "dirty"))
		c.sb.flags &= ~htole64(BCH_SB_CLEAN);
	else if (what && !strncmp(what, "rootptr=", 8))
		fx_set_root_sector(strtoull(what + 8, NULL, 0));
	else if (what && !strncmp(what, "jfirst=", 7))
		c.sb.journal_first = htole64(strtoull(what + 7, NULL, 0));
	else if (what && !strncmp(what, "jbuckets=", 9))
		c.sb.journal_buckets = htole32(strtoul(what + 9, NULL, 0));
	else if (what && !strncmp(what, "jseq=", 5))
		c.sb.journal_seq = htole64(strtoull(what + 5, NULL, 0));
	else if (what && !strncmp(what, "jpos=", 5))
		c.sb.journal_pos = htole64(strtoull(what + 5, NULL, 0));
	else if (what)
		die("unknown superblock edit");
	c.sb.csum = htole32(bch_sb_csum(&c.sb));
	if (bch_pwrite_all(&c.dev, &c.sb, sizeof(c.sb), BCH_SB_OFFSET) || bch_dev_sync(&c.dev))
		die(bch_strerror());
}

/* The journal, written the way the kernel appends to it. */

struct jwriter {
	u64	start, ring, pos, seq;	/* device sector of the ring; ring sectors */
};

static u64 parse_u64(const char *s, const char **end)
{
	char *e;
	u64 v = strtoull(s, &e, 0);

	if (e == s)
		die("bad number in a journal entry");
	*end = e;
	return v;
}

/* "START+LEN" into a key's end and size. */
static const char *parse_range(const char *s, struct bch_bkey *k)
{
	u64 start = parse_u64(s, &s);

	if (*s++ != '+')
		die("journal key: START+LEN expected");
	k->size = parse_u64(s, &s);
	k->end = start + k->size;
	return s;
}

static void jentry(struct jwriter *w, char *spec)
{
	u32 block = c.block_size, bucket = c.bucket_size, sectors = 0, nkeys = 0, i, n;
	static struct bch_bkey keys[BCH_JSET_MAX_SECTORS << BCH_SECTOR_SHIFT >> 5];
	u32 key_bytes = bch_sb_key_bytes(&c.sb);
	struct bch_jset_disk *e;
	bool torn = false, badseq = false, baduuid = false, stale = false, skip = false;
	bool dirty = false, csum = false, lost = false, data = false;
	u32 slot = 0, epoch = 1;
	u64 at = U64_MAX, b;
	const char *p;
	char *tok, *save = NULL;
	size_t bytes;

	for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct bch_bkey *k = &keys[nkeys];

		if (!strncmp(tok, "d:", 2) || !strncmp(tok, "h:", 2)) {
			if (nkeys == ARRAY_SIZE(keys))
				die("too many keys in one journal entry");
			memset(k, 0, sizeof(*k));
			k->inode = 1 << BCH_INODE_SLOT_BITS;	/* slot 0, epoch 1 */
			p = parse_range(tok + 2, k);
			if (tok[0] == 'h') {
				k->flags = BCH_KEY_HOLE;
			} else {
				if (*p++ != '@')
					die("journal key: d:START+LEN@BUCKET[+OFF] expected");
				b = parse_u64(p, &p) * bucket;
				if (*p == '+')
					b += parse_u64(p + 1, &p);
				fx_ptr(k, b, fx_gen(b));
			}
			if (*p)
				die("journal key: trailing characters");
			nkeys++;
		} else if (!strncmp(tok, "r:", 2)) {
			u64 start = parse_u64(tok + 2, &p), first;

			if (*p++ != '+')
				die("journal keys: r:START+N@BUCKET expected");
			n = parse_u64(p, &p);
			if (*p++ != '@')
				die("journal keys: r:START+N@BUCKET expected");
			first = parse_u64(p, &p) * bucket;
			if (*p || n > ARRAY_SIZE(keys) - nkeys)
				die("journal keys: bad r:");
			for (i = 0; i < n; i++, nkeys++) {
				k = &keys[nkeys];
				memset(k, 0, sizeof(*k));
				k->inode = 1 << BCH_INODE_SLOT_BITS;
				k->size = 8;
				k->end = start + 8 * i + 8;
				fx_ptr(k, first + 8 * i, fx_gen(first + 8 * i));
			}
		} else if (!strncmp(tok, "sectors=", 8)) {
			sectors = strtoul(tok + 8, NULL, 0);
		} else if (!strncmp(tok, "at=", 3)) {
			at = strtoull(tok + 3, NULL, 0);
		} else if (!strcmp(tok, "skip")) {
			skip = true;
		} else if (!strcmp(tok, "torn")) {
			torn = true;
		} else if (!strcmp(tok, "lost")) {
			lost = true;
		} else if (!strncmp(tok, "setseq=", 7)) {
			w->seq = parse_u64(tok + 7, &p);
			if (*p)
				die("journal entry: bad setseq=");
		} else if (!strcmp(tok, "badseq")) {
			badseq = true;
		} else if (!strcmp(tok, "baduuid")) {
			baduuid = true;
		} else if (!strcmp(tok, "stale")) {
			stale = true;
		} else if (!strcmp(tok, "dirty")) {
			dirty = true;
		} else if (!strcmp(tok, "csum")) {
			csum = true;
		} else if (!strcmp(tok, "data")) {
			data = true;
		} else if (!strncmp(tok, "slot=", 5)) {
			slot = strtoul(tok + 5, NULL, 0);
			if (slot >= BCH_UUID_SLOTS)
				die("journal entry: no such slot");
		} else if (!strncmp(tok, "epoch=", 6)) {
			epoch = strtoul(tok + 6, NULL, 0);
		} else if (*tok) {
			die("unknown journal entry option");
		}
	}
	if (!(le32toh(c.uuids[slot].flags) & BCH_UUID_VALID)) {
		char uuid[BCH_UUID_STR_LEN];

		snprintf(uuid, sizeof(uuid), FIXTURE_UUID_FMT, slot + 1);
		set_slot(slot, uuid);
		write_meta();
	}
	for (i = 0; i < nkeys; i++)
		keys[i].inode = epoch << BCH_INODE_SLOT_BITS | slot;
	bytes = bch_jset_bytes(nkeys, key_bytes);
	if (!sectors)
		sectors = bch_round_up(bytes, block << BCH_SECTOR_SHIFT) >> BCH_SECTOR_SHIFT;
	if (sectors > bucket || sectors > BCH_JSET_MAX_SECTORS)
		die("journal entry too big");
	if (at != U64_MAX)
		w->pos = at;
	else if (skip || w->pos % bucket + sectors > bucket)
		w->pos = w->pos - w->pos % bucket + bucket;
	if (w->pos >= w->ring)
		w->pos = 0;

	e = calloc(1, (size_t)sectors << BCH_SECTOR_SHIFT);
	if (!e)
		die("out of memory");
	e->magic = htole32(bch_jset_magic(le32toh(c.sb.version)));
	e->seq = htole64(w->seq + badseq);
	e->nkeys = htole32(nkeys);
	e->sectors = htole32(sectors);
	memcpy(e->set_uuid, c.sb.set_uuid, sizeof(e->set_uuid));
	if (baduuid)
		e->set_uuid[0] ^= 0xff;
	for (i = 0; i < nkeys; i++) {
		if (stale && keys[i].nptrs)
			fx_ptr(&keys[i], bch_key_sector(&keys[i]), bch_key_gen(&keys[i]) - 1);
		if (dirty && !(keys[i].flags & BCH_KEY_HOLE))
			keys[i].flags |= BCH_KEY_DIRTY;
		if (data && !(keys[i].flags & BCH_KEY_HOLE))
			fx_data(&keys[i]);
		if (csum && !(keys[i].flags & BCH_KEY_HOLE))
			keys[i].flags |= BCH_KEY_CSUM;
		bch_bkey_pack((u8 *)(e + 1) + (size_t)key_bytes * i, &keys[i], key_bytes);
	}
	e->csum = htole32(bch_jset_csum(e, key_bytes));
	if (torn)
		((u8 *)e)[bytes - 1] ^= 0x5a;
	if (lost)
		memset(e, 0, (size_t)sectors << BCH_SECTOR_SHIFT);
	if (bch_pwrite_all(&c.dev, e, (size_t)sectors << BCH_SECTOR_SHIFT,
			   (w->start + w->pos) << BCH_SECTOR_SHIFT))
		die(bch_strerror());
	printf("jset %llu %llu %u %u\n", (unsigned long long)(w->seq + badseq),
	       (unsigned long long)w->pos, sectors, nkeys);
	free(e);
	w->pos = (w->pos + sectors) % w->ring;
	w->seq++;
}

static void do_journal(int argc, char **argv)
{
	struct jwriter w = {
		.start = le64toh(c.sb.journal_first) * c.bucket_size,
		.ring = (u64)le32toh(c.sb.journal_buckets) * c.bucket_size,
		.pos = le64toh(c.sb.journal_pos),
		.seq = le64toh(c.sb.journal_seq),
	};
	int a = 0;

	if (!(le32toh(c.uuids[0].flags) & BCH_UUID_VALID)) {
		set_slot(0, FIXTURE_UUID);
		write_meta();
	}
	for (; a < argc; a++) {
		if (!strncmp(argv[a], "start=", 6)) {
			w.pos = strtoull(argv[a] + 6, NULL, 0);
			c.sb.journal_pos = htole64(w.pos);
		} else if (!strncmp(argv[a], "seq=", 4)) {
			w.seq = strtoull(argv[a] + 4, NULL, 0);
			c.sb.journal_seq = htole64(w.seq);
		} else {
			break;
		}
	}
	do_sb(NULL);
	for (; a < argc; a++)
		jentry(&w, argv[a]);
	if (bch_dev_sync(&c.dev))
		die(bch_strerror());
}

/* bcache-check --upgrade's writes, maybe stopped before the superblock. */
static void do_upgrade(int argc, char **argv)
{
	bool stop = argc > 0 && !strcmp(argv[0], "stop");
	struct bch_upgrade u;
	u64 i;

	if (argc > 1 || (argc && !stop))
		die("upgrade: FILE [stop]");
	if (bch_upgrade_build(&u, &c))
		die(bch_strerror());
	if (!bch_upgrade_fits(&u))
		die("upgrade: not enough free buckets");
	if (bch_upgrade_write(&u))
		die(bch_strerror());
	printf("upgrade nodes %llu buckets", (unsigned long long)u.nodes);
	for (i = 0; i < c.nbuckets; i++)
		if (bch_upgrade_node(&u, i))
			printf(" %llu", (unsigned long long)i);
	printf("\ncopy %u\n", u.prio_copy);
	if (!stop && bch_upgrade_commit(&u))
		die(bch_strerror());
	bch_upgrade_free(&u);
}

/* What the kernel records of an origin at attach: bch_slot_attach(). */
static void do_origin(int argc, char **argv)
{
	unsigned long slot = 0;
	bool fpwriting = false;
	struct bch_uuid_disk *u;
	struct bch_dev origin;
	u8 buf[BCH_SB_SIZE];
	int a;

	for (a = 1; a < argc; a++) {
		if (!strncmp(argv[a], "slot=", 5))
			slot = strtoul(argv[a] + 5, NULL, 0);
		else if (!strcmp(argv[a], "fpwriting"))
			fpwriting = true;
		else
			die("unknown origin option");
	}
	if (argc < 1 || slot >= BCH_UUID_SLOTS)
		die("origin: FILE ORIGIN [slot=S] [fpwriting]");
	u = &c.uuids[slot];
	if (!(le32toh(u->flags) & BCH_UUID_VALID))
		die("origin: the slot is not in use");
	if (bch_dev_open(&origin, argv[0], false) ||
	    bch_pread_all(&origin, buf, sizeof(buf), 0))
		die(bch_strerror());
	u->sectors = htole64(origin.size >> BCH_SECTOR_SHIFT);
	u->fingerprint = htole32(bch_csum(buf, sizeof(buf)));
	u->flags |= htole32(BCH_UUID_FINGERPRINT);
	if (fpwriting)
		u->flags |= htole32(BCH_UUID_FP_WRITING);
	bch_dev_close(&origin);
	write_meta();
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 3)
		die("usage: fixture slots FILE UUID... | index FILE [OPT...] | journal FILE [ENTRY...] | flip FILE OFFSET | sb FILE EDIT... | bucket FILE B FLAGS | uuidcsum FILE | origin FILE ORIGIN [OPT...] | set FILE0 FILE1 [OPT...] | upgrade FILE [stop]");
	if (!strcmp(argv[1], "flip") && argc == 4)
		return do_flip(argv[2], argv[3]);
	if (!strcmp(argv[1], "set") && argc >= 4)
		return do_set(argc - 2, argv + 2);
	if (bch_cache_open(&c, argv[2], true) || bch_cache_read_meta(&c))
		die(bch_strerror());
	if (!strcmp(argv[1], "slots")) {
		for (i = 3; i < argc && i - 3 < BCH_UUID_SLOTS; i++)
			set_slot(i - 3, argv[i]);
		write_meta();
	} else if (!strcmp(argv[1], "sb") && argc >= 4) {
		for (i = 3; i < argc; i++)
			do_sb(argv[i]);
	} else if (!strcmp(argv[1], "bucket") && argc == 5) {
		u64 b = strtoull(argv[3], NULL, 0);

		if (b >= bch_prio_bytes(&c) / sizeof(*c.prio))
			die("no such bucket array entry");
		c.prio[b].flags = strtoul(argv[4], NULL, 0);
		write_meta();
	} else if (!strcmp(argv[1], "attach")) {
		c.uuids[0].flags |= htole32(BCH_UUID_ATTACHED);
		write_meta();
	} else if (!strcmp(argv[1], "journal")) {
		do_journal(argc - 3, argv + 3);
	} else if (!strcmp(argv[1], "uuidcsum")) {
		c.sb.uuid_csum = htole32(le32toh(c.sb.uuid_csum) ^ 1);
		if (argc > 3 && !strcmp(argv[3], "both"))
			c.sb.uuid_csum_other = htole32(le32toh(c.sb.uuid_csum_other) ^ 1);
		do_sb(NULL);
	} else if (!strcmp(argv[1], "origin")) {
		do_origin(argc - 3, argv + 3);
	} else if (!strcmp(argv[1], "index")) {
		do_index(argc - 3, argv + 3);
	} else if (!strcmp(argv[1], "upgrade")) {
		do_upgrade(argc - 3, argv + 3);
	} else {
		die("unknown command");
	}
	bch_cache_close(&c);
	return 0;
}
