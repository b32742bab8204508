// SPDX-License-Identifier: GPL-2.0
/*
 * bcache-check: offline consistency check (and careful repair) of a
 * dm-bcache cache device.
 *
 * Checked: the superblock, the current copy of the bucket array and of
 * the UUID table (the previous copies are only reported: the kernel falls
 * back to them when the current one is bad), the journal, and the whole
 * index as the next attach builds it: the checkpoint the superblock names,
 * loaded with the kernel's own btree code, with the journal replayed over
 * it. The dirty data of that index (writeback: live keys flagged dirty,
 * whose data exists only on the cache) is counted per UUID slot. A repair
 * never guesses: what cannot be trusted is invalidated, with the two-copy
 * discipline of the kernel (write the copy that is not the one trusted,
 * flush, then the superblock); it refuses to drop an index holding dirty
 * data, or one whose dirty data cannot be counted, unless forced.
 *
 * A cache set of several members is checked whole, every member named:
 * each member's superblock and bucket array, member 0's UUID table and
 * journal, and the index with each pointer judged against its member.
 * A degraded set is checked without the members it lost (member 0's
 * superblock marks them failed; or named "-"), as the kernel runs it:
 * their copies are stale, dirty data with no other copy is lost. Its
 * repair is refused for now. A member the set removed keeps its index
 * but is not named, nor read; a member make-bcache --add formatted is
 * named with the set and joins at the next open: only its superblock is
 * checked. No key may point to either.
 *
 * --upgrade makes a version 2 cache a version 3 one, keeping its cached
 * data (upgrade.h), once the check found nothing that would make its index
 * untrusted (wrong bucket states only: the upgraded cache does not use
 * them).
 *
 * Exit status: 0 consistent, 1 inconsistencies found (repaired or not,
 * the repair refused included), 2 usage, 3 the device cannot be read or
 * is not a dm-bcache device (or the devices named are not a whole set).
 * With --upgrade: 0 upgraded (--dry-run: it would be), 3 not upgraded.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index.h"
#include "upgrade.h"

#define PROG "bcache-check"

#define EXIT_CLEAN	0
#define EXIT_PROBLEMS	1
#define EXIT_USAGE	2
#define EXIT_UNREADABLE	3

/* Problems of one kind printed before "... and N more" (-v: all). */
#define PRINT_LIMIT	10

#define WHY_LEN		256

struct kind {
	const char	*what;
	unsigned int	n;
};

static struct kind k_sb = { .what = "superblock problems" };
static struct kind k_prio = { .what = "bucket array problems" };
static struct kind k_uuid = { .what = "UUID table problems" };
static struct kind k_journal = { .what = "journal problems" };
static struct kind k_node = { .what = "index node problems" };
static struct kind k_key = { .what = "index key problems" };
static struct kind k_data = { .what = "cache space problems" };
static struct kind k_csum = { .what = "data checksum mismatches" };
static struct kind k_lost = { .what = "keys of lost dirty data" };

static struct {
	bool	quiet, verbose, repair, force, data;
	bool	upgrade, dry_run;
	bool	several;	/* a set of several members */
	bool	repair_rw;	/* open the device(s) for writing */
	unsigned int errors;
	unsigned int state_errors;	/* of them, of the bucket states only */

	/* what a repair has to do, or why it must not */
	bool	sb_bad;		/* not repairable */
	bool	incomplete;	/* out of memory: not repairable */
	bool	uuid_bad;	/* not repairable */
	bool	prio_bad;	/* the current bucket array copy is untrusted */
	bool	other_prio_ok;	/* the other copy is good */
	bool	uuid_fallback;	/* current UUID table bad, the other good */
	struct bch_uuid_disk *uuid_other;	/* the other UUID table copy */
	char	root_why[256];	/* the superblock's root is invalid */
	bool	index_present;	/* a checkpoint, or journal keys */
	bool	index_bad;	/* the index must be dropped */
	bool	state_bad;	/* the bucket states must not be used */

	/* the journal, as replay will find it */
	u64	jkeys;		/* keys in good entries */
	u64	jnext_seq;	/* where the next entry goes, and its seq */
	u64	jnext_pos;

	/*
	 * Dirty data: sectors of live dirty keys, per slot. With
	 * dirty_unknown the index could not be counted at all; with
	 * dirty_partial some of its keys could not be read (the counts are
	 * a lower bound). kernel_drops: the next attach drops the index
	 * too, so no table can write its dirty data back.
	 */
	u64	dirty[BCH_UUID_SLOTS];
	u64	dirty_total;
	/* dirty sectors whose every copy was on a lost member, per slot */
	u64	lost[BCH_UUID_SLOTS];
	char	dirty_unknown[WHY_LEN];
	char	dirty_partial[WHY_LEN];
	bool	kernel_drops;

	/*
	 * --data: the live keys' data against their checksums; csum_bad
	 * keys no copy of which is good, csum_bad_copies copies that are
	 * bad while another copy of the key is good.
	 */
	u64	csum_keys, csum_bad, csum_none, csum_sectors, csum_unreadable;
	u64	csum_bad_copies;
} S;

/* "member N: " before what is a member's own, in a set of several. */
static const char *mname(const struct bch_cache *m)
{
	static char buf[4][24];
	static unsigned int next;
	char *p = buf[next++ % ARRAY_SIZE(buf)];

	if (!S.several)
		return "";
	snprintf(p, sizeof(buf[0]), "member %u: ", le32toh(m->sb.dev_idx));
	return p;
}

__printf(1, 2) static void info(const char *fmt, ...)
{
	va_list ap;

	if (S.quiet)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

__printf(1, 2) static void note(const char *fmt, ...)
{
	va_list ap;

	if (S.quiet)
		return;
	fputs("note: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void vproblem(struct kind *k, const char *fmt, va_list ap)
{
	S.errors++;
	if (S.quiet || (++k->n > PRINT_LIMIT && !S.verbose))
		return;
	fputs("error: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
}

__printf(2, 3) static void problem(struct kind *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(k, fmt, ap);
	va_end(ap);
}

/* Bucket states that do not cover the index: the next open must count it. */
__printf(2, 3) static void state_problem(struct kind *k, const char *fmt, ...)
{
	va_list ap;

	S.state_errors++;
	S.state_bad = true;
	va_start(ap, fmt);
	vproblem(k, fmt, ap);
	va_end(ap);
}

static void kind_summary(const struct kind *k)
{
	if (!S.quiet && !S.verbose && k->n > PRINT_LIMIT)
		printf("error: ... and %u more %s\n", k->n - PRINT_LIMIT, k->what);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-r [-f]] [-v] [-q] [-P] [-d] <device> [<device>...]\n"
		"       " PROG " --upgrade [-n] [-v] [-q] [-P] <device>\n"
		"Check a dm-bcache cache device that no table is using; a cache set of\n"
		"several devices is checked with every member named, in any order\n"
		"(but those it marks failed or removed; - for one whose device is lost).\n\n"
		"  -r, --repair   invalidate what cannot be trusted (never guesses);\n"
		"                 refused if that loses dirty (not written back) data,\n"
		"                 and on a set of several devices\n"
		"  -f, --force    with -r: repair even so, losing the dirty data\n"
		"  -v, --verbose  print every problem and more detail\n"
		"  -q, --quiet    print nothing; the exit status tells\n"
		"  -P, --progress show progress on stderr even when it is not a\n"
		"                 terminal (on a terminal it is shown anyway)\n"
		"  -d, --data     also read the cached data of every live key with a\n"
		"                 checksum (format version 3) and verify it\n"
		"  -U, --upgrade  make a version 2 cache format version 3, keeping its\n"
		"                 cached data, dirty data included (after the check)\n"
		"  -n, --dry-run  with --upgrade: say what it would do, write nothing\n"
		"  -h, --help     show this help\n\n"
		"Exit status: 0 consistent, 1 inconsistencies found (repaired or not),\n"
		"2 bad arguments, 3 unreadable or not a dm-bcache cache device.\n"
		"With --upgrade: 0 upgraded (--dry-run: it would be), 3 not upgraded\n"
		"(nothing written), 2 bad arguments.\n");
}

/* The superblock. */

/*
 * Read and validate as bcache-super-show does. A superblock that only
 * fails because of its btree root is still usable: the index is then bad.
 */
static int open_cache(struct bch_cache *c, const char *path)
{
	struct bch_sb_disk tmp;
	char why[256];

	memset(c, 0, sizeof(*c));
	if (bch_dev_open(&c->dev, path, S.repair_rw))
		return -1;
	if (bch_sb_read(&c->dev, &c->sb))
		goto bad;
	if (!bch_sb_validate(&c->sb, c->dev.size >> BCH_SECTOR_SHIFT))
		goto ok;
	snprintf(why, sizeof(why), "%s", bch_strerror());
	tmp = c->sb;
	bch_sb_clear_root(&tmp);
	tmp.btree_level = 0;
	tmp.csum = htole32(bch_sb_csum(&tmp));
	if (le32toh(c->sb.csum) == bch_sb_csum(&c->sb) &&
	    !bch_sb_validate(&tmp, c->dev.size >> BCH_SECTOR_SHIFT)) {
		snprintf(S.root_why, sizeof(S.root_why), "%s", why);
		S.index_bad = true;
		goto ok;
	}
	bch_err("%s", why);
bad:
	snprintf(why, sizeof(why), "%s", bch_strerror());
	bch_err("%s: %s", path, why);
	bch_dev_close(&c->dev);
	return -1;
ok:
	bch_cache_sb_fields(c);
	return 0;
}

/* The root field of the other version: zero, as reserved bytes are. */
static bool other_root_set(const struct bch_sb_disk *sb)
{
	const uint8_t *p;
	size_t i, n;

	if (le32toh(sb->version) == 2) {
		p = (const uint8_t *)&sb->btree_root3;
		n = sizeof(sb->btree_root3);
	} else {
		p = (const uint8_t *)&sb->btree_root;
		n = sizeof(sb->btree_root);
	}
	for (i = 0; i < n; i++)
		if (p[i])
			return true;
	return false;
}

/* What the kernel refuses beyond what the tools' validation does: member @c's. */
static void check_sb_layout(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;
	u64 prio = bch_prio_sectors(c->nbuckets), uuid = bch_uuid_sectors();
	char set[BCH_UUID_STR_LEN], bucket[BCH_SIZE_STR_LEN], block[BCH_SIZE_STR_LEN];
	const char *mn = mname(c);

	bch_uuid_format(sb->set_uuid, set);
	bch_format_size((u64)c->bucket_size << BCH_SECTOR_SHIFT, bucket);
	bch_format_size((u64)c->block_size << BCH_SECTOR_SHIFT, block);
	info("%ssuperblock: ok: version %u, cache set %s, %llu data buckets of %s, blocks of %s, a journal of %u buckets",
	     mn, le32toh(sb->version), set,
	     (unsigned long long)(c->nbuckets - c->first_bucket - le32toh(sb->journal_buckets)),
	     bucket, block, le32toh(sb->journal_buckets));

	if (c->first_bucket != bch_first_bucket(c->nbuckets, c->bucket_size))
		problem(&k_sb, "%ssuperblock: first bucket %llu, the kernel requires exactly %llu",
			mn, (unsigned long long)c->first_bucket,
			(unsigned long long)bch_first_bucket(c->nbuckets, c->bucket_size));
	if (le64toh(sb->prio_offset[0]) != BCH_META_START ||
	    le64toh(sb->prio_offset[1]) != BCH_META_START + prio)
		problem(&k_sb, "%ssuperblock: bucket array copies at sectors %llu and %llu, the kernel requires %u and %llu",
			mn,
			(unsigned long long)le64toh(sb->prio_offset[0]),
			(unsigned long long)le64toh(sb->prio_offset[1]), BCH_META_START,
			(unsigned long long)(BCH_META_START + prio));
	if (le64toh(sb->uuid_offset[0]) != BCH_META_START + 2 * prio ||
	    le64toh(sb->uuid_offset[1]) != BCH_META_START + 2 * prio + uuid)
		problem(&k_sb, "%ssuperblock: UUID table copies at sectors %llu and %llu, the kernel requires %llu and %llu",
			mn,
			(unsigned long long)le64toh(sb->uuid_offset[0]),
			(unsigned long long)le64toh(sb->uuid_offset[1]),
			(unsigned long long)(BCH_META_START + 2 * prio),
			(unsigned long long)(BCH_META_START + 2 * prio + uuid));
	if (c->dev.blk && (c->block_size << BCH_SECTOR_SHIFT) < c->dev.lbs)
		problem(&k_sb, "%ssuperblock: block size %u bytes is below the device's logical block size %u",
			mn, c->block_size << BCH_SECTOR_SHIFT, c->dev.lbs);
	if (k_sb.n)
		S.sb_bad = true;
}

/* Member @m, which the set lost, removed, or takes in at the next open: not read. */
static void note_lost(const struct bch_cache *c, const struct bch_cache *m)
{
	unsigned int idx = le32toh(m->sb.dev_idx);
	u32 state = le32toh(c->sb.members[idx].state);

	if (m->joining)
		note("cache set: member %u (%s) joins at the next open: make-bcache --add formatted it (superblock seq 0) at an index member 0's superblock marks %s; only its superblock is checked, no key may point to it",
		     idx, m->dev.path, state == BCH_MEMBER_REMOVED ? "removed" : "unused");
	else if (m->removed)
		note("cache set: member %u was removed (member 0's superblock marks it: no key pointed to it any more): not named, not read; it keeps its index",
		     idx);
	else if (m->unmarked)
		note("cache set: member %u is named -, but member 0's superblock has it active: the next open marks it failed (name it - in the table); checked as the set would then be, its copies stale",
		     idx);
	else
		note("cache set: member %u failed (member 0's superblock marks it): not read; the set runs degraded, its copies stale (clean data they held is read from the origin, dirty data from its other copy)",
		     idx);
}

/* Every member's superblock (of one that joins, only that); member 0's decides for the set. */
static void check_sb(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;
	u64 flags = le64toh(sb->flags);
	struct bch_cache *m;
	unsigned int i;

	for (i = 0; i < c->nr_members; i++) {
		m = c->members[i];
		if (!m->lost || m->joining)
			check_sb_layout(m);
	}
	if (S.several)
		info("cache set: %s; member 0's superblock (seq %llu) decides",
		     bch_set_describe(c), (unsigned long long)le64toh(sb->seq));
	for (i = 0; i < c->nr_members; i++)
		if (c->members[i]->lost)
			note_lost(c, c->members[i]);
	if (c->members_ahead)
		note("cache set: a member's superblock is one write ahead of member 0's (a crash between them): the next attach brings it level");
	if (S.root_why[0])
		problem(&k_node, "superblock: %s: the index cannot be used", S.root_why);

	if (flags & ~BCH_SB_CLEAN)
		note("superblock: unknown flags 0x%llx",
		     (unsigned long long)(flags & ~BCH_SB_CLEAN));
	for (i = 0; i < sizeof(sb->reserved) && !sb->reserved[i]; i++)
		;
	if (i < sizeof(sb->reserved) || sb->btree_pad || sb->journal_pad || other_root_set(sb))
		note("superblock: reserved bytes are not zero (written by a newer version?)");
	if (!c->clean)
		info("superblock: not shut down cleanly: the next attach replays the journal over the index checkpoint");
	if (bch_sb_has_root(sb))
		S.index_present = true;
}

/* The bucket array. */

/* Problems of one copy; @report: as errors, else only counted. */
static unsigned int scan_prio(struct bch_cache *c, const struct bch_bucket_disk *p,
			      unsigned int copy, bool report)
{
	size_t entries = bch_prio_bytes(c) / sizeof(*p);
	unsigned int bad = 0;
	u64 i;

	for (i = 0; i < entries; i++) {
		bool meta = i < c->first_bucket, journal = bch_journal_bucket(&c->sb, i);

		if (i >= c->nbuckets) {
			if (p[i].prio || p[i].gen || p[i].flags) {
				bad++;
				if (report)
					problem(&k_prio, "%sbucket array copy %u: entry %llu past the last bucket is not zero",
						mname(c), copy, (unsigned long long)i);
			}
			continue;
		}
		if (p[i].flags & ~(BCH_BUCKET_META | BCH_BUCKET_JOURNAL |
				   BCH_BUCKET_STATE)) {
			bad++;
			if (report)
				problem(&k_prio, "%sbucket array copy %u: bucket %llu has unknown flags 0x%x",
					mname(c), copy, (unsigned long long)i,
					p[i].flags & ~(BCH_BUCKET_META | BCH_BUCKET_JOURNAL |
						       BCH_BUCKET_STATE));
		}
		if (meta != !!(p[i].flags & BCH_BUCKET_META)) {
			bad++;
			if (report)
				problem(&k_prio,
					"%sbucket array copy %u: bucket %llu is %s a metadata bucket (first bucket %llu)",
					mname(c), copy, (unsigned long long)i,
					meta ? "not marked as" : "marked as",
					(unsigned long long)c->first_bucket);
		}
		if (journal != !!(p[i].flags & BCH_BUCKET_JOURNAL)) {
			bad++;
			if (report)
				problem(&k_prio, "%sbucket array copy %u: bucket %llu is %s a journal bucket (the ring is buckets %llu to %llu)",
					mname(c), copy, (unsigned long long)i,
					journal ? "not marked as" : "marked as",
					(unsigned long long)le64toh(c->sb.journal_first),
					(unsigned long long)(le64toh(c->sb.journal_first) +
							     le32toh(c->sb.journal_buckets) - 1));
		}
	}
	return bad;
}

static int check_prio(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;
	unsigned int cur = le32toh(sb->prio_current), other = !cur, bad;
	struct bch_bucket_disk *p;
	bool cur_bad = true, other_ok;
	u32 csum, ocsum;

	csum = bch_csum(c->prio, bch_prio_bytes(c));
	if (csum != le32toh(sb->prio_csum)) {
		problem(&k_prio, "%sbucket array copy %u (current): checksum mismatch (stored 0x%08x, computed 0x%08x)",
			mname(c), cur, le32toh(sb->prio_csum), csum);
		S.prio_bad = true;
	} else if (scan_prio(c, c->prio, cur, true)) {
		S.prio_bad = true;
	} else {
		cur_bad = false;
		info("%sbucket array: copy %u (current) ok: %llu buckets", mname(c), cur,
		     (unsigned long long)c->nbuckets);
	}

	/* The previous copy: what the kernel falls back to if the current is bad. */
	p = bch_read_region(&c->dev, le64toh(sb->prio_offset[other]), le32toh(sb->prio_sectors));
	if (!p)
		return -1;
	ocsum = bch_csum(p, bch_prio_bytes(c));
	bad = scan_prio(c, p, other, false);
	other_ok = ocsum == le32toh(sb->prio_csum_other) && !bad;
	/* a repair needs every member's other copy good (sets: refused anyway) */
	S.other_prio_ok = S.other_prio_ok && other_ok;
	if (other_ok && cur_bad)
		note("%sbucket array copy %u (previous) is good: the kernel falls back to it at the next attach, invalidating all cached data",
		     mname(c), other);
	else if (other_ok && S.verbose)
		info("%sbucket array: copy %u (previous) ok", mname(c), other);
	else if (ocsum != le32toh(sb->prio_csum_other))
		note("%sbucket array copy %u (previous): checksum mismatch (stored 0x%08x, computed 0x%08x)%s",
		     mname(c), other, le32toh(sb->prio_csum_other), ocsum,
		     cur_bad ? ": no copy is usable" : ": no fallback if the current one goes bad");
	else if (bad)
		note("%sbucket array copy %u (previous): %u entries disagree with the layout",
		     mname(c), other, bad);
	free(p);
	return 0;
}

/* The UUID table. */

/* Problems of one copy's slots; @report: as errors (with -v, slots too). */
static unsigned int scan_slots(struct bch_cache *c, const struct bch_uuid_disk *t, bool report)
{
	const u32 known = BCH_UUID_VALID | BCH_UUID_EPHEMERAL | BCH_UUID_ATTACHED |
			  BCH_UUID_FINGERPRINT | BCH_UUID_FP_WRITING;
	unsigned int i, j, bad = 0;
	char s[BCH_UUID_STR_LEN];

#define SLOT_PROBLEM(...) do { bad++; if (report) problem(&k_uuid, __VA_ARGS__); } while (0)
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		const struct bch_uuid_disk *u = &t[i];
		u32 flags = le32toh(u->flags), epoch = le32toh(u->epoch);
		bool valid = flags & BCH_UUID_VALID;
		bool persistent = valid && !(flags & BCH_UUID_EPHEMERAL);

		bch_uuid_format(u->uuid, s);
		if (flags & ~known)
			SLOT_PROBLEM("UUID slot %u: unknown flags 0x%x", i, flags & ~known);
		if (epoch >= BCH_INODE_EPOCH_MAX)
			SLOT_PROBLEM("UUID slot %u: epoch %u is out of range (below %u)", i,
				     epoch, BCH_INODE_EPOCH_MAX);
		if (!valid)
			continue;
		if (persistent && bch_uuid_is_nil(u->uuid))
			SLOT_PROBLEM("UUID slot %u: in use with the nil origin_uuid", i);
		for (j = 0; persistent && j < i; j++) {
			const struct bch_uuid_disk *v = &t[j];
			u32 vf = le32toh(v->flags);

			if ((vf & BCH_UUID_VALID) && !(vf & BCH_UUID_EPHEMERAL) &&
			    !memcmp(u->uuid, v->uuid, 16))
				SLOT_PROBLEM("UUID slots %u and %u both hold origin_uuid %s",
					     j, i, s);
		}
		if (!report)
			continue;
		if (c->clean && (flags & BCH_UUID_ATTACHED))
			note("UUID slot %u (%s) is still marked attached after a clean shutdown (the kernel clears that at the next open; its data stands)",
			     i, s);
		if (S.verbose)
			info("UUID slot %u: %s, epoch %u%s%s%s", i, s, epoch,
			     flags & BCH_UUID_EPHEMERAL ? ", ephemeral" : "",
			     flags & BCH_UUID_FINGERPRINT ? ", fingerprint" : "",
			     flags & BCH_UUID_FP_WRITING ?
			     ", first 4 KiB of the origin being written" : "");
	}
#undef SLOT_PROBLEM
	return bad;
}

static int check_uuids(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;
	unsigned int cur = le32toh(sb->uuid_current), other = !cur, i, used = 0, bad;
	struct bch_cache *m;
	u32 csum, ocsum;

	S.uuid_other = bch_read_region(&c->dev, le64toh(sb->uuid_offset[other]),
				       le32toh(sb->uuid_sectors));
	if (!S.uuid_other)
		return -1;
	ocsum = bch_csum(S.uuid_other, bch_uuid_bytes(c));
	bad = scan_slots(c, S.uuid_other, false);

	csum = bch_csum(c->uuids, bch_uuid_bytes(c));
	if (csum != le32toh(sb->uuid_csum)) {
		problem(&k_uuid, "UUID table copy %u (current): checksum mismatch (stored 0x%08x, computed 0x%08x)",
			cur, le32toh(sb->uuid_csum), csum);
		if (ocsum == le32toh(sb->uuid_csum_other) && !bad) {
			note("UUID table copy %u (previous) is good: the kernel falls back to it at the next attach, invalidating all cached data",
			     other);
			S.uuid_fallback = true;
		} else {
			note("UUID table copy %u (previous) is not usable either (%s)", other,
			     bad ? "bad slots" : "checksum mismatch");
			S.uuid_bad = true;
		}
		return 0;
	}
	if (scan_slots(c, c->uuids, true)) {
		S.uuid_bad = true;
		return 0;
	}
	for (i = 0; i < BCH_UUID_SLOTS; i++)
		used += !!(le32toh(c->uuids[i].flags) & BCH_UUID_VALID);
	info("UUID table: copy %u (current) ok: %u of %u slots in use", cur, used,
	     BCH_UUID_SLOTS);
	/* every member holds the table; the kernel reads member 0's and rewrites all */
	bch_for_each_live_member(m, c)
		if (!m->uuid_csum_ok)
			note("%sUUID table copy %u fails its checksum (member 0's is the one read; the next write rewrites it)",
			     mname(m), le32toh(m->sb.uuid_current));
	if (ocsum != le32toh(sb->uuid_csum_other))
		note("UUID table copy %u (previous): checksum mismatch (stored 0x%08x, computed 0x%08x): no fallback if the current one goes bad",
		     other, le32toh(sb->uuid_csum_other), ocsum);
	else if (S.verbose)
		info("UUID table: copy %u (previous) ok", other);
	return 0;
}

/* The journal. */

/* Why the dirty data cannot be counted (@buf: S.dirty_*); the first reason stands. */
__printf(2, 3) static void dirty_why(char *buf, const char *fmt, ...)
{
	va_list ap;

	if (buf[0])
		return;
	va_start(ap, fmt);
	vsnprintf(buf, WHY_LEN, fmt, ap);
	va_end(ap);
}

static void key_where(const struct bch_bkey *k, char *buf, size_t len)
{
	snprintf(buf, len, "slot %u epoch %u, sectors %llu-%llu", bch_inode_slot(k->inode),
		 bch_inode_epoch(k->inode), (unsigned long long)bch_key_start(k),
		 (unsigned long long)k->end);
}

/*
 * Walk it as replay will (the same reader), and check every key of every
 * good entry: one the kernel refuses costs the whole index. The end of the
 * journal is not a problem, whatever is there (a torn entry is what a
 * crash leaves, an older one what the last lap of the ring left), unless
 * a good entry with a seq from there on is elsewhere in the ring: then an
 * entry in the middle is damaged, and the kernel drops the whole index.
 */
static int check_journal(struct bch_cache *c)
{
	const struct bch_sb_disk *sb = &c->sb;
	u64 first_seq = le64toh(sb->journal_seq), jfirst = le64toh(sb->journal_first);
	struct bch_journal j;
	struct bch_jentry e;
	struct bch_bkey k;
	const char *why;
	char where[96];
	u32 i;
	int r;

	if (bch_journal_open(&j, &c->dev, sb))
		return -1;
	while ((r = bch_journal_next(&j, &e)) > 0) {
		if (S.verbose)
			info("journal: entry seq %llu at ring sector %llu (bucket %llu+%llu), %u sectors, %u key%s%s",
			     (unsigned long long)e.seq, (unsigned long long)e.pos,
			     (unsigned long long)(jfirst + e.pos / c->bucket_size),
			     (unsigned long long)(e.pos % c->bucket_size), e.sectors, e.nkeys,
			     e.nkeys == 1 ? "" : "s",
			     e.skipped ? ", at the start of the next bucket" : "");
		for (i = 0; i < e.nkeys; i++) {
			why = bch_set_jkey_invalid(c, &e, i);
			if (!why)
				continue;
			if (!bch_jentry_key(&e, i, &k))
				memset(&k, 0, sizeof(k));
			key_where(&k, where, sizeof(where));
			problem(&k_journal, "journal entry seq %llu (ring sector %llu), key %u (%s): %s (cache sector %llu, %u sectors): the kernel drops the whole index",
				(unsigned long long)e.seq, (unsigned long long)e.pos, i, where, why,
				(unsigned long long)bch_key_sector(&k), k.size);
			S.index_bad = true;
			S.kernel_drops = true;
		}
	}
	if (r < 0) {
		bch_journal_close(&j);
		return -1;
	}
	S.jkeys = j.keys;
	S.jnext_seq = j.seq;
	S.jnext_pos = j.pos;
	if (S.jkeys)
		S.index_present = true;
	if (!j.entries)
		info("journal: empty: %u buckets from bucket %llu, nothing to replay at ring sector %llu (seq %llu)",
		     le32toh(sb->journal_buckets), (unsigned long long)jfirst,
		     (unsigned long long)le64toh(sb->journal_pos), (unsigned long long)first_seq);
	else
		info("journal: %llu entr%s (seq %llu to %llu) from ring sector %llu, %llu keys to replay over the %s",
		     (unsigned long long)j.entries, j.entries == 1 ? "y" : "ies",
		     (unsigned long long)first_seq, (unsigned long long)(j.seq - 1),
		     (unsigned long long)le64toh(sb->journal_pos), (unsigned long long)j.keys,
		     bch_sb_has_root(sb) ? "index checkpoint" : "empty index");
	if (j.entries || j.end_magic || j.damaged || S.verbose)
		info("journal: ends where seq %llu would be: %s%s", (unsigned long long)j.seq,
		     j.end_why,
		     j.end_magic && !c->clean && !j.damaged ? " (normal after a crash)" : "");
	if (j.damaged) {
		/*
		 * The keys of the damaged entry are lost, and those after it
		 * with them: what dirty data they held cannot be counted.
		 */
		problem(&k_journal, "journal: damaged before entry %llu: a later entry (seq %llu at ring sector %llu) is good; the kernel will drop the index",
			(unsigned long long)j.seq, (unsigned long long)j.later_seq,
			(unsigned long long)j.later_pos);
		S.index_present = true;
		S.index_bad = true;
		S.kernel_drops = true;
		dirty_why(S.dirty_partial, "the journal is damaged before entry %llu: the keys of the entries from there on cannot be counted",
			  (unsigned long long)j.seq);
	} else if (S.verbose && j.max_seq) {
		info("journal: no good entry in the ring has seq %llu or later (the largest is %llu)",
		     (unsigned long long)j.seq, (unsigned long long)j.max_seq);
	}
	bch_journal_close(&j);
	return 0;
}

/* The index. */

/* A live key: dirty, its data exists only on the cache (the origin is behind). */
static void count_dirty(const struct bch_bkey *k)
{
	if (!(k->flags & BCH_KEY_DIRTY))
		return;
	S.dirty[bch_inode_slot(k->inode)] += k->size;
	S.dirty_total += k->size;
}

/* The counts are a lower bound if some or all of the index was not counted. */
static const char *at_least(void)
{
	return S.dirty_unknown[0] || S.dirty_partial[0] ? "at least " : "";
}

/* Dead keys seen, by (inode, end): btree.c asks about a key more than once. */
struct seen {
	u64		*tab;		/* (inode + 1) << 32 ... pairs: [2 * i], [2 * i + 1] */
	size_t		size, used;	/* slots (a power of two) */
};

static u64 mix(u64 a, u64 b)
{
	u64 h = a * 0x9e3779b97f4a7c15ULL ^ b;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/* 1 if new, 0 if seen before, -1 out of memory. */
static int seen_add(struct seen *s, u32 inode, u64 end)
{
	u64 a = (u64)inode + 1;	/* 0 marks a free slot */
	size_t i;

	if (2 * (s->used + 1) > s->size) {
		struct seen n = { .size = s->size ? 2 * s->size : 1024 };

		n.tab = calloc(2 * n.size, sizeof(u64));
		if (!n.tab)
			return -1;
		for (i = 0; i < s->size; i++)
			if (s->tab[2 * i])
				seen_add(&n, s->tab[2 * i] - 1, s->tab[2 * i + 1]);
		free(s->tab);
		*s = n;
	}
	for (i = mix(a, end) & (s->size - 1); s->tab[2 * i]; i = (i + 1) & (s->size - 1))
		if (s->tab[2 * i] == a && s->tab[2 * i + 1] == end)
			return 0;
	s->tab[2 * i] = a;
	s->tab[2 * i + 1] = end;
	s->used++;
	return 1;
}

struct extent {
	u64	ptr;
	u32	size;
	u32	inode;
	u64	end;
};

struct walk {
	struct seen	dead;
	u64		dead_by[BCH_KEY_NR_STATES];
	/* per member, per bucket */
	u32		*live_sectors[BCH_MAX_MEMBERS];
	u8		*node[BCH_MAX_MEMBERS];		/* 1 = holds a node */
	/* one per live copy, ptr its bch_ptr_loc(): member and sector */
	struct extent	*live;
	size_t		nlive, live_size;
	u64		live_total, nkeys;	/* live keys */
	u64		nlost;			/* lost keys (BCH_KEY_LOST) */
	u64		nodes;
	bool		oom;
};

/*
 * A key pointing to a member that no key may point to: one the set
 * removed (a GC pass found no key pointing to it), or one that joins.
 */
static void check_stray(const struct bch_cache *c, const struct bch_bkey *k, const char *where)
{
	int dev = bch_key_stray_ptr(c, k);

	if (dev >= 0)
		problem(&k_key, "index key (%s): points to %s", where, bch_stray_why(c, dev));
}

static bool check_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	struct bch_cache *c = bch_cache_of(b);
	struct walk *w = c->arg;
	enum bch_key_state st = bch_key_state(c, k);
	const struct bch_uuid_disk *u;
	char where[96];
	int r;

	if (bch_key_kept(st))
		return false;
	r = seen_add(&w->dead, k->inode, k->end);
	if (r < 0)
		w->oom = true;
	if (r <= 0)
		return true;
	w->dead_by[st]++;
	key_where(k, where, sizeof(where));
	check_stray(c, k, where);
	/* Where a key points was checked as it was read: bch_index_key_invalid(). */
	if (st == BCH_KEY_DEAD_FUTURE) {
		u = &c->uuids[bch_inode_slot(k->inode)];
		problem(&k_key, "index key (%s) is newer than its UUID slot (epoch %u): the UUID table is older than the index",
			where, le32toh(u->epoch));
		S.index_bad = true;
	}
	return true;
}

static int check_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		    u32 sectors)
{
	if (write)
		return -EROFS;	/* a check writes nothing through the index */
	return bch_index_io(b, false, bucket, offset, buf, sectors);
}

/* Nodes the replay makes stay in memory: a check writes nothing. */
static const struct bch_btree_ops check_ops = {
	.alloc		= bch_index_mem_alloc,
	.free		= bch_index_mem_free,
	.io		= check_io,
	.key_dead	= check_key_dead,
	.key_invalid	= bch_index_key_invalid,
};

/*
 * After a crash a set the kernel was appending when it went down is torn:
 * the kernel stops reading the node there, as btree.c does here.
 */
static void bad_set(struct bch_cache *c, u64 bucket, unsigned int idx, unsigned int level)
{
	const char *bn = bch_bucket_name(c, bch_node_bucket_dev(bucket),
					 bch_node_bucket_nr(bucket));

	if (!c->clean) {
		note("index node in %s (level %u): set %u fails its checksum: a torn write (the cache was not shut down cleanly); the node ends before it",
		     bn, level, idx);
		return;
	}
	problem(&k_node, "index node in %s (level %u): set %u is corrupt (its keys are lost, older keys would show through)",
		bn, level, idx);
	S.index_bad = true;
	dirty_why(S.dirty_partial, "set %u of the index node in %s is corrupt: its keys cannot be counted",
		  idx, bn);
}

/* "cache sector N", or "member M cache sector N" in a set of several. */
static const char *sector_name(unsigned int dev, u64 sector)
{
	static char buf[2][64];
	static unsigned int next;
	char *p = buf[next++ % ARRAY_SIZE(buf)];

	if (S.several)
		snprintf(p, sizeof(buf[0]), "member %u cache sector %llu", dev,
			 (unsigned long long)sector);
	else
		snprintf(p, sizeof(buf[0]), "cache sector %llu", (unsigned long long)sector);
	return p;
}

static void check_node(struct bch_cache *c, struct walk *w, const struct bch_bkey *k)
{
	unsigned int dev = bch_ptr_dev(k->ptr[0]);
	struct bch_cache *m = bch_member(c, dev);
	u64 bucket = bch_key_sector(k) / c->bucket_size;
	const char *bn = bch_bucket_name(c, dev, bucket);

	w->nodes++;
	if (bch_index_mem_bucket(c, bch_node_bucket_id(dev, bucket)))
		return;		/* made by the replay: the kernel writes it later */
	/* btree.c refuses a node pointer to a member the set does not have */
	if (!m || bucket < m->first_bucket) {
		problem(&k_node, "index node at %s is outside the data buckets",
			sector_name(dev, bch_key_sector(k)));
		S.index_bad = true;
		return;
	}
	/* not read: the load failed first (the kernel's does too) */
	if (m->lost)
		return;
	if (m->prio[bucket].flags & BCH_BUCKET_META) {
		problem(&k_node, "index node in %s, a metadata bucket", bn);
		S.index_bad = true;
	}
	if (bch_journal_bucket(&m->sb, bucket)) {
		problem(&k_node, "index node in %s, a journal bucket", bn);
		S.index_bad = true;
	}
	if (w->node[dev][bucket]++) {
		problem(&k_node, "%s holds two index nodes", bn);
		S.index_bad = true;
	}
	if (m->prio[bucket].gen != bch_key_gen(k)) {
		problem(&k_node, "index node in %s has gen %u, the bucket array says %u",
			bn, bch_key_gen(k), m->prio[bucket].gen);
		S.index_bad = true;
	}
	/* The kernel's open would hand the bucket out: see BCH_BUCKET_STATE. */
	if (bch_bucket_state_valid(&c->sb) &&
	    !(m->prio[bucket].flags & BCH_BUCKET_BTREE)) {
		state_problem(&k_prio, "index node in %s, which the bucket array does not mark as one",
			      bn);
	}
}

/*
 * Copy @i of @k: read its checksummed range into @buf and checksum it
 * into @crc. -1 (reported) if it cannot be read.
 */
static int read_copy(struct bch_cache *c, const struct bch_bkey *k, unsigned int i,
		     const char *where, u32 *crc)
{
	static u8 buf[BCH_CSUM_MAX_SECTORS << BCH_SECTOR_SHIFT];
	struct bch_cache *m = bch_member(c, bch_ptr_dev(k->ptr[i]));
	u64 start = bch_ptr_sector(k->ptr[i]) - k->csum_front;
	size_t len = (size_t)k->csum_sectors << BCH_SECTOR_SHIFT;

	if (bch_pread_all(&m->dev, buf, len, start << BCH_SECTOR_SHIFT)) {
		if (S.several)
			problem(&k_csum, "index key (%s): its copy on member %u cannot be read: %s",
				where, bch_ptr_dev(k->ptr[i]), bch_strerror());
		else
			problem(&k_csum, "index key (%s): its data cannot be read: %s", where,
				bch_strerror());
		S.csum_unreadable++;
		return -1;
	}
	S.csum_sectors += k->csum_sectors;
	*crc = bch_csum(buf, len);
	return 0;
}

static void report_bad_copy(const struct bch_bkey *k, unsigned int i, u32 crc,
			    const char *where, bool other_good)
{
	u64 start = bch_ptr_sector(k->ptr[i]) - k->csum_front;

	if (!S.several) {
		problem(&k_csum, "index key (%s): data checksum %08x, the key says %08x (range %u sectors from %llu)",
			where, crc, k->csum, k->csum_sectors, (unsigned long long)start);
		return;
	}
	problem(&k_csum, "index key (%s): its copy on member %u: data checksum %08x, the key says %08x (range %u sectors from %llu)%s",
		where, bch_ptr_dev(k->ptr[i]), crc, k->csum, k->csum_sectors,
		(unsigned long long)start,
		other_good ? ": the other copy is good, the key's data stands" :
		": no good copy is left");
}

/*
 * --data: the checksummed range of live key @k (the key, or a range it is
 * a part of) read from the device and its crc32c compared, for each copy
 * that is not stale (one checksum covers every copy). A key none of whose
 * copies matches is data the kernel would refuse to serve.
 */
static void check_data(struct bch_cache *c, const struct bch_bkey *k, const char *where)
{
	bool read[BCH_KEY_PTRS] = { false }, any = false;
	u32 crc[BCH_KEY_PTRS];
	unsigned int i, good = 0, bad = 0;

	if (!(k->flags & BCH_KEY_CSUM)) {
		S.csum_none++;
		return;
	}
	for (i = 0; i < k->nptrs; i++) {
		if (bch_ptr_stale(c, k->ptr[i]))
			continue;	/* the kernel never reads it */
		read[i] = !read_copy(c, k, i, where, &crc[i]);
		any |= read[i];
		if (read[i] && crc[i] == k->csum)
			good++;
		else if (read[i])
			bad++;
	}
	if (!any)
		return;
	S.csum_keys++;
	if (!bad)
		return;
	if (good)
		S.csum_bad_copies += bad;
	else
		S.csum_bad++;
	for (i = 0; i < k->nptrs; i++)
		if (read[i] && crc[i] != k->csum)
			report_bad_copy(k, i, crc[i], where, good);
}

/* Note the live copies of @k: the buckets they fill, and their extents. */
static void add_copies(struct bch_cache *c, struct walk *w, const struct bch_bkey *k,
		       const char *where)
{
	unsigned int i, dev;
	struct bch_cache *m;

	for (i = 0; i < k->nptrs; i++) {
		dev = bch_ptr_dev(k->ptr[i]);
		m = bch_member(c, dev);
		/* a crash after writeback dropped this copy: the kernel skips it */
		if (bch_ptr_stale(c, k->ptr[i])) {
			if (S.verbose)
				note("index key (%s): its copy on member %u is stale (%s): the kernel skips it",
				     where, dev,
				     m->joining ? "the member joins at the next open" :
				     m->removed ? "the member was removed" :
				     m->lost ? "the member is lost" : "its bucket was reused");
			continue;
		}
		w->live_sectors[dev][bch_ptr_sector(k->ptr[i]) / m->bucket_size] += k->size;
		if (w->nlive == w->live_size) {
			size_t n = w->live_size ? 2 * w->live_size : 4096;
			struct extent *e = realloc(w->live, n * sizeof(*e));

			if (!e) {
				w->oom = true;
				return;
			}
			w->live = e;
			w->live_size = n;
		}
		w->live[w->nlive++] = (struct extent){ bch_ptr_loc(k->ptr[i]), k->size,
						       k->inode, k->end };
	}
}

/*
 * Lost key @k: dirty, every copy of it on a lost member. The kernel keeps
 * it and fails reads of it: writes its origin never got are gone.
 */
static void check_lost(struct walk *w, const struct bch_bkey *k, const char *where)
{
	char on[32];
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < k->nptrs && len < sizeof(on); i++)
		len += snprintf(on + len, sizeof(on) - len, "%s%u", i ? " and " : "",
				bch_ptr_dev(k->ptr[i]));
	problem(&k_lost, "index key (%s): dirty, and every copy of it was on a lost member (member%s %s): its data is gone, reads of it fail (its origin is older)",
		where, k->nptrs > 1 ? "s" : "", on);
	S.lost[bch_inode_slot(k->inode)] += k->size;
	w->nlost++;
}

static void check_live(struct bch_cache *c, struct walk *w, const struct bch_bkey *k)
{
	const struct bch_uuid_disk *u = &c->uuids[bch_inode_slot(k->inode)];
	enum bch_key_state st = bch_key_state(c, k);
	char where[96];

	key_where(k, where, sizeof(where));
	check_stray(c, k, where);
	if (st == BCH_KEY_LOST) {
		check_lost(w, k, where);
		return;
	}
	if (st != BCH_KEY_LIVE ||
	    !(le32toh(u->flags) & BCH_UUID_VALID) || (le32toh(u->flags) & BCH_UUID_EPHEMERAL)) {
		problem(&k_key, "index key (%s): live, but its UUID slot is not a valid persistent one",
			where);
		S.index_bad = true;
		return;
	}
	/* once per key, however many copies: the origin misses it once */
	count_dirty(k);
	if (S.data)
		check_data(c, k, where);
	w->live_total += k->size;
	w->nkeys++;
	add_copies(c, w, k, where);
}

static void walk_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct bch_cache *c = bch_cache_of(b);

	if (is_node)
		check_node(c, arg, k);
	else
		check_live(c, arg, k);
}

static int cmp_extent(const void *l, const void *r)
{
	const struct extent *a = l, *b = r;

	return a->ptr < b->ptr ? -1 : a->ptr > b->ptr;
}

/* Member @m's (index @dev) live buckets against its bucket states. */
static void check_member_data(struct bch_cache *c, struct bch_cache *m, unsigned int dev,
			      struct walk *w)
{
	u64 n;

	for (n = m->first_bucket; n < m->nbuckets; n++) {
		if (w->live_sectors[dev][n] && !(m->prio[n].flags & BCH_BUCKET_DATA)) {
			state_problem(&k_prio, "%s holds %u live sectors, but the bucket array does not mark it as data",
				      bch_bucket_name(c, dev, n), w->live_sectors[dev][n]);
		}
	}
}

/* After a clean shutdown no bucket of member @m is marked as a node without being one. */
static void check_member_leaks(struct bch_cache *c, struct bch_cache *m, unsigned int dev,
			       struct walk *w)
{
	u64 n;

	for (n = m->first_bucket; n < m->nbuckets; n++) {
		if ((m->prio[n].flags & BCH_BUCKET_BTREE) && !w->node[dev][n] &&
		    !m->node_level[n]) {
			state_problem(&k_prio, "%s is marked as an index node, but the index does not name it (shut down cleanly: leaked)",
				      bch_bucket_name(c, dev, n));
		}
	}
}

/*
 * The bucket states an open reads instead of the index (BCH_BUCKET_STATE)
 * must cover it; with no journal keys the index is the checkpoint's.
 */
static void check_states(struct bch_cache *c, struct walk *w, u64 jkeys)
{
	struct bch_cache *m;
	unsigned int i;

	if (!bch_bucket_state_valid(&c->sb))
		return;
	if (!jkeys) {
		bch_for_each_live_member(m, c)
			check_member_data(c, m, bch_member_idx(m), w);
	}
	for (i = 0; i < BCH_UUID_SLOTS && !jkeys; i++) {
		if (S.dirty[i] > le64toh(c->uuids[i].dirty)) {
			state_problem(&k_uuid, "UUID slot %u: %llu dirty sectors, but the table says %llu",
				      i, (unsigned long long)S.dirty[i],
				      (unsigned long long)le64toh(c->uuids[i].dirty));
		}
	}
	if (c->clean) {
		bch_for_each_live_member(m, c)
			check_member_leaks(c, m, bch_member_idx(m), w);
	}
}

/* After the walk: what needs every key seen. */
static void check_space(struct bch_cache *c, struct walk *w)
{
	const struct extent *a, *b;
	struct bch_cache *m;
	unsigned int dev;
	size_t i;
	u64 n;

	/* a checkpoint node the replay split away still holds the checkpoint */
	bch_for_each_live_member(m, c) {
		dev = bch_member_idx(m);
		for (n = m->first_bucket; n < m->nbuckets; n++) {
			if ((w->node[dev][n] || m->node_level[n]) && w->live_sectors[dev][n]) {
				problem(&k_data, "%s holds an index node and %u sectors of live data",
					bch_bucket_name(c, dev, n), w->live_sectors[dev][n]);
				S.index_bad = true;
			}
		}
	}
	if (w->nlive)
		qsort(w->live, w->nlive, sizeof(*w->live), cmp_extent);
	for (i = 1; i < w->nlive; i++) {
		a = &w->live[i - 1];
		b = &w->live[i];
		/* locations: a member's sectors never run into the next member's */
		if (a->ptr + a->size > b->ptr) {
			problem(&k_data, "live keys (slot %u epoch %u, end %llu) and (slot %u epoch %u, end %llu) share %s",
				bch_inode_slot(a->inode), bch_inode_epoch(a->inode),
				(unsigned long long)a->end, bch_inode_slot(b->inode),
				bch_inode_epoch(b->inode), (unsigned long long)b->end,
				sector_name(bch_ptr_dev(b->ptr), bch_ptr_sector(b->ptr)));
			S.index_bad = true;
		}
	}
}

static bool count_key_dead(struct bch_btree *b, const struct bch_bkey *k)
{
	return !bch_key_kept(bch_key_state(bch_cache_of(b), k));
}

/* Lost keys hide older ones, but their data is not on the cache: not counted. */
static void count_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	(void)arg;
	if (!is_node && bch_key_state(bch_cache_of(b), k) == BCH_KEY_LIVE)
		count_dirty(k);
}

static const struct bch_btree_ops count_ops = {
	.alloc		= bch_index_mem_alloc,
	.free		= bch_index_mem_free,
	.io		= check_io,
	.key_dead	= count_key_dead,
	.key_invalid	= bch_index_key_invalid,
};

/*
 * The journal holds a key the kernel refuses: it drops the whole index,
 * and with it the dirty data of the journal keys after that one, which
 * the replay above left out. Count again over the checkpoint with every
 * key the journal holds but the refused ones.
 */
static void recount_dirty(struct bch_cache *c)
{
	struct bch_replay rp;
	int r;

	memset(S.dirty, 0, sizeof(S.dirty));
	S.dirty_total = 0;
	bch_btree_free(&c->b);
	c->bad_set = NULL;	/* reported already */
	c->replay_past_refused = true;
	r = bch_index_load(c, &count_ops);
	if (!r)
		r = bch_index_replay(c, &rp);
	if (!r)
		r = bch_btree_gc(&c->b, count_fn, NULL);
	c->replay_past_refused = false;
	if (r)
		dirty_why(S.dirty_unknown, "counting the journal keys after the one the kernel refuses failed (%s)",
			  c->load_msg[0] ? c->load_msg : strerror(-r));
}

/*
 * "@what: slot S (uuid U): @least N sectors (SIZE) @tail" for each slot
 * with sectors in @per_slot; the number of those slots.
 */
static unsigned int report_slots(const struct bch_cache *c, const u64 *per_slot,
				 const char *what, const char *least, const char *tail)
{
	char size[BCH_SIZE_STR_LEN], uuid[BCH_UUID_STR_LEN];
	unsigned int i, slots = 0;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		if (!per_slot[i])
			continue;
		slots++;
		bch_uuid_format(c->uuids[i].uuid, uuid);
		bch_format_size(per_slot[i] << BCH_SECTOR_SHIFT, size);
		info("%s: slot %u (uuid %s): %s%llu sectors (%s) %s", what, i, uuid, least,
		     (unsigned long long)per_slot[i], size, tail);
	}
	return slots;
}

static void report_dirty(const struct bch_cache *c)
{
	char size[BCH_SIZE_STR_LEN];
	unsigned int slots;

	slots = report_slots(c, S.dirty, "dirty", at_least(),
			     "exist only on this cache: not yet written back to the origin");
	bch_format_size(S.dirty_total << BCH_SECTOR_SHIFT, size);
	if (S.dirty_unknown[0])
		info("dirty: unknown: %s, so the dirty data it may hold (written in writeback mode, not yet written back to its origin) cannot be counted",
		     S.dirty_unknown);
	else if (S.dirty_partial[0] && !slots)
		info("dirty: none among the keys counted, but not all could be: %s",
		     S.dirty_partial);
	else if (S.dirty_partial[0])
		info("dirty: at least %llu sectors (%s) in total, in %u slot%s: %s",
		     (unsigned long long)S.dirty_total, size, slots, slots == 1 ? "" : "s",
		     S.dirty_partial);
	else if (slots)
		info("dirty: %llu sectors (%s) in total, in %u slot%s",
		     (unsigned long long)S.dirty_total, size, slots, slots == 1 ? "" : "s");
	else
		info("dirty: none: no data exists only on this cache");
}

static void check_index(struct bch_cache *c)
{
	struct walk w = { 0 };
	struct bch_replay rp;
	char sectors[BCH_SIZE_STR_LEN], dead[256] = "", journal[128] = "", lost[48] = "";
	size_t len = 0;
	u64 used = 0, n, ndead = 0;
	unsigned int i;
	int r;

	if (!S.index_present) {
		info("index: none (nothing is cached)");
		return;
	}
	if (S.root_why[0]) {
		info("index: not checked: its root is invalid");
		dirty_why(S.dirty_unknown, "the index cannot be read: its root is invalid");
		S.kernel_drops = true;
		goto out;
	}
	if (S.prio_bad || S.uuid_fallback) {
		info("index: not checked: the %s it depends on cannot be trusted",
		     S.prio_bad ? "bucket array" : "UUID table");
		S.index_bad = true;
		dirty_why(S.dirty_unknown, "the index cannot be judged: the %s it depends on cannot be trusted",
			  S.prio_bad ? "bucket array" : "UUID table");
		S.kernel_drops = true;
		goto out;
	}
	if (S.uuid_bad) {
		info("index: not checked: the UUID table it depends on cannot be trusted");
		dirty_why(S.dirty_unknown, "the index cannot be judged: the UUID table it depends on cannot be trusted");
		goto out;
	}

	for (i = 0; i < c->nr_members; i++) {
		if (c->members[i]->lost)
			continue;	/* nothing of it is counted */
		w.live_sectors[i] = calloc(c->members[i]->nbuckets, sizeof(*w.live_sectors[i]));
		w.node[i] = calloc(c->members[i]->nbuckets, 1);
		if (!w.live_sectors[i] || !w.node[i]) {
			w.oom = true;
			goto out;
		}
	}
	c->arg = &w;
	c->bad_set = bad_set;
	r = bch_index_load(c, &check_ops);
	if (r) {
		if (r == -ENOMEM) {
			w.oom = true;
			goto out;
		}
		problem(&k_node, "index: cannot be loaded: %s", c->load_msg);
		S.index_bad = true;
		dirty_why(S.dirty_unknown, "the index cannot be loaded");
		S.kernel_drops = true;
		goto out;
	}
	r = bch_index_replay(c, &rp);
	if (r) {
		if (r == -ENOMEM) {
			w.oom = true;
			goto out;
		}
		problem(&k_journal, "index: replaying the journal failed: %s", c->load_msg);
		S.index_bad = true;
		dirty_why(S.dirty_unknown, "the journal cannot be replayed");
		S.kernel_drops = true;
		goto out;
	}
	/* GC compacts nodes in memory only: nothing is written. */
	r = bch_btree_gc(&c->b, walk_fn, &w);
	if (r) {
		problem(&k_node, "index: walk failed: %s", strerror(-r));
		S.index_bad = true;
		dirty_why(S.dirty_unknown, "the index cannot be walked");
		S.kernel_drops = true;
		goto out;
	}
	if (w.oom)
		goto out;
	check_space(c, &w);
	check_states(c, &w, rp.keys);

	for (i = 0; i < c->nr_members; i++)
		for (n = c->members[i]->first_bucket; w.live_sectors[i] &&
		     n < c->members[i]->nbuckets; n++)
			used += !!w.live_sectors[i][n];
	for (i = 0; i < BCH_KEY_NR_STATES; i++) {
		if (i == BCH_KEY_LIVE || !w.dead_by[i])
			continue;
		ndead += w.dead_by[i];
		len += snprintf(dead + len, sizeof(dead) - len, "%s%llu %s",
				len ? ", " : "", (unsigned long long)w.dead_by[i],
				bch_key_state_names[i] + 5);
		if (len >= sizeof(dead))
			len = sizeof(dead) - 1;
	}
	bch_format_size(w.live_total << BCH_SECTOR_SHIFT, sectors);
	if (w.nlost)
		snprintf(lost, sizeof(lost), ", %llu lost key%s", (unsigned long long)w.nlost,
			 w.nlost == 1 ? "" : "s");
	if (rp.entries)
		snprintf(journal, sizeof(journal), "; %s + %llu journal key%s",
			 bch_sb_has_root(&c->sb) ? "checkpoint" : "no checkpoint",
			 (unsigned long long)rp.keys, rp.keys == 1 ? "" : "s");
	info("index: %u level%s, %llu node%s, %llu live keys (%s in %llu bucket%s)%s, %llu dead keys%s%s%s%s",
	     bch_btree_depth(&c->b), bch_btree_depth(&c->b) == 1 ? "" : "s",
	     (unsigned long long)w.nodes, w.nodes == 1 ? "" : "s", (unsigned long long)w.nkeys,
	     sectors,
	     (unsigned long long)used, used == 1 ? "" : "s", lost, (unsigned long long)ndead,
	     len ? " (" : "", dead,
	     len ? ")" : "", journal);
	if (rp.bad)
		recount_dirty(c);
	if (S.data) {
		bch_format_size(S.csum_sectors << BCH_SECTOR_SHIFT, sectors);
		info("data: %llu key%s verified against %s checksum%s (%s read), %llu mismatched, %llu unreadable, %llu without a checksum",
		     (unsigned long long)S.csum_keys, S.csum_keys == 1 ? "" : "s",
		     S.csum_keys == 1 ? "its" : "their", S.csum_keys == 1 ? "" : "s", sectors,
		     (unsigned long long)S.csum_bad, (unsigned long long)S.csum_unreadable,
		     (unsigned long long)S.csum_none);
		if (S.several)
			info("data: %llu cop%s mismatched beside a good copy of the same key",
			     (unsigned long long)S.csum_bad_copies,
			     S.csum_bad_copies == 1 ? "y" : "ies");
	}
out:
	if (w.oom) {
		problem(&k_node, "index: out of memory: not fully checked");
		S.index_bad = false;	/* nothing known to be wrong: do not drop it */
		S.incomplete = true;	/* ... nor repair anything else */
		dirty_why(S.dirty_unknown, "the index could not be checked (out of memory)");
	}
	report_dirty(c);
	report_slots(c, S.lost, "lost", "",
		     "of dirty data were only on lost members: gone, reads of them fail (the origin is older)");
	c->bad_set = NULL;
	c->arg = NULL;
	free(w.dead.tab);
	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		free(w.live_sectors[i]);
		free(w.node[i]);
	}
	free(w.live);
}

/* Repair. */

static int write_region(struct bch_cache *c, const void *buf, size_t len, u64 sector)
{
	return bch_pwrite_all(&c->dev, buf, len, sector << BCH_SECTOR_SHIFT);
}

/* The new bucket array copy when neither is usable: no index, gens 0. */
static struct bch_bucket_disk *fresh_prio(struct bch_cache *c)
{
	struct bch_bucket_disk *p = calloc(1, bch_prio_bytes(c));
	u64 i;

	for (i = 0; p && i < c->nbuckets; i++) {
		if (i < c->first_bucket)
			p[i].flags = BCH_BUCKET_META;
		else if (bch_journal_bucket(&c->sb, i))
			p[i].flags = BCH_BUCKET_JOURNAL;
	}
	return p;
}

/* Would dropping the index lose dirty data, or may it? */
static bool dirty_at_stake(void)
{
	return S.dirty_total || S.dirty_unknown[0] || S.dirty_partial[0];
}

/*
 * Where dirty data may go before a repair drops it: back to the origin
 * through a table, unless the next attach would drop the index too.
 * @them: "them" (sectors) or "it" (data).
 */
static void dirty_advice(char *buf, size_t len, const char *them)
{
	if (S.kernel_drops)
		snprintf(buf, len, ", and so would the next attach (the kernel cannot use this index either, so no table can write %s back): keep a copy of the device if that data matters, then pass --force",
			 them);
	else
		snprintf(buf, len, ": write %s back first (dmsetup message <dev> 0 flush) or pass --force",
			 them);
}

static void refuse_dirty(const struct bch_cache *c)
{
	char uuid[BCH_UUID_STR_LEN], them[WHY_LEN], it[WHY_LEN];
	unsigned int i;

	dirty_advice(them, sizeof(them), "them");
	dirty_advice(it, sizeof(it), "it");
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		if (!S.dirty[i])
			continue;
		bch_uuid_format(c->uuids[i].uuid, uuid);
		info("repair: refused: %s%llu dirty sectors of slot %u (uuid %s) exist only on this cache; --repair would lose them%s",
		     at_least(), (unsigned long long)S.dirty[i], i, uuid, them);
	}
	if (S.dirty_unknown[0])
		info("repair: refused: %s, so its dirty data (written in writeback mode, not yet written back) cannot be counted; --repair would lose all of it%s",
		     S.dirty_unknown, S.dirty_total ? "" : it);
	else if (S.dirty_partial[0])
		info("repair: refused: %s; --repair would lose whatever dirty data is among them too%s",
		     S.dirty_partial, S.dirty_total ? "" : it);
	info("repair: refused: nothing was written");
}

/* After a forced repair: what it cost. */
static void report_lost(const struct bch_cache *c)
{
	char uuid[BCH_UUID_STR_LEN], size[BCH_SIZE_STR_LEN];
	unsigned int i;

	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		if (!S.dirty[i])
			continue;
		bch_uuid_format(c->uuids[i].uuid, uuid);
		info("repair: --force: lost %s%llu dirty sectors of slot %u (uuid %s) that existed only on this cache: its origin misses them",
		     at_least(), (unsigned long long)S.dirty[i], i, uuid);
	}
	bch_format_size(S.dirty_total << BCH_SECTOR_SHIFT, size);
	if (S.dirty_total)
		info("repair: --force: lost %s%llu dirty sectors (%s) in total",
		     at_least(), (unsigned long long)S.dirty_total, size);
	if (S.dirty_unknown[0])
		info("repair: --force: lost whatever dirty data the index held: %s",
		     S.dirty_unknown);
	else if (S.dirty_partial[0])
		info("repair: --force: lost whatever dirty data was among the keys not counted: %s",
		     S.dirty_partial);
}

static int do_repair(struct bch_cache *c)
{
	struct bch_sb_disk sb = c->sb;
	unsigned int pcur = le32toh(sb.prio_current), ucur = le32toh(sb.uuid_current), i;
	/* the UUID copy to start from, and the one to write */
	unsigned int ugood = S.uuid_fallback ? !ucur : ucur;
	const struct bch_uuid_disk *base = S.uuid_fallback ? S.uuid_other : c->uuids;
	bool drop = S.index_bad || ((S.prio_bad || S.uuid_fallback) && S.index_present);
	struct bch_bucket_disk *fresh = NULL;
	struct bch_uuid_disk *uuids = NULL;
	unsigned int bumped = 0;
	uint64_t jmax;
	u64 jseq = 0;
	__le32 tmp;
	int ret = -1;

	if (S.several) {
		info("repair: refused: repairing a cache set of several devices is not supported yet; nothing was written");
		return -1;
	}
	if (S.uuid_bad) {
		info("repair: refused: the UUID table is damaged and no good copy is left; it tells the origins' data apart and cannot be rebuilt, so nothing was written");
		info("repair: reformatting the cache with make-bcache --wipe loses all cached data, dirty data (written in writeback mode, not yet written back) included, which exists only on this cache: do so only if it holds none (or keep a copy of the device first)");
		return -1;
	}
	if (S.sb_bad) {
		info("repair: refused: the superblock problems above are not repairable; nothing was written");
		return -1;
	}
	if (S.incomplete) {
		info("repair: refused: the check could not finish; nothing was written");
		return -1;
	}
	if (!S.prio_bad && !S.uuid_fallback && !S.state_bad && !drop) {
		info("repair: nothing to repair");
		return 0;
	}
	if (drop && dirty_at_stake() && !S.force) {
		refuse_dirty(c);
		return -1;
	}

	if (S.prio_bad && S.other_prio_ok) {
		sb.prio_current = htole32(!pcur);
		tmp = sb.prio_csum;
		sb.prio_csum = sb.prio_csum_other;
		sb.prio_csum_other = tmp;
	} else if (S.prio_bad) {
		fresh = fresh_prio(c);
		if (!fresh) {
			bch_err("out of memory");
			goto fail;
		}
		if (write_region(c, fresh, bch_prio_bytes(c), le64toh(sb.prio_offset[!pcur])))
			goto fail;
		sb.prio_current = htole32(!pcur);
		sb.prio_csum_other = sb.prio_csum;
		sb.prio_csum = htole32(bch_csum(fresh, bch_prio_bytes(c)));
	}
	if (drop) {
		/* Never over the copy we start from: written to the other one. */
		uuids = malloc(bch_uuid_bytes(c));
		if (!uuids) {
			bch_err("out of memory");
			goto fail;
		}
		memcpy(uuids, base, bch_uuid_bytes(c));
		for (i = 0; i < BCH_UUID_SLOTS; i++) {
			if (le32toh(uuids[i].flags) & BCH_UUID_VALID) {
				/* as the kernel: a slot that ran out of epochs is freed */
				if (!bch_slot_bump_epoch(&uuids[i]))
					bch_slot_free(&uuids[i]);
				bumped++;
			}
		}
		if (bch_uuids_write(&c->dev, &sb, uuids, ugood))
			goto fail;
		bch_sb_clear_root(&sb);
		sb.btree_level = 0;
		/*
		 * The journal goes too: replay restarts where the next entry
		 * would go, with a seq above anything in the ring, so that no
		 * entry on disk can ever be replayed.
		 */
		if (bch_journal_max_seq(&c->dev, &c->sb, &jmax))
			goto fail;
		jseq = S.jnext_seq > jmax ? S.jnext_seq : jmax + 1;
		sb.journal_seq = htole64(jseq);
		sb.journal_pos = htole64(S.jnext_pos);
	} else if (S.uuid_fallback) {
		sb.uuid_current = htole32(!ucur);
		tmp = sb.uuid_csum;
		sb.uuid_csum = sb.uuid_csum_other;
		sb.uuid_csum_other = tmp;
	}
	/* The bucket states no longer describe what the index will be. */
	sb.state_seq = 0;
	if (bch_sb_write(&c->dev, &sb))
		goto fail;

	if (S.prio_bad && S.other_prio_ok)
		info("repair: switched to bucket array copy %u", !pcur);
	else if (S.prio_bad)
		info("repair: neither bucket array copy was usable: wrote a fresh one as copy %u",
		     !pcur);
	if (S.uuid_fallback)
		info("repair: went back to the previous UUID table (copy %u)", ugood);
	if (S.state_bad && !drop)
		info("repair: the bucket states are no longer used: the next open counts the whole index");
	if (drop)
		info("repair: dropped the index and invalidated the data of %u UUID slot%s (written as UUID table copy %u)%s",
		     bumped, bumped == 1 ? "" : "s", !ugood,
		     dirty_at_stake() ? "" : "; it held no dirty data: the origins hold all the data");
	if (drop)
		info("repair: emptied the journal: the next entry goes to ring sector %llu with seq %llu",
		     (unsigned long long)S.jnext_pos, (unsigned long long)jseq);
	if (drop && dirty_at_stake())
		report_lost(c);
	ret = 0;
	goto out;
fail:
	info("repair: failed: %s", bch_strerror());
out:
	free(fresh);
	free(uuids);
	return ret;
}

/* Upgrade. */

/* Why what the check found forbids an upgrade, or NULL: the index it copies must be trusted. */
static const char *upgrade_refusal(void)
{
	if (S.incomplete)
		return "the check could not finish";
	if (S.sb_bad)
		return "the superblock has problems the kernel refuses";
	if (S.prio_bad)
		return "the bucket array cannot be trusted";
	if (S.uuid_bad || S.uuid_fallback)
		return "the UUID table cannot be trusted";
	if (S.index_bad || S.dirty_unknown[0] || S.dirty_partial[0])
		return "the index cannot be trusted";
	/* wrong bucket states alone: the upgraded cache counts the index */
	if (S.errors > S.state_errors)
		return "the check found inconsistencies";
	return NULL;
}

/* What was copied, or would be (@done: written). */
static void upgrade_report(const struct bch_cache *c, const struct bch_upgrade *u, bool done)
{
	char size[BCH_SIZE_STR_LEN], dirty[BCH_SIZE_STR_LEN];
	const char *verb = done ? "wrote" : "would write";

	bch_format_size(u->sectors << BCH_SECTOR_SHIFT, size);
	bch_format_size(u->dirty_sectors << BCH_SECTOR_SHIFT, dirty);
	info("upgrade: the index as the next attach builds it: %llu live key%s (%s, %s of it dirty), %s + %llu journal key%s replayed",
	     (unsigned long long)u->keys, u->keys == 1 ? "" : "s", size, dirty,
	     bch_sb_has_root(&c->sb) ? "checkpoint" : "no checkpoint",
	     (unsigned long long)u->rp.keys, u->rp.keys == 1 ? "" : "s");
	if (!u->depth)
		info("upgrade: no live key: no index to write (a root of size 0, as a fresh format has)");
	else
		info("upgrade: %s a version 3 index of %u level%s, %llu node%s, into free buckets (%llu of them hold no data, no index node and no journal)",
		     verb, u->depth, u->depth == 1 ? "" : "s", (unsigned long long)u->nodes,
		     u->nodes == 1 ? "" : "s", (unsigned long long)u->free);
	info("upgrade: %s the bucket array (copy %u) and the superblock: version 3, member 0 of a set of one, the journal empty from ring sector %llu (seq %llu), the bucket states counted at the next open, the %llu bucket%s of the version 2 index free",
	     verb, u->prio_copy, (unsigned long long)u->jpos,
	     (unsigned long long)u->jseq, (unsigned long long)u->old_nodes,
	     u->old_nodes == 1 ? "" : "s");
}

static void upgrade_no_room(const struct bch_upgrade *u)
{
	info("upgrade: refused: the version 3 index needs %llu free buckets (%llu node%s, and %llu more while it is built), and only %llu hold no data, no index node and no journal: nothing was written",
	     (unsigned long long)u->need, (unsigned long long)u->nodes, u->nodes == 1 ? "" : "s",
	     (unsigned long long)(u->need - u->nodes), (unsigned long long)u->free);
	info("upgrade: attach the cache and free some (dmsetup message <dev> 0 gc drops what the index no longer names, invalidate an origin's cached data), then try again");
}

/* After the check: the upgrade, or why not. An exit status. */
static int do_upgrade(struct bch_cache *c)
{
	const char *why = upgrade_refusal();
	struct bch_upgrade u;
	int ret = EXIT_UNREADABLE;

	if (why) {
		info("upgrade: refused: %s (see above): nothing was written", why);
		return EXIT_UNREADABLE;
	}
	if (S.state_bad)
		note("upgrade: the bucket states do not cover the index: the upgraded cache does not use them (the next open counts the index)");
	if (bch_upgrade_build(&u, c)) {
		info("upgrade: refused: %s: nothing was written", bch_strerror());
		goto out;
	}
	if (!bch_upgrade_fits(&u)) {
		upgrade_no_room(&u);
		goto out;
	}
	if (S.dry_run) {
		upgrade_report(c, &u, false);
		info("upgrade: --dry-run: nothing was written");
		ret = EXIT_CLEAN;
		goto out;
	}
	if (bch_upgrade_write(&u)) {
		info("upgrade: failed: %s: the superblock was not written, the cache is the version 2 one it was",
		     bch_strerror());
		goto out;
	}
	if (bch_upgrade_commit(&u)) {
		info("upgrade: failed: %s: if the superblock was not written, the cache is the version 2 one it was (check it)",
		     bch_strerror());
		goto out;
	}
	upgrade_report(c, &u, true);
	info("%s: upgraded to format version 3", c->dev.path);
	ret = EXIT_CLEAN;
out:
	bch_upgrade_free(&u);
	return ret;
}

/* --upgrade's arguments: one device, no repair. True if they are wrong (said). */
static bool upgrade_usage(unsigned int n)
{
	const char *why = NULL;

	if (S.dry_run && !S.upgrade)
		why = "--dry-run only goes with --upgrade";
	else if (S.upgrade && (S.repair || S.data))
		why = "--upgrade does not go with --repair or --data";
	else if (S.upgrade && n != 1)
		why = "--upgrade takes one device (a version 2 cache is one device)";
	if (!why)
		return false;
	fprintf(stderr, PROG ": %s\n", why);
	usage(stderr);
	return true;
}

/* Open the @n devices named and make them the set; a set is only read. */
static int open_set(struct bch_cache *c, char **paths, unsigned int n)
{
	if (n > 1)
		S.repair_rw = false;
	return bch_set_open(c, paths, n, open_cache);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "repair",	no_argument, NULL, 'r' },
		{ "force",	no_argument, NULL, 'f' },
		{ "verbose",	no_argument, NULL, 'v' },
		{ "quiet",	no_argument, NULL, 'q' },
		{ "progress",	no_argument, NULL, 'P' },
		{ "data",	no_argument, NULL, 'd' },
		{ "upgrade",	no_argument, NULL, 'U' },
		{ "dry-run",	no_argument, NULL, 'n' },
		{ "help",	no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const struct kind *kinds[] = { &k_sb, &k_prio, &k_uuid, &k_journal, &k_node, &k_key,
					      &k_data, &k_csum, &k_lost };
	struct bch_cache c, *m;
	const char *path;
	unsigned int i, n;
	bool progress = false;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "rfvqPdUnh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			S.repair = true;
			S.repair_rw = true;
			break;
		case 'f':
			S.force = true;
			break;
		case 'v':
			S.verbose = true;
			break;
		case 'q':
			S.quiet = true;
			break;
		case 'P':
			progress = true;
			break;
		case 'd':
			S.data = true;
			break;
		case 'U':
			S.upgrade = true;
			break;
		case 'n':
			S.dry_run = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_CLEAN;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	n = argc - optind;
	if (!n || n > BCH_MAX_MEMBERS) {
		fprintf(stderr, PROG ": %s\n", !n ? "no device given" : "too many devices");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (S.force && !S.repair) {
		fprintf(stderr, PROG ": --force only goes with --repair\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (upgrade_usage(n))
		return EXIT_USAGE;
	if (S.upgrade && !S.dry_run)
		S.repair_rw = true;	/* exclusive: refused while a table holds it */
	if (S.quiet)
		S.verbose = false;
	else
		bch_progress_setup(progress);
	path = argv[optind];

	if (S.upgrade && bch_dev_in_use(path)) {
		/* --dry-run opens it read-only: refused as the upgrade would be */
		info("upgrade: refused: %s is in use (by a dm-bcache table?): nothing was written",
		     path);
		return EXIT_UNREADABLE;
	}
	if (open_set(&c, argv + optind, n)) {
		if (!S.quiet)
			fprintf(stderr, PROG ": %s\n", bch_strerror());
		return EXIT_UNREADABLE;
	}
	if (S.upgrade && le32toh(c.sb.version) != 2) {
		info("upgrade: refused: %s is already format version %u: nothing to upgrade, nothing was written",
		     path, le32toh(c.sb.version));
		bch_cache_close(&c);
		return EXIT_UNREADABLE;
	}
	S.several = c.nr_members > 1;
	for (i = 0; i < n; i++)
		if (!S.repair_rw && !bch_missing_name(argv[optind + i]) &&
		    bch_dev_in_use(argv[optind + i]))
			note("%s is in use (by a dm-bcache table?): the check may see metadata change under it",
			     argv[optind + i]);

	check_sb(&c);
	S.other_prio_ok = true;
	if (bch_set_read_meta(&c)) {
		if (!S.quiet)
			fprintf(stderr, PROG ": %s\n", bch_strerror());
		bch_cache_close(&c);
		return EXIT_UNREADABLE;
	}
	bch_for_each_live_member(m, &c) {
		if (check_prio(m)) {
			if (!S.quiet)
				fprintf(stderr, PROG ": %s\n", bch_strerror());
			bch_cache_close(&c);
			return EXIT_UNREADABLE;
		}
	}
	if (check_uuids(&c) || check_journal(&c)) {
		if (!S.quiet)
			fprintf(stderr, PROG ": %s\n", bch_strerror());
		bch_cache_close(&c);
		return EXIT_UNREADABLE;
	}
	check_index(&c);
	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		kind_summary(kinds[i]);

	ret = S.errors ? EXIT_PROBLEMS : EXIT_CLEAN;
	if (!S.quiet && S.several)
		printf("cache set of %s (%u members): %s\n", c.dev.path, c.nr_members,
		       S.errors ? "inconsistent" : "consistent");
	else if (!S.quiet)
		printf("%s: %s\n", path, S.errors ? "inconsistent" : "consistent");
	if (S.errors && S.repair)
		do_repair(&c);
	if (S.upgrade)
		ret = do_upgrade(&c);
	free(S.uuid_other);
	bch_cache_close(&c);
	return ret;
}
