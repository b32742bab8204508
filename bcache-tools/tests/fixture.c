// SPDX-License-Identifier: GPL-2.0
/*
 * Test fixtures for bcache-check and bcache-dump: writes, on a file that
 * make-bcache formatted, the metadata a kernel would leave at a clean
 * shutdown, built with the kernel's own index code, plus chosen damage.
 *
 *   fixture slots FILE UUID...    the current UUID table gets these
 *                                 persistent slots (0, 1, ...), epoch 1
 *   fixture flip FILE OFFSET      xor the byte at OFFSET with 0x5a
 *   fixture sb FILE dirty|rootptr=SECTOR   edit the superblock (new csum)
 *   fixture uuidcsum FILE [both]  break the current UUID table's checksum
 *                                 (both: the other copy's too)
 *   fixture index FILE [OPT...]   an index for slot 0 (origin_uuid
 *                                 FIXTURE_UUID), and the bucket array
 *                                 and UUID table that go with it
 *     keys=N     N extents of 8 sectors (default 64), data buckets from
 *                the first one up, index nodes from the last one down
 *     flushes=N  write the index N times (appended sets), keys spread out
 *     stale=N    bump the gen of the first N data buckets (dead keys)
 *     alias      a live key pointing into the root node's bucket
 *     outside    a key pointing into the metadata bucket
 *     cross      a live key crossing the end of its bucket
 *     future     a key newer than its slot's epoch
 *
 * Prints "root BUCKET level L nodes N" on success. The metadata copies are
 * rewritten in place (the current ones): this is a fixture, not a kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define FIXTURE_UUID	"f1f1f1f1-0000-4000-8000-000000000001"

static struct bch_cache c;
static u64 next_node;		/* allocated downwards */
static u64 node_limit;		/* first bucket holding data */

static int die(const char *msg)
{
	fprintf(stderr, "fixture: %s\n", msg);
	exit(1);
}

static int fx_alloc(struct bch_btree *b, u64 *bucket, u8 *gen)
{
	(void)b;
	if (next_node <= node_limit)
		return -ENOSPC;
	*bucket = next_node--;
	*gen = c.prio[*bucket].gen;
	c.prio[*bucket].prio = htole16(U16_MAX);
	return 0;
}

static void fx_free(struct bch_btree *b, u64 bucket)
{
	(void)b;
	c.prio[bucket].gen++;		/* as bch_bucket_invalidate() */
	c.prio[bucket].prio = 0;
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
	unsigned long keys = 64, flushes = 1, stale = 0, i, f;
	bool alias = false, outside = false, cross = false, future = false;
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
		else if (!strcmp(argv[a], "alias"))
			alias = true;
		else if (!strcmp(argv[a], "outside"))
			outside = true;
		else if (!strcmp(argv[a], "cross"))
			cross = true;
		else if (!strcmp(argv[a], "future"))
			future = true;
		else
			die("unknown option");
	}
	if (!flushes || !per_bucket)
		die("bad options");
	data_buckets = (keys + per_bucket - 1) / per_bucket + 1;
	node_limit = c.first_bucket + data_buckets;
	next_node = c.nbuckets - 1;
	if (node_limit >= next_node)
		die("device too small for that many keys");

	set_slot(0, FIXTURE_UUID);
	bch_index_setup(&c, &fx_ops);
	if (bch_btree_init(&c.b))
		die("btree init failed");

	/* Keys i*8 .. i*8+8 of slot 0 at data sector (first bucket) + i*8. */
	for (f = 0; f < flushes; f++) {
		for (i = f; i < keys; i += flushes) {
			k.inode = inode;
			k.size = 8;
			k.end = i * 8 + 8;
			k.ptr = c.first_bucket * c.bucket_size + i * 8;
			k.gen = c.prio[k.ptr / c.bucket_size].gen;
			fx_insert(&k);
		}
		fx_flush();
	}
	k.size = 8;
	k.inode = inode;
	if (outside) {
		k.end = keys * 8 + 1000;
		k.ptr = 8;
		k.gen = c.prio[0].gen;
		fx_insert(&k);
	}
	if (cross) {
		k.end = keys * 8 + 2000;
		k.ptr = (node_limit - 1) * c.bucket_size + c.bucket_size - 4;
		k.gen = c.prio[node_limit - 1].gen;
		fx_insert(&k);
	}
	if (future) {
		k.inode = 2 << BCH_INODE_SLOT_BITS;
		k.end = keys * 8 + 3000;
		k.ptr = (node_limit - 1) * c.bucket_size;
		k.gen = c.prio[node_limit - 1].gen;
		fx_insert(&k);
		k.inode = inode;
	}
	if (outside || cross || future)
		fx_flush();
	if (alias) {
		bch_btree_root(&c.b, &root, &level);
		k.end = keys * 8 + 4000;
		k.ptr = root.ptr;
		k.gen = root.gen;
		fx_insert(&k);
		fx_flush();
		bch_btree_root(&c.b, &root, &level);
		if (k.ptr != root.ptr)
			die("alias: the root moved");
	}
	for (i = 0; i < stale; i++)
		c.prio[c.first_bucket + i].gen++;

	bch_btree_root(&c.b, &root, &level);
	bch_bkey_pack(&c.sb.btree_root, &root);
	c.sb.btree_level = htole32(level);
	c.sb.flags = htole64(BCH_SB_CLEAN);
	write_meta();
	printf("root %llu level %u nodes %llu\n", (unsigned long long)(root.ptr / c.bucket_size),
	       level, (unsigned long long)bch_btree_nodes(&c.b));
	return 0;
}

/* Raw edits that need no valid metadata. */
static int do_flip(const char *path, const char *offset)
{
	struct bch_dev dev;
	u64 off = strtoull(offset, NULL, 0);
	u8 b;

	if (bch_dev_open(&dev, path, true) || bch_pread_all(&dev, &b, 1, off))
		die(bch_strerror());
	b ^= 0x5a;
	if (bch_pwrite_all(&dev, &b, 1, off) || bch_dev_sync(&dev))
		die(bch_strerror());
	bch_dev_close(&dev);
	return 0;
}

static void do_sb(const char *what)
{
	if (what && !strcmp(what, "dirty"))
		c.sb.flags &= ~htole64(BCH_SB_CLEAN);
	else if (what && !strncmp(what, "rootptr=", 8))
		c.sb.btree_root.ptr = htole64(strtoull(what + 8, NULL, 0));
	else if (what)
		die("unknown superblock edit");
	c.sb.csum = htole32(bch_sb_csum(&c.sb));
	if (bch_pwrite_all(&c.dev, &c.sb, sizeof(c.sb), BCH_SB_OFFSET) || bch_dev_sync(&c.dev))
		die(bch_strerror());
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 3)
		die("usage: fixture slots FILE UUID... | index FILE [OPT...] | flip FILE OFFSET | sb FILE EDIT | uuidcsum FILE");
	if (!strcmp(argv[1], "flip") && argc == 4)
		return do_flip(argv[2], argv[3]);
	if (bch_cache_open(&c, argv[2], true) || bch_cache_read_meta(&c))
		die(bch_strerror());
	if (!strcmp(argv[1], "slots")) {
		for (i = 3; i < argc && i - 3 < BCH_UUID_SLOTS; i++)
			set_slot(i - 3, argv[i]);
		write_meta();
	} else if (!strcmp(argv[1], "sb") && argc == 4) {
		do_sb(argv[3]);
	} else if (!strcmp(argv[1], "uuidcsum")) {
		c.sb.uuid_csum = htole32(le32toh(c.sb.uuid_csum) ^ 1);
		if (argc > 3 && !strcmp(argv[3], "both"))
			c.sb.uuid_csum_other = htole32(le32toh(c.sb.uuid_csum_other) ^ 1);
		do_sb(NULL);
	} else if (!strcmp(argv[1], "index")) {
		do_index(argc - 3, argv + 3);
	} else {
		die("unknown command");
	}
	bch_cache_close(&c);
	return 0;
}
