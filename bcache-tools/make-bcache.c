// SPDX-License-Identifier: GPL-2.0
/*
 * make-bcache: format a dm-bcache cache device, or several as the members
 * of one cache set (format version 3).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib.h"

#define PROG "make-bcache"

struct opts {
	uint64_t	block;		/* bytes */
	uint64_t	bucket;		/* bytes */
	const char	*label;
	uint32_t	journal;	/* buckets; 0 = the default */
	uint8_t		set_uuid[16];
	bool		have_set_uuid;
	uint32_t	version;	/* of the format */
	bool		wipe;
	bool		quiet;
	const char	*add_to;	/* --add: a member of the set to join */
	const char	*paths[BCH_MAX_MEMBERS];
	unsigned int	ndevs;
};

/* One device being formatted: member idx of the set. */
struct member {
	struct bch_dev		dev;
	struct stat		st;		/* of the opened file */
	uint64_t		sectors, nbuckets;
	bool			has_sb;		/* an old superblock to wipe */
	struct bch_sb_disk	sb;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] <device> [<device>...]\n"
		"Format <device> as a dm-bcache cache device; several devices\n"
		"(at most %u) as the members of one cache set.\n\n"
		"  -b, --bucket SIZE     bucket size (default 512k)\n"
		"  -w, --block SIZE      block size (default 4k)\n"
		"  -j, --journal-buckets N\n"
		"                        journal size in buckets, %u to %u\n"
		"                        (default 1/128 of the buckets, at least 4)\n"
		"  -l, --label TEXT      label, at most 31 characters\n"
		"      --cset-uuid UUID  cache set UUID (default random)\n"
		"      --format-version N\n"
		"                        on-disk format %u (the default) or %u (for\n"
		"                        kernels that know no other)\n"
		"      --wipe            overwrite an existing dm-bcache superblock\n"
		"      --add MEMBER      format <device> as a new member of the cache\n"
		"                        set MEMBER belongs to (version 3; its sizes);\n"
		"                        it joins the set when a table names it\n"
		"  -q, --quiet           print nothing on success\n"
		"  -h, --help            show this help\n\n"
		"SIZE is in bytes, or with a binary suffix: 4k, 512k, 1M, 1G.\n",
		BCH_MAX_MEMBERS, BCH_MIN_JOURNAL_BUCKETS, BCH_MAX_JOURNAL_BUCKETS,
		BCH_SB_VERSION, BCH_SB_VERSION_MIN);
}

static int fail(const char *msg)
{
	fprintf(stderr, PROG ": %s\n", msg);
	return 1;
}

/* A decimal journal size within the limits. */
static int parse_journal(const char *str, uint32_t *n)
{
	unsigned long v;
	char *end;
	char msg[256];

	errno = 0;
	v = strtoul(str, &end, 10);
	if (!isdigit((unsigned char)str[0]) || *end || errno) {
		snprintf(msg, sizeof(msg), "invalid journal size '%s': a number of buckets", str);
		return fail(msg);
	}
	if (v < BCH_MIN_JOURNAL_BUCKETS || v > BCH_MAX_JOURNAL_BUCKETS) {
		snprintf(msg, sizeof(msg),
			 "journal of %s buckets: it must be %u to %u buckets",
			 str, BCH_MIN_JOURNAL_BUCKETS, BCH_MAX_JOURNAL_BUCKETS);
		return fail(msg);
	}
	*n = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "bucket",	required_argument, NULL, 'b' },
		{ "block",	required_argument, NULL, 'w' },
		{ "label",	required_argument, NULL, 'l' },
		{ "journal-buckets", required_argument, NULL, 'j' },
		{ "cset-uuid",	required_argument, NULL, 'U' },
		{ "format-version", required_argument, NULL, 'V' },
		{ "wipe",	no_argument,	   NULL, 'W' },
		{ "add",	required_argument, NULL, 'A' },
		{ "quiet",	no_argument,	   NULL, 'q' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	o->block = BCH_MIN_BLOCK_SECTORS << BCH_SECTOR_SHIFT;
	o->bucket = BCH_DEFAULT_BUCKET_SECTORS << BCH_SECTOR_SHIFT;
	o->label = "";
	o->version = BCH_SB_VERSION;

	while ((c = getopt_long(argc, argv, "b:w:j:l:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (bch_parse_size(optarg, &o->bucket))
				return fail(bch_strerror());
			break;
		case 'w':
			if (bch_parse_size(optarg, &o->block))
				return fail(bch_strerror());
			break;
		case 'j':
			if (parse_journal(optarg, &o->journal))
				return 1;
			break;
		case 'l':
			o->label = optarg;
			break;
		case 'U':
			if (bch_uuid_parse(optarg, o->set_uuid))
				return fail(bch_strerror());
			if (bch_uuid_is_nil(o->set_uuid))
				return fail("the cache set UUID must not be nil");
			o->have_set_uuid = true;
			break;
		case 'V':
			if (strcmp(optarg, "2") && strcmp(optarg, "3"))
				return fail("the format version must be 2 or 3");
			o->version = (uint32_t)atoi(optarg);
			break;
		case 'W':
			o->wipe = true;
			break;
		case 'A':
			o->add_to = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, PROG ": no device given\n");
		usage(stderr);
		return 2;
	}
	if (argc - optind > BCH_MAX_MEMBERS) {
		fprintf(stderr, PROG ": %d devices given: a set has at most %u members\n",
			argc - optind, BCH_MAX_MEMBERS);
		return 1;
	}
	if (argc - optind > 1 && o->version == 2)
		return fail("a set of several devices needs format version 3");
	if (o->add_to && argc - optind > 1)
		return fail("--add adds one device at a time");
	while (optind < argc)
		o->paths[o->ndevs++] = argv[optind++];
	return 0;
}

static int check_sizes(const struct opts *o)
{
	uint64_t min = BCH_MIN_BLOCK_SECTORS << BCH_SECTOR_SHIFT;
	uint64_t max = BCH_MAX_BLOCK_SECTORS << BCH_SECTOR_SHIFT;
	uint64_t max_bucket = (uint64_t)BCH_MAX_BUCKET_SECTORS << BCH_SECTOR_SHIFT;
	char msg[256];

	if (!bch_is_power_of_2(o->block))
		snprintf(msg, sizeof(msg),
			 "block size %llu is not a power of two",
			 (unsigned long long)o->block);
	else if (o->block < min || o->block > max)
		snprintf(msg, sizeof(msg),
			 "block size %llu must be between %llu and %llu bytes",
			 (unsigned long long)o->block,
			 (unsigned long long)min, (unsigned long long)max);
	else if (!bch_is_power_of_2(o->bucket))
		snprintf(msg, sizeof(msg),
			 "bucket size %llu is not a power of two",
			 (unsigned long long)o->bucket);
	else if (o->bucket < o->block)
		snprintf(msg, sizeof(msg),
			 "bucket size %llu must be a multiple of the block size %llu",
			 (unsigned long long)o->bucket,
			 (unsigned long long)o->block);
	else if (o->bucket > max_bucket)
		snprintf(msg, sizeof(msg),
			 "bucket size %llu exceeds the maximum of %llu bytes",
			 (unsigned long long)o->bucket,
			 (unsigned long long)max_bucket);
	else if (strlen(o->label) >= sizeof(((struct bch_sb_disk *)0)->label))
		snprintf(msg, sizeof(msg),
			 "label is %zu characters, at most 31 allowed",
			 strlen(o->label));
	else
		return 0;
	return fail(msg);
}

static uint32_t journal_buckets(const struct opts *o, uint64_t nbuckets)
{
	return o->journal ? o->journal : bch_journal_default_buckets(nbuckets);
}

/* The metadata, the journal and enough data buckets. */
static bool layout_fits(const struct opts *o, uint64_t nbuckets, uint32_t bucket_size)
{
	uint64_t first = bch_first_bucket(nbuckets, bucket_size);

	return nbuckets >= first + journal_buckets(o, nbuckets) + BCH_MIN_DATA_BUCKETS;
}

/* Smallest device, in bytes, that leaves enough data buckets. */
static uint64_t min_device_bytes(const struct opts *o, uint32_t bucket_size)
{
	uint64_t n = BCH_MIN_DATA_BUCKETS;

	while (!layout_fits(o, n, bucket_size))
		n++;
	return (n * bucket_size) << BCH_SECTOR_SHIFT;
}

static void build_sb(struct bch_sb_disk *sb, const struct opts *o,
		     uint64_t dev_sectors, uint64_t nbuckets, time_t now)
{
	uint32_t bucket_size = o->bucket >> BCH_SECTOR_SHIFT;
	uint64_t prio = bch_prio_sectors(nbuckets);
	uint64_t uuid = bch_uuid_sectors();

	memset(sb, 0, sizeof(*sb));
	sb->version = htole32(o->version);
	memcpy(sb->magic, BCH_SB_MAGIC, BCH_MAGIC_LEN);
	memcpy(sb->set_uuid, o->set_uuid, 16);
	memcpy(sb->label, o->label, strlen(o->label));
	sb->flags = htole64(BCH_SB_CLEAN);
	sb->seq = htole64(1);
	sb->created = htole64(now);
	sb->block_size = htole32(o->block >> BCH_SECTOR_SHIFT);
	sb->bucket_size = htole32(bucket_size);
	sb->nbuckets = htole64(nbuckets);
	sb->first_bucket = htole64(bch_first_bucket(nbuckets, bucket_size));
	sb->device_sectors = htole64(dev_sectors);
	sb->prio_offset[0] = htole64(BCH_META_START);
	sb->prio_offset[1] = htole64(BCH_META_START + prio);
	sb->prio_sectors = htole32(prio);
	sb->uuid_sectors = htole32(uuid);
	sb->uuid_offset[0] = htole64(BCH_META_START + 2 * prio);
	sb->uuid_offset[1] = htole64(BCH_META_START + 2 * prio + uuid);
	/* An empty journal right after the metadata. */
	sb->journal_first = sb->first_bucket;
	sb->journal_buckets = htole32(journal_buckets(o, nbuckets));
	sb->journal_seq = htole64(1);
	sb->journal_pos = 0;
}

/*
 * Version 3: the member table, alike in every member's superblock but for
 * dev_idx: member i is the i-th device named, each ACTIVE with its own
 * uuid and geometry. A single device is a set of one.
 */
static void build_members(struct member *m, unsigned int n)
{
	struct bch_sb_disk *sb;
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		sb = &m[i].sb;
		if (le32toh(sb->version) == 2)
			return;
		sb->dev_idx = htole32(i);
		for (j = 0; j < n; j++) {
			memcpy(sb->members[j].uuid, m[j].sb.uuid, 16);
			sb->members[j].nbuckets = m[j].sb.nbuckets;
			sb->members[j].bucket_size = m[j].sb.bucket_size;
			sb->members[j].state = htole32(BCH_MEMBER_ACTIVE);
		}
	}
}

/*
 * Both bucket array copies: gen 0, prio 0, metadata and journal buckets
 * flagged. Written in chunks since a big device has a big array.
 */
static int write_prios(struct bch_dev *dev, const struct bch_sb_disk *sb,
		       uint32_t *csum)
{
	static struct bch_bucket_disk buf[(1 << 20) / sizeof(struct bch_bucket_disk)];
	const uint64_t per_chunk = ARRAY_SIZE(buf);
	uint64_t first = le64toh(sb->first_bucket);
	uint64_t bytes = (uint64_t)le32toh(sb->prio_sectors) << BCH_SECTOR_SHIFT;
	uint64_t total = bytes / sizeof(buf[0]);
	uint64_t i, j, n, off;
	uint32_t crc = ~0U;
	unsigned int copy;

	for (i = 0; i < total; i += n) {
		n = total - i < per_chunk ? total - i : per_chunk;
		memset(buf, 0, n * sizeof(buf[0]));
		for (j = i; j < i + n && j < le64toh(sb->nbuckets); j++) {
			if (j < first)
				buf[j - i].flags = BCH_BUCKET_META;
			else if (bch_journal_bucket(sb, j))
				buf[j - i].flags = BCH_BUCKET_JOURNAL;
		}
		for (copy = 0; copy < 2; copy++) {
			off = (le64toh(sb->prio_offset[copy]) << BCH_SECTOR_SHIFT) +
				i * sizeof(buf[0]);
			if (bch_pwrite_all(dev, buf, n * sizeof(buf[0]), off))
				return -1;
		}
		crc = crc32c(crc, buf, n * sizeof(buf[0]));
	}
	*csum = ~crc;
	return 0;
}

static int write_uuids(struct bch_dev *dev, const struct bch_sb_disk *sb,
		       uint32_t *csum)
{
	static uint8_t zero[BCH_UUID_TABLE_BYTES];
	unsigned int copy;

	for (copy = 0; copy < 2; copy++)
		if (bch_pwrite_all(dev, zero, sizeof(zero),
				   le64toh(sb->uuid_offset[copy]) << BCH_SECTOR_SHIFT))
			return -1;
	*csum = bch_csum(zero, sizeof(zero));
	return 0;
}

/*
 * The whole ring is zeroed: replay must find nothing at journal_pos nor
 * at the start of any bucket, and no entry an earlier format of the same
 * cache set left behind may ever be taken for a new one.
 */
static int write_journal(struct bch_dev *dev, const struct bch_sb_disk *sb)
{
	static uint8_t zero[1 << 20];
	uint64_t off = le64toh(sb->journal_first) * le32toh(sb->bucket_size) << BCH_SECTOR_SHIFT;
	uint64_t left = ((uint64_t)le32toh(sb->journal_buckets) *
			 le32toh(sb->bucket_size)) << BCH_SECTOR_SHIFT;
	size_t n;

	while (left) {
		n = left < sizeof(zero) ? left : sizeof(zero);
		if (bch_pwrite_all(dev, zero, n, off))
			return -1;
		off += n;
		left -= n;
	}
	return 0;
}

/* Refuse to clobber an existing cache unless asked; note it for wipe_old_sb(). */
static int check_old_sb(struct member *m, const struct opts *o)
{
	struct bch_sb_disk old;
	char uuid[BCH_UUID_STR_LEN];

	if (bch_sb_read(&m->dev, &old))
		return fail(bch_strerror());
	m->has_sb = bch_sb_has_magic(&old);
	if (m->has_sb && !o->wipe) {
		bch_uuid_format(old.set_uuid, uuid);
		fprintf(stderr, PROG ": %s already holds a dm-bcache superblock (cache set %s); use --wipe to overwrite it\n",
			m->dev.path, uuid);
		return 1;
	}
	return 0;
}

/*
 * Sectors 0..7 go too: they may hold stale data from the old cache's
 * life. Flushed before anything else so a format that dies halfway
 * leaves no superblock pointing at half-written metadata.
 */
static int wipe_old_sb(struct member *m)
{
	static uint8_t zero[BCH_SB_OFFSET + BCH_SB_SIZE];

	if (!m->has_sb)
		return 0;
	if (bch_pwrite_all(&m->dev, zero, sizeof(zero), 0) ||
	    bch_dev_sync(&m->dev))
		return fail(bch_strerror());
	return 0;
}

/* One device's summary; @n members: which one this is if several. */
static void summary(const struct bch_sb_disk *sb, const char *path,
		    unsigned int n)
{
	uint64_t data = le64toh(sb->nbuckets) - le64toh(sb->first_bucket) -
			le32toh(sb->journal_buckets);
	uint64_t bucket = (uint64_t)le32toh(sb->bucket_size) << BCH_SECTOR_SHIFT;
	char u[BCH_UUID_STR_LEN], s[BCH_UUID_STR_LEN], size[BCH_SIZE_STR_LEN];

	bch_uuid_format(sb->uuid, u);
	bch_uuid_format(sb->set_uuid, s);
	bch_format_size(data * bucket, size);
	printf("%s: dm-bcache cache device\n"
	       "  uuid          %s\n"
	       "  set uuid      %s\n", path, u, s);
	if (n > 1)
		printf("  member        %u of %u\n", le32toh(sb->dev_idx), n);
	printf("  label         %s\n"
	       "  block size    %u bytes\n"
	       "  bucket size   %llu bytes\n"
	       "  nbuckets      %llu\n"
	       "  first bucket  %llu\n"
	       "  journal       %u buckets from bucket %llu\n"
	       "  data capacity %llu buckets, %llu bytes (%s)\n",
	       (const char *)sb->label,
	       le32toh(sb->block_size) << BCH_SECTOR_SHIFT,
	       (unsigned long long)bucket,
	       (unsigned long long)le64toh(sb->nbuckets),
	       (unsigned long long)le64toh(sb->first_bucket),
	       le32toh(sb->journal_buckets),
	       (unsigned long long)le64toh(sb->journal_first),
	       (unsigned long long)data,
	       (unsigned long long)(data * bucket), size);
}

/* The same file or block device as one opened before it? */
static bool same_dev(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode))
		return a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int check_twice(const struct member *m, unsigned int i,
		       const struct stat *st)
{
	unsigned int j;

	for (j = 0; j < i; j++) {
		if (!same_dev(&m[j].st, st))
			continue;
		fprintf(stderr, PROG ": %s and %s are the same device: a device can be a member only once\n",
			m[j].dev.path, m[i].dev.path);
		return 1;
	}
	return 0;
}

/*
 * Open member @i, not the same device as one before it. The path is
 * looked at before the open too: a block device opened exclusively
 * cannot be opened again to be compared.
 */
static int open_member(struct member *m, unsigned int i, const char *path)
{
	struct member *d = &m[i];
	struct stat st;

	d->dev.fd = -1;
	d->dev.path = path;
	if (!stat(path, &st) && check_twice(m, i, &st))
		return 1;
	if (bch_dev_open(&d->dev, path, true))
		return fail(bch_strerror());
	if (fstat(d->dev.fd, &d->st)) {
		fprintf(stderr, PROG ": cannot stat %s: %s\n", path, strerror(errno));
		return 1;
	}
	return check_twice(m, i, &d->st);
}

/* Can @d take the format asked for? Nothing is written. */
static int check_member(struct member *d, const struct opts *o)
{
	const char *path = d->dev.path;
	uint32_t bucket_size = o->bucket >> BCH_SECTOR_SHIFT;
	char need[BCH_SIZE_STR_LEN];

	if (d->dev.lbs > o->block) {
		fprintf(stderr, PROG ": block size %llu is smaller than the logical block size %u of %s\n",
			(unsigned long long)o->block, d->dev.lbs, path);
		return 1;
	}

	d->sectors = d->dev.size >> BCH_SECTOR_SHIFT;
	d->nbuckets = d->sectors / bucket_size;
	if (d->nbuckets > BCH_MAX_BUCKETS) {
		fprintf(stderr, PROG ": %s has %llu buckets, more than the maximum %llu; use a larger --bucket\n",
			path, (unsigned long long)d->nbuckets,
			(unsigned long long)BCH_MAX_BUCKETS);
		return 1;
	}
	if (!layout_fits(o, d->nbuckets, bucket_size)) {
		bch_format_size(min_device_bytes(o, bucket_size), need);
		fprintf(stderr, PROG ": %s is too small (%llu bytes): with %llu byte buckets and %s journal it must be at least %llu bytes (%s)\n",
			path, (unsigned long long)d->dev.size,
			(unsigned long long)o->bucket,
			o->journal ? "this" : "the default",
			(unsigned long long)min_device_bytes(o, bucket_size), need);
		return 1;
	}
	return check_old_sb(d, o);
}

/* Everything but the superblock, which must not reach the disk before it. */
static int write_meta(struct member *m)
{
	uint32_t csum;

	if (write_prios(&m->dev, &m->sb, &csum) ||
	    write_journal(&m->dev, &m->sb))
		return -1;
	/* Both copies are written alike: either can be fallen back to. */
	m->sb.prio_csum = htole32(csum);
	m->sb.prio_csum_other = m->sb.prio_csum;
	if (write_uuids(&m->dev, &m->sb, &csum))
		return -1;
	m->sb.uuid_csum = htole32(csum);
	m->sb.uuid_csum_other = m->sb.uuid_csum;
	return bch_dev_sync(&m->dev);
}

static int write_sb(struct member *m)
{
	m->sb.csum = htole32(bch_sb_csum(&m->sb));
	if (bch_pwrite_all(&m->dev, &m->sb, sizeof(m->sb), BCH_SB_OFFSET) ||
	    bch_dev_sync(&m->dev))
		return -1;
	return 0;
}

/*
 * --add: the set's member @path names, read and checked; its sizes and
 * set uuid become the options, and *@idx the index the new member takes:
 * the first that no key can point to (NONE, or REMOVED after a GC pass
 * found none).
 */
static int read_set(const char *path, struct opts *o, struct bch_sb_disk *set,
		    unsigned int *idx)
{
	struct bch_dev dev = { .fd = -1, .path = path };
	unsigned int i;
	int r;

	if (bch_dev_open(&dev, path, false))
		return fail(bch_strerror());
	r = bch_sb_load(&dev, set);
	bch_dev_close(&dev);
	if (r)
		return fail(bch_strerror());
	if (le32toh(set->version) < 3)
		return fail("--add needs a cache of format version 3");
	o->version = le32toh(set->version);
	o->block = (uint64_t)le32toh(set->block_size) << BCH_SECTOR_SHIFT;
	o->bucket = (uint64_t)le32toh(set->bucket_size) << BCH_SECTOR_SHIFT;
	memcpy(o->set_uuid, set->set_uuid, 16);
	o->have_set_uuid = true;
	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		uint32_t state = le32toh(set->members[i].state);

		if (state == BCH_MEMBER_NONE || state == BCH_MEMBER_REMOVED) {
			*idx = i;
			return 0;
		}
	}
	fprintf(stderr, PROG ": the cache set of %s has %u members already\n",
		path, BCH_MAX_MEMBERS);
	return 1;
}

/*
 * The members of the set @sb's table names once the new member joins, as
 * the kernel counts them: its highest index in use + 1 (a REMOVED member
 * keeps its index).
 */
static unsigned int set_members(const struct bch_sb_disk *sb)
{
	unsigned int i, n = 0;

	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		if (le32toh(sb->members[i].state) != BCH_MEMBER_NONE)
			n = i + 1;
	return n;
}

/*
 * The new member's superblock: the set's member table with itself ACTIVE
 * at @idx, and seq 0, which says to the kernel that it joins (it was
 * never written by an open set).
 */
static void build_joining(struct member *m, const struct bch_sb_disk *set,
			  unsigned int idx)
{
	struct bch_sb_disk *sb = &m->sb;

	memcpy(sb->members, set->members, sizeof(sb->members));
	sb->dev_idx = htole32(idx);
	memcpy(sb->members[idx].uuid, sb->uuid, 16);
	sb->members[idx].nbuckets = sb->nbuckets;
	sb->members[idx].bucket_size = sb->bucket_size;
	sb->members[idx].state = htole32(BCH_MEMBER_ACTIVE);
	sb->seq = 0;
}

int main(int argc, char **argv)
{
	static struct member m[BCH_MAX_MEMBERS];
	struct bch_sb_disk set;
	struct opts o = { 0 };
	time_t now = time(NULL);
	unsigned int i, n, idx = 0;
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	if (o.add_to) {
		ret = read_set(o.add_to, &o, &set, &idx);
		if (ret)
			return ret;
	}
	ret = check_sizes(&o);
	if (ret)
		return ret;
	if (!o.have_set_uuid && bch_uuid_generate(o.set_uuid))
		return fail(bch_strerror());

	/* Every device is checked before anything is written to any. */
	for (n = 0; n < o.ndevs; n++) {
		ret = open_member(m, n, o.paths[n]);
		if (ret) {
			n++;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		ret = check_member(&m[i], &o);
		if (ret)
			goto out;
	}
	ret = 1;
	for (i = 0; i < n; i++)
		if (wipe_old_sb(&m[i]))
			goto out;

	for (i = 0; i < n; i++) {
		build_sb(&m[i].sb, &o, m[i].sectors, m[i].nbuckets, now);
		if (bch_uuid_generate(m[i].sb.uuid))
			goto err;
	}
	if (o.add_to)
		build_joining(&m[0], &set, idx);
	else
		build_members(m, n);
	for (i = 0; i < n; i++)
		if (write_meta(&m[i]))
			goto err;
	for (i = 0; i < n; i++)
		if (write_sb(&m[i]))
			goto err;

	if (!o.quiet)
		for (i = 0; i < n; i++)
			summary(&m[i].sb, m[i].dev.path, o.add_to ? set_members(&m[i].sb) : n);
	ret = 0;
	goto out;
err:
	fail(bch_strerror());
out:
	for (i = 0; i < n; i++)
		bch_dev_close(&m[i].dev);
	return ret;
}
