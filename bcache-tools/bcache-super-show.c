// SPDX-License-Identifier: GPL-2.0
/* bcache-super-show: print and check a dm-bcache superblock. */
#include <ctype.h>
#include <endian.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib.h"

#define PROG "bcache-super-show"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-u] <device>\n"
		"Print the dm-bcache superblock of <device> and check it.\n\n"
		"  -u, --uuids  also print the valid slots of the UUID table\n"
		"  -h, --help   show this help\n");
}

/* Labels come from disk: print them escaped, never raw. */
static void print_label(const char *name, const uint8_t *label, size_t len)
{
	size_t i;

	printf("%s\t", name);
	for (i = 0; i < len && label[i]; i++) {
		if (label[i] == '\\')
			fputs("\\\\", stdout);
		else if (isprint(label[i]))
			putchar(label[i]);
		else
			printf("\\x%02x", label[i]);
	}
	putchar('\n');
}

static void print_uuid(const char *name, const uint8_t *uuid)
{
	char buf[BCH_UUID_STR_LEN];

	bch_uuid_format(uuid, buf);
	printf("%s\t%s\n", name, buf);
}

static void print_time(const char *name, uint64_t t)
{
	time_t tt = t;
	struct tm tm;
	char buf[64];

	if (!t) {
		printf("%s\t0 (never)\n", name);
		return;
	}
	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, sizeof(buf), "?");
	printf("%s\t%llu (%s)\n", name, (unsigned long long)t, buf);
}

static void print_sectors(const char *name, uint32_t sectors)
{
	printf("%s\t%llu (%u sectors)\n", name,
	       (unsigned long long)sectors << BCH_SECTOR_SHIFT, sectors);
}

static void print_root(const struct bch_sb_disk *sb)
{
	struct bch_bkey k;
	uint64_t ptr;

	if (!bch_sb_root(sb, &k)) {
		printf("btree.root\tinvalid\n");
		return;
	}
	ptr = bch_ptr_sector(k.ptr[0]);
	if (!k.size)
		printf("btree.root\tnone\n");
	else
		printf("btree.root\tbucket %llu gen %u level %u (sector %llu, %u sectors)\n",
		       (unsigned long long)(ptr / le32toh(sb->bucket_size)),
		       bch_ptr_gen(k.ptr[0]), le32toh(sb->btree_level),
		       (unsigned long long)ptr, k.size);
}

static void print_sb(const struct bch_sb_disk *sb, uint64_t dev_sectors)
{
	uint64_t flags = le64toh(sb->flags);

	printf("sb.magic\tok\n");
	printf("sb.csum\t0x%08x ok\n", le32toh(sb->csum));
	printf("sb.version\t%u\n", le32toh(sb->version));
	print_uuid("dev.uuid", sb->uuid);
	print_uuid("cset.uuid", sb->set_uuid);
	print_label("dev.label", sb->label, sizeof(sb->label));
	printf("sb.flags\t%s", flags & BCH_SB_CLEAN ? "clean" : "dirty");
	if (flags & ~BCH_SB_CLEAN)
		printf(" unknown 0x%llx",
		       (unsigned long long)(flags & ~BCH_SB_CLEAN));
	putchar('\n');
	printf("sb.seq\t%llu\n", (unsigned long long)le64toh(sb->seq));
	/* the kernel's bch_member_joining(): no open set wrote it yet */
	if (le32toh(sb->version) != 2 && !le64toh(sb->seq))
		printf("sb.joining\tyes: make-bcache --add formatted this member, no open set has written it; it joins its set at the next open, and member 0's member table decides until then\n");
	print_time("sb.created", le64toh(sb->created));
	print_time("sb.last_attach", le64toh(sb->last_attach));
	print_sectors("block_size", le32toh(sb->block_size));
	print_sectors("bucket_size", le32toh(sb->bucket_size));
	printf("nbuckets\t%llu\n", (unsigned long long)le64toh(sb->nbuckets));
	printf("first_bucket\t%llu\n",
	       (unsigned long long)le64toh(sb->first_bucket));
	printf("data_buckets\t%llu\n",
	       (unsigned long long)(le64toh(sb->nbuckets) -
				    le64toh(sb->first_bucket) -
				    le32toh(sb->journal_buckets)));
	printf("sb.journal_first\t%llu\n",
	       (unsigned long long)le64toh(sb->journal_first));
	printf("sb.journal_buckets\t%u\n", le32toh(sb->journal_buckets));
	printf("sb.journal_seq\t%llu\n",
	       (unsigned long long)le64toh(sb->journal_seq));
	printf("sb.journal_pos\t%llu\n",
	       (unsigned long long)le64toh(sb->journal_pos));
	printf("device_sectors\t%llu\n",
	       (unsigned long long)le64toh(sb->device_sectors));
	printf("dev.sectors\t%llu\n", (unsigned long long)dev_sectors);
	printf("prio.offset\t%llu %llu\n",
	       (unsigned long long)le64toh(sb->prio_offset[0]),
	       (unsigned long long)le64toh(sb->prio_offset[1]));
	printf("prio.sectors\t%u\n", le32toh(sb->prio_sectors));
	printf("prio.current\t%u\n", le32toh(sb->prio_current));
}

/* Verify the current copy of a metadata region against the superblock. */
static bool check_copy(struct bch_dev *dev, const char *key,
		       const char *what, uint64_t sector, uint32_t sectors,
		       uint32_t stored, unsigned int copy)
{
	uint32_t csum;

	if (bch_region_csum(dev, sector, sectors, &csum)) {
		printf("%s.csum\t0x%08x BAD\n", key, stored);
		fprintf(stderr, PROG ": %s\n", bch_strerror());
		return false;
	}
	printf("%s.csum\t0x%08x %s\n", key, stored,
	       csum == stored ? "ok" : "BAD");
	if (csum != stored)
		fprintf(stderr, PROG ": %s: %s copy %u checksum mismatch (stored 0x%08x, computed 0x%08x)\n",
			dev->path, what, copy, stored, csum);
	return csum == stored;
}

static void print_slot_flags(const char *name, uint32_t flags)
{
	printf("%s\t", name);
	bch_uuid_print_flags(flags);
	putchar('\n');
}

/* "<kind>.<index>.<field>"; one name is in use at a time. */
static const char *field(const char *kind, unsigned int i, const char *f)
{
	static char name[64];

	snprintf(name, sizeof(name), "%s.%u.%s", kind, i, f);
	return name;
}

static const char *const member_states[BCH_MEMBER_STATES] = {
	[BCH_MEMBER_NONE]	= "none",
	[BCH_MEMBER_ACTIVE]	= "active",
	[BCH_MEMBER_FAILED]	= "failed",
	[BCH_MEMBER_REMOVED]	= "removed",
};

/* Version 3: this member's index and the set's members in use or once. */
static void print_members(const struct bch_sb_disk *sb)
{
	const struct bch_member_disk *m;
	unsigned int i;

	if (le32toh(sb->version) == 2)
		return;
	printf("sb.dev_idx\t%u\n", le32toh(sb->dev_idx));
	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		m = &sb->members[i];
		if (le32toh(m->state) == BCH_MEMBER_NONE)
			continue;
		print_uuid(field("member", i, "uuid"), m->uuid);
		printf("%s\t%llu\n", field("member", i, "nbuckets"),
		       (unsigned long long)le64toh(m->nbuckets));
		print_sectors(field("member", i, "bucket_size"),
			      le32toh(m->bucket_size));
		/* bch_sb_members_invalid() let no unknown state through */
		printf("%s\t%s\n", field("member", i, "state"),
		       member_states[le32toh(m->state)]);
	}
}

static int print_slots(struct bch_dev *dev, uint64_t sector)
{
	static struct bch_uuid_disk t[BCH_UUID_SLOTS];
	const struct bch_uuid_disk *u;
	unsigned int i, n = 0;

	if (bch_pread_all(dev, t, sizeof(t), sector << BCH_SECTOR_SHIFT)) {
		fprintf(stderr, PROG ": %s\n", bch_strerror());
		return 1;
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		n += !!(le32toh(t[i].flags) & BCH_UUID_VALID);
	printf("uuid.slots\t%u\n", n);

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		u = &t[i];
		if (!(le32toh(u->flags) & BCH_UUID_VALID))
			continue;
		print_uuid(field("slot", i, "uuid"), u->uuid);
		print_label(field("slot", i, "label"), u->label, sizeof(u->label));
		printf("%s\t%llu\n", field("slot", i, "sectors"),
		       (unsigned long long)le64toh(u->sectors));
		printf("%s\t%u\n", field("slot", i, "epoch"), le32toh(u->epoch));
		print_slot_flags(field("slot", i, "flags"), le32toh(u->flags));
		if (le32toh(u->flags) & BCH_UUID_FINGERPRINT)
			printf("%s\t0x%08x\n", field("slot", i, "fingerprint"),
			       le32toh(u->fingerprint));
		else
			printf("%s\tnone\n", field("slot", i, "fingerprint"));
		print_time(field("slot", i, "first_attach"), le64toh(u->first_attach));
		print_time(field("slot", i, "last_attach"), le64toh(u->last_attach));
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "uuids",	no_argument, NULL, 'u' },
		{ "help",	no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct bch_sb_disk sb;
	struct bch_dev dev;
	bool uuids = false, uuid_ok;
	unsigned int cur;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "uh", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			uuids = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
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

	if (bch_dev_open(&dev, argv[optind], false)) {
		fprintf(stderr, PROG ": %s\n", bch_strerror());
		return 1;
	}
	if (bch_sb_load(&dev, &sb)) {
		fprintf(stderr, PROG ": %s: %s\n", dev.path, bch_strerror());
		bch_dev_close(&dev);
		return 1;
	}

	print_sb(&sb, dev.size >> BCH_SECTOR_SHIFT);
	cur = le32toh(sb.prio_current);
	if (!check_copy(&dev, "prio", "bucket array",
			le64toh(sb.prio_offset[cur]),
			le32toh(sb.prio_sectors), le32toh(sb.prio_csum), cur))
		ret = 1;

	printf("uuid.offset\t%llu %llu\n",
	       (unsigned long long)le64toh(sb.uuid_offset[0]),
	       (unsigned long long)le64toh(sb.uuid_offset[1]));
	printf("uuid.sectors\t%u\n", le32toh(sb.uuid_sectors));
	cur = le32toh(sb.uuid_current);
	printf("uuid.current\t%u\n", cur);
	uuid_ok = check_copy(&dev, "uuid", "UUID table",
			     le64toh(sb.uuid_offset[cur]),
			     le32toh(sb.uuid_sectors), le32toh(sb.uuid_csum),
			     cur);
	if (!uuid_ok)
		ret = 1;

	print_root(&sb);
	print_members(&sb);

	/* A table that fails its checksum is garbage: do not decode it. */
	if (uuids && uuid_ok && print_slots(&dev, le64toh(sb.uuid_offset[cur])))
		ret = 1;

	bch_dev_close(&dev);
	return ret;
}
