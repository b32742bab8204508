// SPDX-License-Identifier: GPL-2.0
/*
 * bcache-dump: print the index (the checkpoint with the journal replayed
 * over it, as the next attach builds it), the journal, the UUID slots and
 * a bucket summary of a dm-bcache cache device, for bug reports. Reads
 * only.
 *
 * Every line is "kind fields...", lines starting with '#' are comments;
 * the formats are in the man page. A cache set of several devices is
 * dumped with every member named: a pointer is then MEMBER:BUCKET+OFFSET.
 * A degraded set is dumped without the members it lost (not read: their
 * copies stale, as the kernel judges them), and a set without those it
 * removed; a member that joins at the next open is named with it (only
 * its superblock is read).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define PROG "bcache-dump"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--btree] [--journal] [--uuids] [--buckets] [-P] <device> [<device>...]\n"
		"Print the metadata of a dm-bcache cache device (default: all of it);\n"
		"of a cache set of several devices, with every member named (but those\n"
		"it marks failed or removed; - for one whose device is lost).\n\n"
		"  -b, --btree    the index: one line per node and per key\n"
		"  -j, --journal  the journal: one line per entry and per key\n"
		"  -u, --uuids    the UUID slots in use\n"
		"  -B, --buckets  bucket counts by state, and a generation histogram\n"
		"  -P, --progress show progress on stderr even when it is not a\n"
		"                 terminal (on a terminal it is shown anyway)\n"
		"  -h, --help     show this help\n\n"
		"Exit status: 0 printed, 1 some metadata is bad (printed as far as\n"
		"possible), 2 bad arguments, 3 unreadable or not a dm-bcache device.\n");
}

/* What the walk collected: nodes in visiting order, each leaf's keys. */
struct dnode {
	struct bch_bkey	key;
	size_t		first, nkeys;	/* into keys[] */
};

struct dump {
	struct dnode	*nodes;
	size_t		nnodes, nodes_size;
	struct bch_bkey	*keys;
	size_t		nkeys, keys_size;
	bool		oom;
};

static bool grow(void **p, size_t *size, size_t n, size_t elem)
{
	size_t want = *size ? 2 * *size : 1024;
	void *q;

	if (n < *size)
		return true;
	q = realloc(*p, want * elem);
	if (!q)
		return false;
	*p = q;
	*size = want;
	return true;
}

static void dump_fn(struct bch_btree *b, const struct bch_bkey *k, bool is_node, void *arg)
{
	struct dump *d = arg;

	(void)b;
	if (is_node) {
		if (!grow((void **)&d->nodes, &d->nodes_size, d->nnodes, sizeof(*d->nodes))) {
			d->oom = true;
			return;
		}
		d->nodes[d->nnodes++] = (struct dnode){ *k, d->nkeys, 0 };
		return;
	}
	/* a leaf's keys come right after the leaf */
	if (!d->nnodes || !grow((void **)&d->keys, &d->keys_size, d->nkeys, sizeof(*d->keys))) {
		d->oom = true;
		return;
	}
	d->keys[d->nkeys++] = *k;
	d->nodes[d->nnodes - 1].nkeys++;
}

static int dump_io(struct bch_btree *b, bool write, u64 bucket, u32 offset, void *buf,
		   u32 sectors)
{
	if (write)
		return -EROFS;
	return bch_index_io(b, false, bucket, offset, buf, sectors);
}

/*
 * No key_dead: the walk sees dead keys too (holes are always left out).
 * Nodes the journal replay makes stay in memory.
 */
static const struct bch_btree_ops dump_ops = {
	.alloc	= bch_index_mem_alloc,
	.free	= bch_index_mem_free,
	.io	= dump_io,
};

static int cmp_key(const void *l, const void *r)
{
	const struct bch_bkey *a = l, *b = r;

	if (a->inode != b->inode)
		return a->inode < b->inode ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

static void print_flags(u8 flags)
{
	static const struct { u8 bit; const char *name; } bits[] = {
		{ BCH_KEY_DIRTY, "dirty" }, { BCH_KEY_CSUM, "csum" }, { BCH_KEY_HOLE, "hole" },
	};
	const char *sep = "";
	unsigned int i;

	if (!flags) {
		fputs("-", stdout);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		if (flags & bits[i].bit) {
			printf("%s%s", sep, bits[i].name);
			sep = ",";
			flags &= ~bits[i].bit;
		}
	}
	if (flags)
		printf("%s0x%x", sep, flags);
}

static bool corrupt_sets;

/* After a crash a torn set is what the kernel was appending: not corrupt. */
static void dump_bad_set(struct bch_cache *c, u64 bucket, unsigned int idx, unsigned int level)
{
	printf("# index: node in %s (level %u): set %u %s, its keys are not shown\n",
	       bch_bucket_name(c, bch_node_bucket_dev(bucket), bch_node_bucket_nr(bucket)),
	       level, idx,
	       c->clean ? "is corrupt" : "is torn (not shut down cleanly)");
	if (c->clean)
		corrupt_sets = true;
}

/* A journal key: the refusal as one word, or NULL. */
static const char *jkey_refused(struct bch_cache *c, const struct bch_jentry *e, u32 idx)
{
	static char word[64];
	const char *why = bch_set_jkey_invalid(c, e, idx);
	size_t i;

	if (!why)
		return NULL;
	snprintf(word, sizeof(word), "bad:%s", why);
	for (i = 0; word[i]; i++)
		if (word[i] == ' ')
			word[i] = '-';
	return word;
}

static void print_key(struct bch_cache *c, const char *kind, const struct bch_bkey *k,
		      const char *state);

/* Key @k points to a member no key may point to (removed, or joining): counted in @per. */
static void stray_count(const struct bch_cache *c, const struct bch_bkey *k, size_t *per)
{
	int dev = bch_key_stray_ptr(c, k);

	if (dev >= 0)
		per[dev]++;
}

/* The keys counted in @per (none should be): a comment per member (@what NULL: none); how many. */
static size_t stray_report(const struct bch_cache *c, const size_t *per, const char *what)
{
	size_t total = 0;
	unsigned int i;

	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		total += per[i];
		if (per[i] && what)
			printf("# %s: %zu key(s) point to %s\n", what, per[i],
			       bch_stray_why(c, i));
	}
	return total;
}

/* Where the journal is damaged (the kernel drops the index), once walked. */
static struct {
	bool		damaged;
	uint64_t	seq, later_seq, later_pos;
} jdamage;

/* The journal as replay finds it; journal keys in good entries, or -1. */
static int64_t print_journal(struct bch_cache *c, bool print, bool *bad)
{
	const struct bch_sb_disk *sb = &c->sb;
	struct bch_journal j;
	struct bch_jentry e;
	struct bch_bkey k;
	size_t stray[BCH_MAX_MEMBERS] = { 0 };
	const char *state;
	int64_t keys;
	u32 i;
	int r;

	if (bch_journal_open(&j, &c->dev, sb)) {
		printf("# journal: %s\n", bch_strerror());
		*bad = true;
		return -1;
	}
	if (print) {
		printf("# journal: %u buckets from bucket %llu; replay from ring sector %llu, seq %llu\n",
		       le32toh(sb->journal_buckets), (unsigned long long)le64toh(sb->journal_first),
		       (unsigned long long)le64toh(sb->journal_pos),
		       (unsigned long long)le64toh(sb->journal_seq));
		printf("# jset SEQ RING_SECTOR BUCKET+OFFSET SECTORS NKEYS\n");
		if (c->nr_members > 1)
			printf("# jkey SLOT/EPOCH START END MEMBER:BUCKET+OFFSET[,...] GEN[,...] FLAGS STATE\n");
		else
			printf("# jkey SLOT/EPOCH START END BUCKET+OFFSET GEN FLAGS STATE\n");
	}
	while ((r = bch_journal_next(&j, &e)) > 0) {
		if (print)
			printf("jset %llu %llu %llu+%llu %u %u\n", (unsigned long long)e.seq,
			       (unsigned long long)e.pos,
			       (unsigned long long)(le64toh(sb->journal_first) +
						    e.pos / c->bucket_size),
			       (unsigned long long)(e.pos % c->bucket_size), e.sectors, e.nkeys);
		for (i = 0; i < e.nkeys; i++) {
			state = jkey_refused(c, &e, i);
			if (state)
				*bad = true;
			if (!bch_jentry_key(&e, i, &k))
				memset(&k, 0, sizeof(k));
			else if (!state)
				stray_count(c, &k, stray);
			if (!print)
				continue;
			if (!state)
				state = k.flags & BCH_KEY_HOLE ? "hole" :
					bch_key_state_names[bch_key_state(c, &k)];
			print_key(c, "jkey", &k, state);
		}
	}
	if (r < 0) {
		printf("# journal: %s\n", bch_strerror());
		*bad = true;
		bch_journal_close(&j);
		return -1;
	}
	if (print)
		printf("# journal: %llu entries, %llu keys; ends where seq %llu would be: %s\n",
		       (unsigned long long)j.entries, (unsigned long long)j.keys,
		       (unsigned long long)j.seq, j.end_why);
	if (stray_report(c, stray, print ? "journal" : NULL))
		*bad = true;
	if (j.damaged) {
		*bad = true;
		jdamage.damaged = true;
		jdamage.seq = j.seq;
		jdamage.later_seq = j.later_seq;
		jdamage.later_pos = j.later_pos;
		if (print)
			printf("# journal: damaged before entry %llu: a later entry (seq %llu at ring sector %llu) is good; the kernel drops the whole index\n",
			       (unsigned long long)j.seq, (unsigned long long)j.later_seq,
			       (unsigned long long)j.later_pos);
	}
	keys = j.keys;
	bch_journal_close(&j);
	return keys;
}

/* Does every member's current bucket array pass its checksum? */
static bool prio_ok(const struct bch_cache *c)
{
	struct bch_cache *m;

	bch_for_each_live_member(m, c)
		if (!m->prio_csum_ok)
			return false;
	return true;
}

/* Load and walk the index; false (with a comment printed) if not possible. */
static bool walk_index(struct bch_cache *c, struct dump *d, struct bch_replay *rp, bool *bad)
{
	int64_t jkeys = print_journal(c, false, bad);
	size_t stray[BCH_MAX_MEMBERS] = { 0 }, i;
	int r;

	if (jkeys < 0) {
		printf("# index: not loaded: the journal cannot be read\n");
		return false;
	}
	if (!bch_sb_has_root(&c->sb) && !jkeys && !jdamage.damaged) {
		printf("# index: none (nothing is cached)\n");
		return false;
	}
	if (!prio_ok(c) || !c->uuid_csum_ok) {
		printf("# index: not loaded: the %s fails its checksum\n",
		       prio_ok(c) ? "UUID table" : "bucket array");
		*bad = true;
		return false;
	}
	c->bad_set = dump_bad_set;
	r = bch_index_load(c, &dump_ops);
	if (corrupt_sets)
		*bad = true;
	if (r) {
		printf("# index: cannot be loaded: %s\n", c->load_msg);
		*bad = true;
		return false;
	}
	r = bch_index_replay(c, rp);
	if (r) {
		printf("# index: replaying the journal failed: %s\n", c->load_msg);
		*bad = true;
		return false;
	}
	if (rp->bad)
		printf("# index: the journal holds a key the kernel refuses (see the journal): it drops the whole index; %llu key(s) from that one on not replayed here\n",
		       (unsigned long long)rp->bad);
	if (jdamage.damaged)
		printf("# index: the journal is damaged before entry %llu (see the journal): the kernel drops the whole index; replayed here up to there\n",
		       (unsigned long long)jdamage.seq);
	r = bch_btree_gc(&c->b, dump_fn, d);
	if (r || d->oom) {
		printf("# index: walk failed: %s\n", r ? strerror(-r) : "out of memory");
		*bad = true;
		return false;
	}
	for (i = 0; i < d->nkeys; i++)
		stray_count(c, &d->keys[i], stray);
	if (stray_report(c, stray, "index"))
		*bad = true;
	return true;
}

/*
 * A set of several: every pointer, "MEMBER:BUCKET+OFFSET" comma-separated,
 * then their gens the same way ("-" for none, as a hole has).
 */
static void print_ptrs(struct bch_cache *c, const struct bch_bkey *k)
{
	unsigned int i;

	for (i = 0; i < k->nptrs; i++)
		printf("%s%u:%llu+%llu", i ? "," : "", bch_ptr_dev(k->ptr[i]),
		       (unsigned long long)(bch_ptr_sector(k->ptr[i]) / c->bucket_size),
		       (unsigned long long)(bch_ptr_sector(k->ptr[i]) % c->bucket_size));
	fputs(k->nptrs ? " " : "- ", stdout);
	for (i = 0; i < k->nptrs; i++)
		printf("%s%u", i ? "," : "", bch_ptr_gen(k->ptr[i]));
	fputs(k->nptrs ? " " : "- ", stdout);
}

static void print_key(struct bch_cache *c, const char *kind, const struct bch_bkey *k,
		      const char *state)
{
	printf("%s %u/%u %llu %llu ", kind, bch_inode_slot(k->inode),
	       bch_inode_epoch(k->inode), (unsigned long long)bch_key_start(k),
	       (unsigned long long)k->end);
	if (c->nr_members > 1)
		print_ptrs(c, k);
	else
		printf("%llu+%llu %u ", (unsigned long long)(bch_key_sector(k) / c->bucket_size),
		       (unsigned long long)(bch_key_sector(k) % c->bucket_size), bch_key_gen(k));
	print_flags(k->flags);
	printf(" %s\n", state);
}

static void print_btree(struct bch_cache *c, struct dump *d, const struct bch_replay *rp)
{
	struct bch_bkey root;
	/* the ancestors of the next node in the walk (its preorder), by max key */
	struct bch_bkey up[32];
	unsigned int depth = 0, top = bch_btree_depth(&c->b) - 1, level;
	size_t i, j;

	if (bch_sb_root(&c->sb, &root) && root.size)
		printf("# index: checkpoint root %s gen %u level %u",
		       bch_bucket_name(c, bch_ptr_dev(root.ptr[0]),
				       bch_key_sector(&root) / c->bucket_size),
		       bch_key_gen(&root), le32toh(c->sb.btree_level));
	else
		printf("# index: no checkpoint");
	printf(", %llu journal key(s) replayed; %u level(s), %zu node(s), %zu key(s) (holes not listed)\n",
	       (unsigned long long)rp->keys, bch_btree_depth(&c->b), d->nnodes, d->nkeys);
	if (c->nr_members > 1) {
		printf("# node LEVEL MEMBER:BUCKET GEN MAX_SLOT/EPOCH:MAX_END\n");
		printf("# key SLOT/EPOCH START END MEMBER:BUCKET+OFFSET[,...] GEN[,...] FLAGS STATE\n");
	} else {
		printf("# node LEVEL BUCKET GEN MAX_SLOT/EPOCH:MAX_END\n");
		printf("# key SLOT/EPOCH START END BUCKET+OFFSET GEN FLAGS STATE\n");
	}
	for (i = 0; i < d->nnodes; i++) {
		const struct dnode *n = &d->nodes[i];
		unsigned int dev = bch_ptr_dev(n->key.ptr[0]);
		u64 bucket = bch_key_sector(&n->key) / c->bucket_size;

		level = top - depth;
		if (level && depth < ARRAY_SIZE(up))
			up[depth++] = n->key;
		/* a parent's last child ends where the parent does */
		while (!level && depth && !bch_bkey_cmp(&up[depth - 1], &n->key))
			depth--;
		if (bch_index_mem_bucket(c, bch_node_bucket_id(dev, bucket)))
			printf("node %u - - ", level);
		else if (c->nr_members > 1)
			printf("node %u %u:%llu %u ", level, dev, (unsigned long long)bucket,
			       bch_key_gen(&n->key));
		else
			printf("node %u %llu %u ", level, (unsigned long long)bucket,
			       bch_key_gen(&n->key));
		printf("%u/%u:%llu\n", bch_inode_slot(n->key.inode), bch_inode_epoch(n->key.inode),
		       (unsigned long long)n->key.end);
		if (n->nkeys)
			qsort(d->keys + n->first, n->nkeys, sizeof(*d->keys), cmp_key);
		for (j = n->first; j < n->first + n->nkeys; j++)
			print_key(c, "key", &d->keys[j],
				  bch_key_state_names[bch_key_state(c, &d->keys[j])]);
	}
}

/* Labels come from disk: escaped, never raw; spaces too, to keep fields. */
static void print_label(const u8 *label, size_t len)
{
	size_t i;

	if (!len || !label[0]) {
		fputs("-", stdout);
		return;
	}
	for (i = 0; i < len && label[i]; i++) {
		if (label[i] > ' ' && label[i] < 0x7f && label[i] != '\\')
			putchar(label[i]);
		else
			printf("\\x%02x", label[i]);
	}
}

/* "ok" or "BAD" for the copy that is not current. */
static const char *other_ok(struct bch_cache *c, __le64 offset, __le32 sectors, __le32 csum)
{
	u32 got;

	if (bch_region_csum(&c->dev, le64toh(offset), le32toh(sectors), &got))
		return "unreadable";
	return got == le32toh(csum) ? "ok" : "BAD";
}

static void print_uuids(struct bch_cache *c)
{
	unsigned int i, shown = 0, cur = le32toh(c->sb.uuid_current);
	char s[BCH_UUID_STR_LEN];

	printf("# uuids: copy %u (current), checksum %s; copy %u (previous), checksum %s\n",
	       cur, c->uuid_csum_ok ? "ok" : "BAD (contents untrusted)", !cur,
	       other_ok(c, c->sb.uuid_offset[!cur], c->sb.uuid_sectors, c->sb.uuid_csum_other));
	printf("# slot INDEX UUID EPOCH FLAGS SECTORS FINGERPRINT FIRST_ATTACH LAST_ATTACH LABEL\n");
	for (i = 0; i < BCH_UUID_SLOTS; i++) {
		const struct bch_uuid_disk *u = &c->uuids[i];
		u32 flags = le32toh(u->flags);

		if (!flags && !u->epoch)
			continue;	/* never used */
		shown++;
		bch_uuid_format(u->uuid, s);
		printf("slot %u %s %u ", i, s, le32toh(u->epoch));
		if (!flags)
			fputs("free", stdout);
		bch_uuid_print_flags(flags);
		printf(" %llu ", (unsigned long long)le64toh(u->sectors));
		if (le32toh(u->flags) & BCH_UUID_FINGERPRINT)
			printf("0x%08x", le32toh(u->fingerprint));
		else
			fputs("-", stdout);
		printf(" %llu %llu ", (unsigned long long)le64toh(u->first_attach),
		       (unsigned long long)le64toh(u->last_attach));
		print_label(u->label, sizeof(u->label));
		putchar('\n');
	}
	printf("# %u slot(s) used now or before, %u never used\n", shown, BCH_UUID_SLOTS - shown);
}

/*
 * Live copies of key @k on member @dev: sectors per bucket into @sectors,
 * the key's size if it has one (a set of several keeps the same data on
 * two members: each counts it).
 */
static u32 member_copies(const struct bch_cache *set, unsigned int dev,
			 const struct bch_bkey *k, u32 *sectors)
{
	unsigned int i;
	u32 n = 0;

	for (i = 0; i < k->nptrs; i++) {
		if (bch_ptr_dev(k->ptr[i]) != dev || bch_ptr_stale(set, k->ptr[i]))
			continue;
		sectors[bch_ptr_sector(k->ptr[i]) / set->bucket_size] += k->size;
		n = k->size;
	}
	return n;
}

/* Member @dev's buckets (@c) of the set @set; none of a lost member. */
static int print_buckets(struct bch_cache *set, unsigned int dev, const struct dump *d,
			 bool have_index)
{
	struct bch_cache *c = set->members[dev];
	u64 meta = 0, journal = 0, btree = 0, data = 0, free_ = 0, live = 0, i, gens[256] = { 0 };
	u64 dirty = 0;
	u64 pmin = U64_MAX, pmax = 0, psum = 0;
	u32 *sectors, n;
	u8 *node;
	size_t j;

	if (c->joining) {
		printf("member %u %s\n# buckets: a member that joins at the next open: not read\n",
		       dev, c->dev.path);
		return 0;
	}
	if (c->lost) {
		printf("member %u -\n# buckets: a %s member: not read\n", dev,
		       c->removed ? "removed" : "lost");
		return 0;
	}
	sectors = calloc(c->nbuckets, sizeof(*sectors));
	node = calloc(c->nbuckets, 1);
	if (!sectors || !node) {
		free(sectors);
		free(node);
		printf("# buckets: out of memory\n");
		return -1;
	}
	for (j = 0; have_index && j < d->nnodes; j++)
		if (bch_ptr_dev(d->nodes[j].key.ptr[0]) == dev &&
		    bch_key_sector(&d->nodes[j].key) / c->bucket_size < c->nbuckets)
			node[bch_key_sector(&d->nodes[j].key) / c->bucket_size] = 1;
	/* checkpoint nodes the replay split away: kept until the next checkpoint */
	for (i = 0; have_index && c->node_level && i < c->nbuckets; i++)
		if (c->node_level[i])
			node[i] = 1;
	for (j = 0; have_index && j < d->nkeys; j++) {
		const struct bch_bkey *k = &d->keys[j];

		if (bch_key_state(set, k) != BCH_KEY_LIVE)
			continue;
		n = member_copies(set, dev, k, sectors);
		live += n;
		if (k->flags & BCH_KEY_DIRTY)
			dirty += n;
	}
	for (i = 0; i < c->nbuckets; i++) {
		gens[c->prio[i].gen]++;
		if (i < c->first_bucket) {
			meta++;
		} else if (bch_journal_bucket(&c->sb, i)) {
			journal++;
		} else if (node[i]) {
			btree++;
		} else if (sectors[i]) {
			u16 p = le16toh(c->prio[i].prio);

			data++;
			pmin = p < pmin ? p : pmin;
			pmax = p > pmax ? p : pmax;
			psum += p;
		} else {
			free_++;
		}
	}
	if (set->nr_members > 1)
		printf("member %u %s\n", dev, c->dev.path);
	printf("# buckets: %llu of %u sectors; bucket array copy %u (current), checksum %s; copy %u (previous), checksum %s\n",
	       (unsigned long long)c->nbuckets, c->bucket_size, le32toh(c->sb.prio_current),
	       c->prio_csum_ok ? "ok" : "BAD (contents untrusted)", !le32toh(c->sb.prio_current),
	       other_ok(c, c->sb.prio_offset[!le32toh(c->sb.prio_current)], c->sb.prio_sectors,
			c->sb.prio_csum_other));
	if (!have_index)
		printf("# no index: every data bucket is free at the next attach\n");
	printf("state meta %llu\nstate journal %llu\nstate btree %llu\nstate data %llu\nstate free %llu\n",
	       (unsigned long long)meta, (unsigned long long)journal, (unsigned long long)btree,
	       (unsigned long long)data, (unsigned long long)free_);
	printf("live_sectors %llu\n", (unsigned long long)live);
	printf("dirty_sectors %llu\n", (unsigned long long)dirty);
	if (data)
		printf("prio data min %llu avg %llu max %llu\n", (unsigned long long)pmin,
		       (unsigned long long)(psum / data), (unsigned long long)pmax);
	printf("# gen GEN BUCKETS (generations in use)\n");
	for (i = 0; i < 256; i++)
		if (gens[i])
			printf("gen %llu %llu\n", (unsigned long long)i,
			       (unsigned long long)gens[i]);
	free(sectors);
	free(node);
	return 0;
}

/* The first comment, of member @i of the set @c. */
static void print_member(const struct bch_cache *c, unsigned int i)
{
	const struct bch_cache *m = c->members[i];
	char dev[BCH_UUID_STR_LEN], set[BCH_UUID_STR_LEN];

	bch_uuid_format(m->sb.uuid, dev);
	bch_uuid_format(c->sb.set_uuid, set);
	printf("# %s: dm-bcache cache %s, cache set %s", m->dev.path, dev, set);
	if (c->nr_members > 1)
		printf(", member %u of %u", i, c->nr_members);
	if (m->joining)
		printf(", joins at the next open (make-bcache --add formatted it, seq 0, at an index member 0's superblock marks %s): only its superblock is read\n",
		       le32toh(c->sb.members[i].state) == BCH_MEMBER_REMOVED ? "removed" : "unused");
	else if (m->removed)
		printf(", removed (member 0's superblock marks it: no key pointed to it any more): not named, not read\n");
	else if (m->lost && m->unmarked)
		printf(", named -: active in member 0's superblock, the next open marks it failed; shown as then, not read\n");
	else if (m->lost)
		printf(", failed (member 0's superblock marks it): not read\n");
	else
		printf(", %s, seq %llu\n", c->clean ? "clean" : "dirty",
		       (unsigned long long)le64toh(m->sb.seq));
}

/* A member opened read-only (bch_set_open()). */
static int open_member(struct bch_cache *m, const char *path)
{
	return bch_cache_open(m, path, false);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "btree",	no_argument, NULL, 'b' },
		{ "journal",	no_argument, NULL, 'j' },
		{ "uuids",	no_argument, NULL, 'u' },
		{ "buckets",	no_argument, NULL, 'B' },
		{ "progress",	no_argument, NULL, 'P' },
		{ "help",	no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool btree = false, journal = false, uuids = false, buckets = false, bad = false;
	bool have_index = false, progress = false;
	struct bch_replay rp = { 0 };
	struct dump d = { 0 };
	struct bch_cache c;
	unsigned int i, n;
	int opt;

	while ((opt = getopt_long(argc, argv, "bjuBPh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			btree = true;
			break;
		case 'j':
			journal = true;
			break;
		case 'u':
			uuids = true;
			break;
		case 'B':
			buckets = true;
			break;
		case 'P':
			progress = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	n = argc - optind;
	if (!n || n > BCH_MAX_MEMBERS) {
		fprintf(stderr, PROG ": %s\n", !n ? "no device given" : "too many devices");
		usage(stderr);
		return 2;
	}
	if (!btree && !journal && !uuids && !buckets) {
		btree = true;
		journal = true;
		uuids = true;
		buckets = true;
	}
	bch_progress_setup(progress);

	if (bch_set_open(&c, argv + optind, n, open_member)) {
		fprintf(stderr, PROG ": %s\n", bch_strerror());
		return 3;
	}
	if (bch_set_read_meta(&c)) {
		fprintf(stderr, PROG ": %s\n", bch_strerror());
		bch_cache_close(&c);
		return 3;
	}
	for (i = 0; i < c.nr_members; i++)
		print_member(&c, i);
	if (c.nr_members > 1)
		printf("# cache set: %s\n", bch_set_describe(&c));
	if (!prio_ok(&c) || !c.uuid_csum_ok)
		bad = true;

	if (btree || buckets)
		have_index = walk_index(&c, &d, &rp, &bad);
	if (btree && have_index)
		print_btree(&c, &d, &rp);
	if (journal)
		print_journal(&c, true, &bad);
	if (uuids)
		print_uuids(&c);
	for (i = 0; buckets && i < c.nr_members; i++)
		if (print_buckets(&c, i, &d, have_index))
			bad = true;

	free(d.nodes);
	free(d.keys);
	bch_cache_close(&c);
	return bad ? 1 : 0;
}
