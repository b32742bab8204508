// SPDX-License-Identifier: GPL-2.0
/* make-bcache: format a dm-bcache cache device. */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	const char	*path;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] <device>\n"
		"Format <device> as a dm-bcache cache device.\n\n"
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
		"  -q, --quiet           print nothing on success\n"
		"  -h, --help            show this help\n\n"
		"SIZE is in bytes, or with a binary suffix: 4k, 512k, 1M, 1G.\n",
		BCH_MIN_JOURNAL_BUCKETS, BCH_MAX_JOURNAL_BUCKETS, BCH_SB_VERSION,
		BCH_SB_VERSION_MIN);
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
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": %s\n",
			optind == argc ? "no device given" : "too many arguments");
		usage(stderr);
		return 2;
	}
	o->path = argv[optind];
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
		     uint64_t dev_sectors, uint64_t nbuckets)
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
	sb->created = htole64(time(NULL));
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

/* Refuse to clobber an existing cache unless asked; then kill it first. */
static int check_old_sb(struct bch_dev *dev, const struct opts *o)
{
	static uint8_t zero[BCH_SB_OFFSET + BCH_SB_SIZE];
	struct bch_sb_disk old;
	char uuid[BCH_UUID_STR_LEN];

	if (bch_sb_read(dev, &old))
		return fail(bch_strerror());
	if (!bch_sb_has_magic(&old))
		return 0;
	if (!o->wipe) {
		bch_uuid_format(old.set_uuid, uuid);
		fprintf(stderr, PROG ": %s already holds a dm-bcache superblock (cache set %s); use --wipe to overwrite it\n",
			dev->path, uuid);
		return 1;
	}
	/*
	 * Sectors 0..7 go too: they may hold stale data from the old cache's
	 * life. Flushed before anything else so a format that dies halfway
	 * leaves no superblock pointing at half-written metadata.
	 */
	if (bch_pwrite_all(dev, zero, sizeof(zero), 0) || bch_dev_sync(dev))
		return fail(bch_strerror());
	return 0;
}

static void summary(const struct bch_sb_disk *sb, const char *path)
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
	       "  set uuid      %s\n"
	       "  label         %s\n"
	       "  block size    %u bytes\n"
	       "  bucket size   %llu bytes\n"
	       "  nbuckets      %llu\n"
	       "  first bucket  %llu\n"
	       "  journal       %u buckets from bucket %llu\n"
	       "  data capacity %llu buckets, %llu bytes (%s)\n",
	       path, u, s, (const char *)sb->label,
	       le32toh(sb->block_size) << BCH_SECTOR_SHIFT,
	       (unsigned long long)bucket,
	       (unsigned long long)le64toh(sb->nbuckets),
	       (unsigned long long)le64toh(sb->first_bucket),
	       le32toh(sb->journal_buckets),
	       (unsigned long long)le64toh(sb->journal_first),
	       (unsigned long long)data,
	       (unsigned long long)(data * bucket), size);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct bch_sb_disk sb;
	struct bch_dev dev;
	uint64_t sectors, nbuckets;
	uint32_t bucket_size, csum;
	char need[BCH_SIZE_STR_LEN];
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	ret = check_sizes(&o);
	if (ret)
		return ret;
	if (!o.have_set_uuid && bch_uuid_generate(o.set_uuid))
		return fail(bch_strerror());

	if (bch_dev_open(&dev, o.path, true))
		return fail(bch_strerror());
	ret = 1;
	if (dev.lbs > o.block) {
		fprintf(stderr, PROG ": block size %llu is smaller than the logical block size %u of %s\n",
			(unsigned long long)o.block, dev.lbs, o.path);
		goto out;
	}

	bucket_size = o.bucket >> BCH_SECTOR_SHIFT;
	sectors = dev.size >> BCH_SECTOR_SHIFT;
	nbuckets = sectors / bucket_size;
	if (nbuckets > BCH_MAX_BUCKETS) {
		fprintf(stderr, PROG ": %s has %llu buckets, more than the maximum %llu; use a larger --bucket\n",
			o.path, (unsigned long long)nbuckets,
			(unsigned long long)BCH_MAX_BUCKETS);
		goto out;
	}
	if (!layout_fits(&o, nbuckets, bucket_size)) {
		bch_format_size(min_device_bytes(&o, bucket_size), need);
		fprintf(stderr, PROG ": %s is too small (%llu bytes): with %llu byte buckets and %s journal it must be at least %llu bytes (%s)\n",
			o.path, (unsigned long long)dev.size,
			(unsigned long long)o.bucket,
			o.journal ? "this" : "the default",
			(unsigned long long)min_device_bytes(&o, bucket_size), need);
		goto out;
	}

	ret = check_old_sb(&dev, &o);
	if (ret)
		goto out;
	ret = 1;

	build_sb(&sb, &o, sectors, nbuckets);
	if (bch_uuid_generate(sb.uuid) ||
	    write_prios(&dev, &sb, &csum) ||
	    write_journal(&dev, &sb))
		goto err;
	/* Both copies are written alike: either can be fallen back to. */
	sb.prio_csum = htole32(csum);
	sb.prio_csum_other = sb.prio_csum;
	if (write_uuids(&dev, &sb, &csum))
		goto err;
	sb.uuid_csum = htole32(csum);
	sb.uuid_csum_other = sb.uuid_csum;

	/* The superblock must never reach the disk before what it names. */
	if (bch_dev_sync(&dev))
		goto err;
	sb.csum = htole32(bch_sb_csum(&sb));
	if (bch_pwrite_all(&dev, &sb, sizeof(sb), BCH_SB_OFFSET) ||
	    bch_dev_sync(&dev))
		goto err;

	if (!o.quiet)
		summary(&sb, o.path);
	ret = 0;
	goto out;
err:
	fail(bch_strerror());
out:
	bch_dev_close(&dev);
	return ret;
}
