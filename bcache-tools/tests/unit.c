// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side tests of bcache-tools: the library directly, and the two
 * binaries run on sparse temporary files. Usage: tests/unit <bindir>
 */
#include <endian.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

/* bcache-check's refusals of one member of a set of two */
#define SET_NO_MEMBER0 \
	"member 0 is not named: name it (it holds the index: the set cannot do without it)"
#define SET_ONE_MISSING \
	"1 member is missing: name every member of the set (- for one whose device is lost)"

#define SET_UUID	"0123abcd-4567-89ab-cdef-0123456789ab"
#define MiB		(1024ULL * 1024)

static const char *bindir;
static char tmpdir[32];		/* mkdtemp() fills in the X's */
static unsigned int passed, failed;
static char out[1 << 16], err[1 << 16];

__printf(2, 3) static bool check(bool ok, const char *fmt, ...);

static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (ok)
		passed++;
	else
		failed++;
	return ok;
}

/* A name inside the temp dir, valid until the end of the run. */
static const char *tpath(const char *name)
{
	static char bufs[64][PATH_MAX];
	static unsigned int n;
	char *p = bufs[n++ % ARRAY_SIZE(bufs)];

	snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);
	return p;
}

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Run a tool on NULL-terminated args, capturing out/err; exit status. */
static int runv(const char *tool, const char *const *args)
{
	char prog[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
	const char *argv[32];
	unsigned int argc = 0;
	int status;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/%s", bindir, tool);
	snprintf(outp, sizeof(outp), "%s/stdout", tmpdir);
	snprintf(errp, sizeof(errp), "%s/stderr", tmpdir);
	argv[argc++] = prog;
	while (argc < 31 && *args)
		argv[argc++] = *args++;
	argv[argc] = NULL;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		execv(prog, (char **)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	slurp(outp, out, sizeof(out));
	slurp(errp, err, sizeof(err));
	return WEXITSTATUS(status);
}

#define run(tool, ...) runv(tool, (const char *const[]){ __VA_ARGS__ })

static void make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, size)) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void rw_file(const char *path, void *buf, size_t len, uint64_t off,
		    bool write)
{
	struct bch_dev dev;
	int r;

	if (bch_dev_open(&dev, path, write)) {
		fprintf(stderr, "%s\n", bch_strerror());
		exit(1);
	}
	r = write ? bch_pwrite_all(&dev, buf, len, off) :
		bch_pread_all(&dev, buf, len, off);
	if (r) {
		fprintf(stderr, "%s\n", bch_strerror());
		exit(1);
	}
	bch_dev_close(&dev);
}

static void read_sb(const char *path, struct bch_sb_disk *sb)
{
	rw_file(path, sb, sizeof(*sb), BCH_SB_OFFSET, false);
}

static void write_sb(const char *path, struct bch_sb_disk *sb)
{
	sb->csum = htole32(bch_sb_csum(sb));
	rw_file(path, sb, sizeof(*sb), BCH_SB_OFFSET, true);
}

static void flip_byte(const char *path, uint64_t off)
{
	uint8_t b;

	rw_file(path, &b, 1, off, false);
	b ^= 0x5a;
	rw_file(path, &b, 1, off, true);
}

static void copy_file(const char *from, const char *to)
{
	static uint8_t buf[1 << 20];
	struct bch_dev src;
	uint64_t off, n;

	if (bch_dev_open(&src, from, false)) {
		fprintf(stderr, "%s\n", bch_strerror());
		exit(1);
	}
	make_file(to, src.size);
	for (off = 0; off < src.size; off += n) {
		n = src.size - off < sizeof(buf) ? src.size - off : sizeof(buf);
		rw_file(from, buf, n, off, false);
		rw_file(to, buf, n, off, true);
	}
	bch_dev_close(&src);
}

static bool has(const char *haystack, const char *needle)
{
	return !!strstr(haystack, needle);
}

static void test_crc32c(void)
{
	uint8_t buf[32];
	unsigned int i;

	check(bch_csum("123456789", 9) == 0xE3069283, "crc32c(\"123456789\")");
	check(bch_csum("", 0) == 0, "crc32c of nothing");
	/* RFC 3720 B.4 vectors */
	memset(buf, 0, 32);
	check(bch_csum(buf, 32) == 0x8A9136AA, "crc32c 32 zero bytes");
	memset(buf, 0xff, 32);
	check(bch_csum(buf, 32) == 0x62A8AB43, "crc32c 32 0xff bytes");
	for (i = 0; i < 32; i++)
		buf[i] = i;
	check(bch_csum(buf, 32) == 0x46DD794E, "crc32c 0..31");
	check(~crc32c(crc32c(~0U, buf, 13), buf + 13, 19) == 0x46DD794E,
	      "crc32c is incremental");
}

static void test_sizes(void)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "512", 512 }, { "4k", 4096 }, { "4K", 4096 },
		{ "512k", 512 * 1024 }, { "1M", MiB }, { "1G", 1024 * MiB },
		{ "2T", 2ULL << 40 }, { "0", 0 },
	};
	static const char * const bad[] = {
		"", "k", "4x", "-1", "+4", " 4", "4kk", "4 k", "0x10",
		"99999999999999999999", "16777216T",
	};
	unsigned int i;
	uint64_t v;

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		v = 1;
		check(!bch_parse_size(good[i].s, &v) && v == good[i].v,
		      "size '%s' = %llu", good[i].s,
		      (unsigned long long)good[i].v);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		check(bch_parse_size(bad[i], &v) && has(bch_strerror(), "invalid size"),
		      "size '%s' rejected", bad[i]);
}

static void test_uuid(void)
{
	uint8_t a[16], b[16];
	char s[BCH_UUID_STR_LEN];

	check(!bch_uuid_generate(a) && (a[6] >> 4) == 4 && (a[8] >> 6) == 2,
	      "random uuid is RFC 4122 v4");
	bch_uuid_generate(b);
	check(memcmp(a, b, 16), "two random uuids differ");
	bch_uuid_format(a, s);
	check(strlen(s) == 36 && !bch_uuid_parse(s, b) && !memcmp(a, b, 16),
	      "uuid format/parse round trip");
	check(!bch_uuid_parse("0123ABCD-4567-89AB-CDEF-0123456789AB", b) &&
	      b[0] == 0x01 && b[15] == 0xab, "uuid parse upper case");
	check(bch_uuid_parse("0123abcd-4567-89ab-cdef-0123456789a", b) &&
	      bch_uuid_parse("0123abcd4567-89ab-cdef-0123456789abc", b) &&
	      bch_uuid_parse("0123abcd-4567-89ab-cdef-0123456789ag", b),
	      "malformed uuids rejected");
	memset(b, 0, 16);
	check(bch_uuid_is_nil(b) && !bch_uuid_is_nil(a), "nil uuid detection");
}

/* Bucket array entries: zero but for the flags of the first ones. */
static bool region_is(const char *path, uint64_t sector, uint64_t sectors,
		      uint64_t first_meta, uint64_t journal_end)
{
	size_t len = sectors << BCH_SECTOR_SHIFT;
	struct bch_bucket_disk *p = malloc(len);
	uint64_t i;
	bool ok = true;

	rw_file(path, p, len, sector << BCH_SECTOR_SHIFT, false);
	for (i = 0; i < len / sizeof(*p); i++)
		if (p[i].prio || p[i].gen ||
		    p[i].flags != (i < first_meta ? BCH_BUCKET_META :
				   i < journal_end ? BCH_BUCKET_JOURNAL : 0))
			ok = false;
	free(p);
	return ok;
}

/* @sectors at @sector are all zero. */
static bool zero_at(const char *path, uint64_t sector, uint64_t sectors)
{
	static uint8_t buf[1 << 16];
	uint64_t off = sector << BCH_SECTOR_SHIFT, left = sectors << BCH_SECTOR_SHIFT;
	size_t n, i;

	while (left) {
		n = left < sizeof(buf) ? left : sizeof(buf);
		rw_file(path, buf, n, off, false);
		for (i = 0; i < n; i++)
			if (buf[i])
				return false;
		off += n;
		left -= n;
	}
	return true;
}

static uint32_t region_csum(const char *path, uint64_t sector,
			    uint64_t sectors)
{
	struct bch_dev dev;
	uint32_t csum = 0;

	if (bch_dev_open(&dev, path, false) ||
	    bch_region_csum(&dev, sector, sectors, &csum))
		exit(1);
	bch_dev_close(&dev);
	return csum;
}

/*
 * Every superblock field, and the metadata it points at; @journal the
 * journal buckets asked for, 0 for the default.
 */
static void check_layout_j(const char *path, uint32_t block, uint32_t bucket,
			   uint64_t size, time_t t0, uint32_t journal)
{
	uint64_t sectors = size >> BCH_SECTOR_SHIFT;
	uint64_t nb = sectors / bucket, fb = bch_first_bucket(nb, bucket);
	uint32_t jb = journal ? journal : bch_journal_default_buckets(nb);
	uint64_t prio = bch_prio_sectors(nb), uuid = bch_uuid_sectors();
	static const uint8_t zero[BCH_SB_SIZE];
	struct bch_sb_disk sb;
	uint8_t set[16];
	struct bch_dev dev;
	const char *what = path + strlen(tmpdir) + 1;
	int ok;

	bch_dev_open(&dev, path, false);
	ok = bch_sb_load(&dev, &sb);
	bch_dev_close(&dev);
	if (!check(!ok, "%s: superblock validates", what))
		printf("     %s\n", bch_strerror());

	bch_uuid_parse(SET_UUID, set);
	check(!memcmp(sb.magic, BCH_SB_MAGIC, 16), "%s: magic", what);
	check(le32toh(sb.version) == BCH_SB_VERSION, "%s: version", what);
	check(le32toh(sb.csum) == bch_sb_csum(&sb), "%s: sb csum", what);
	check((sb.uuid[6] >> 4) == 4 && (sb.uuid[8] >> 6) == 2,
	      "%s: uuid is v4", what);
	check(!memcmp(sb.set_uuid, set, 16), "%s: set_uuid", what);
	check(!strcmp((char *)sb.label, "cache one") &&
	      !memcmp(sb.label + 9, zero, 23), "%s: label", what);
	check(le64toh(sb.flags) == BCH_SB_CLEAN, "%s: flags clean", what);
	check(le64toh(sb.seq) == 1, "%s: seq 1", what);
	check(le64toh(sb.created) >= (uint64_t)t0 &&
	      le64toh(sb.created) <= (uint64_t)time(NULL), "%s: created", what);
	check(!sb.last_attach, "%s: last_attach 0", what);
	check(le32toh(sb.block_size) == block, "%s: block_size %u", what,
	      block);
	check(le32toh(sb.bucket_size) == bucket, "%s: bucket_size %u", what,
	      bucket);
	check(le64toh(sb.nbuckets) == nb, "%s: nbuckets %llu", what,
	      (unsigned long long)nb);
	check(le64toh(sb.first_bucket) == fb, "%s: first_bucket %llu", what,
	      (unsigned long long)fb);
	check(le64toh(sb.device_sectors) == sectors, "%s: device_sectors",
	      what);
	check(le64toh(sb.prio_offset[0]) == BCH_META_START &&
	      le64toh(sb.prio_offset[1]) == BCH_META_START + prio &&
	      le32toh(sb.prio_sectors) == prio, "%s: prio layout", what);
	check(le64toh(sb.uuid_offset[0]) == BCH_META_START + 2 * prio &&
	      le64toh(sb.uuid_offset[1]) == BCH_META_START + 2 * prio + uuid &&
	      le32toh(sb.uuid_sectors) == uuid, "%s: uuid layout", what);
	check(!sb.prio_current && !sb.uuid_current, "%s: current copies 0",
	      what);
	check(!memcmp(&sb.btree_root, zero, sizeof(sb.btree_root)) &&
	      !memcmp(&sb.btree_root3, zero, sizeof(sb.btree_root3)) &&
	      !sb.btree_level && !sb.btree_pad, "%s: no btree root", what);
	check(le64toh(sb.journal_first) == fb &&
	      le32toh(sb.journal_buckets) == jb && !sb.journal_pad,
	      "%s: journal of %u buckets at bucket %llu", what, jb,
	      (unsigned long long)fb);
	check(le64toh(sb.journal_seq) == 1 && !sb.journal_pos,
	      "%s: journal empty: seq 1, pos 0", what);
	check(!memcmp(sb.reserved, zero, sizeof(sb.reserved)),
	      "%s: reserved zero", what);

	check(region_is(path, BCH_META_START, prio, fb, fb + jb) &&
	      region_is(path, BCH_META_START + prio, prio, fb, fb + jb),
	      "%s: both bucket arrays: %llu meta buckets, %u journal buckets, rest zero",
	      what, (unsigned long long)fb, jb);
	check(zero_at(path, fb * bucket, (uint64_t)jb * bucket),
	      "%s: the journal ring is zeroed", what);
	check(le32toh(sb.prio_csum) == region_csum(path, BCH_META_START, prio),
	      "%s: prio_csum", what);
	check(region_is(path, BCH_META_START + 2 * prio, 2 * uuid, 0, 0),
	      "%s: both uuid tables zero", what);
	check(le32toh(sb.uuid_csum) ==
	      region_csum(path, BCH_META_START + 2 * prio, uuid),
	      "%s: uuid_csum", what);
}

static void check_layout(const char *path, uint32_t block, uint32_t bucket,
			 uint64_t size, time_t t0)
{
	check_layout_j(path, block, bucket, size, t0, 0);
}

static void test_format(void)
{
	const char *c = tpath("cache");
	const char *odd = tpath("odd");
	const uint64_t odd_size = 64 * MiB + 12345;
	char sector0[512], back[512];
	time_t t0 = time(NULL);

	make_file(c, 64 * MiB);
	memset(sector0, 'P', sizeof(sector0));
	rw_file(c, sector0, 512, 0, true);
	check(run("make-bcache", "-q", "-l", "cache one", "--cset-uuid",
		  SET_UUID, c, NULL) == 0 && !out[0] && !err[0],
	      "make-bcache 64 MiB, quiet: exit 0, silent");
	check_layout(c, 8, 1024, 64 * MiB, t0);
	rw_file(c, back, 512, 0, false);
	check(!memcmp(sector0, back, 512), "sector 0 left alone");

	check(run("bcache-super-show", c, NULL) == 0, "super-show exit 0");
	check(has(out, "sb.magic\tok\n") && has(out, "sb.version\t3\n") &&
	      has(out, "cset.uuid\t" SET_UUID "\n") &&
	      has(out, "dev.label\tcache one\n") &&
	      has(out, "sb.flags\tclean\n") && has(out, "sb.seq\t1\n") &&
	      has(out, "block_size\t4096 (8 sectors)\n") &&
	      has(out, "bucket_size\t524288 (1024 sectors)\n") &&
	      has(out, "nbuckets\t128\n") && has(out, "first_bucket\t1\n") &&
	      has(out, "data_buckets\t123\n") &&
	      has(out, "sb.journal_first\t1\n") &&
	      has(out, "sb.journal_buckets\t4\n") &&
	      has(out, "sb.journal_seq\t1\n") &&
	      has(out, "sb.journal_pos\t0\n") &&
	      has(out, "device_sectors\t131072\n") &&
	      has(out, "prio.current\t0\n") && has(out, " ok\n") &&
	      has(out, "uuid.current\t0\n") &&
	      has(out, "btree.root\tnone\n") && !has(out, "BAD") &&
	      !has(out, "slot."), "super-show prints the fields");

	make_file(odd, odd_size);
	check(run("make-bcache", "-w", "8k", "-b", "64k", "-l", "cache one",
		  "--cset-uuid", SET_UUID, odd, NULL) == 0 &&
	      has(out, "set uuid      " SET_UUID) && has(out, "nbuckets"),
	      "make-bcache 8k/64k on an odd size: exit 0 with a summary");
	check_layout(odd, 16, 128, odd_size, t0);

	make_file(odd, 64 * MiB);
	check(run("make-bcache", "-q", "--block=4k", "--bucket=4k",
		  "--label=cache one", "--cset-uuid=" SET_UUID, odd, NULL) == 0,
	      "make-bcache 4k buckets: exit 0");
	check_layout(odd, 8, 8, 64 * MiB, t0);

	/* 262144 buckets: the default journal is at its maximum */
	make_file(odd, 1024 * MiB);
	check(run("make-bcache", "-q", "-b", "4k", "-l", "cache one",
		  "--cset-uuid", SET_UUID, odd, NULL) == 0,
	      "make-bcache 1 GiB of 4k buckets: exit 0");
	check_layout_j(odd, 8, 8, 1024 * MiB, t0, BCH_MAX_JOURNAL_BUCKETS);

	make_file(odd, 64 * MiB);
	check(run("make-bcache", "-q", "-j", "8", "-l", "cache one",
		  "--cset-uuid", SET_UUID, odd, NULL) == 0,
	      "make-bcache -j 8: exit 0");
	check_layout_j(odd, 8, 1024, 64 * MiB, t0, 8);
	check(run("make-bcache", "-q", "--wipe", "--journal-buckets=2",
		  "-l", "cache one", "--cset-uuid", SET_UUID, odd, NULL) == 0,
	      "make-bcache --journal-buckets=2 (the minimum): exit 0");
	check_layout_j(odd, 8, 1024, 64 * MiB, t0, 2);
	check(run("bcache-super-show", odd, NULL) == 0 &&
	      has(out, "sb.journal_buckets\t2\n") &&
	      has(out, "data_buckets\t125\n"), "super-show: a journal of 2");
	/* 1 + 111 + 16 buckets: the largest journal that fits */
	check(run("make-bcache", "-q", "--wipe", "-j", "111", odd, NULL) == 0,
	      "make-bcache -j 111 on 128 buckets: exit 0");
	check(run("make-bcache", "-q", "--wipe", "-j", "112", odd, NULL) == 1 &&
	      has(err, "too small") && has(err, "and this journal") &&
	      has(err, "at least 67633152 bytes"),
	      "make-bcache -j 112 on 128 buckets: too small, says the minimum");

	/* the minimum the "too small" error states, and a bucket less */
	make_file(odd, 11010048);
	check(run("make-bcache", "-q", odd, NULL) == 0 &&
	      run("bcache-super-show", odd, NULL) == 0,
	      "make-bcache at exactly the stated minimum size: exit 0");
	make_file(odd, 11010048 - 512 * 1024);
	check(run("make-bcache", "-q", odd, NULL) == 1 &&
	      has(err, "too small"), "one bucket less: too small");
	unlink(odd);
}

/* Value errors are one line on stderr; usage errors add a hint. */
static void make_fails_v(int want, const char *msg, const char *const *args)
{
	int rc = runv("make-bcache", args);
	const char *nl = strchr(err, '\n');
	bool one_line = nl && !nl[1];

	if (!check(rc == want && has(err, msg) && (want != 1 || one_line),
		   "make-bcache %s %s: exit %d, \"%s\"", args[0],
		   args[0] && args[1] ? args[1] : "", want, msg))
		printf("     got %d: %s", rc, err);
}

#define make_fails(want, msg, ...) \
	make_fails_v(want, msg, (const char *const[]){ __VA_ARGS__ })

static void test_make_errors(void)
{
	const char *c = tpath("cache"), *s = tpath("small");
	struct bch_sb_disk before, after;
	uint8_t sector0[512], zero[512] = { 0 };

	make_file(s, 1 * MiB);
	make_fails(1, "between 4096 and 65536", "-w", "2k", s, NULL);
	make_fails(1, "block size 3072 is not a power of two", "-w", "3k", s,
		   NULL);
	make_fails(1, "between 4096 and 65536", "-w", "128k", s, NULL);
	make_fails(1, "bucket size 786432 is not a power of two", "-b", "768k",
		   s, NULL);
	make_fails(1, "multiple of the block size", "-w", "8k", "-b", "4k", s,
		   NULL);
	make_fails(1, "exceeds the maximum", "-b", "64M", s, NULL);
	make_fails(1, "invalid size 'lots'", "-b", "lots", s, NULL);
	make_fails(1, "at most 31", "-l", "0123456789abcdef0123456789abcdef",
		   s, NULL);
	make_fails(1, "invalid UUID", "--cset-uuid", "nope", s, NULL);
	make_fails(1, "must not be nil", "--cset-uuid",
		   "00000000-0000-0000-0000-000000000000", s, NULL);
	make_fails(1, "must be at least 11010048 bytes (10.5 MiB)", s, NULL);
	make_fails(1, "and this journal it must be at least 9961472 bytes", "-j", "2", s,
		   NULL);
	make_fails(1, "journal of 1 buckets: it must be 2 to 256 buckets", "-j", "1", s,
		   NULL);
	make_fails(1, "journal of 257 buckets: it must be 2 to 256", "-j", "257", s, NULL);
	make_fails(1, "journal of 0 buckets", "--journal-buckets=0", s, NULL);
	make_fails(1, "invalid journal size '4k'", "-j", "4k", s, NULL);
	make_fails(1, "invalid journal size '-4'", "-j", "-4", s, NULL);
	make_fails(1, "invalid journal size ''", "--journal-buckets=", s, NULL);
	make_fails(1, "invalid journal size '99999999999999999999999'", "-j",
		   "99999999999999999999999", s, NULL);
	make_fails(1, "No such file or directory", tpath("missing"), NULL);
	check(access(tpath("missing"), F_OK), "missing file not created");
	make_fails(2, "--help", "--bogus", s, NULL);
	make_fails(2, "no device given", "-q", NULL);
	make_fails(1, "are the same device", s, s, NULL);
	check(run("make-bcache", "-h", NULL) == 0 && has(out, "--wipe") &&
	      has(out, "--journal-buckets N"),
	      "make-bcache -h: exit 0, usage on stdout");
	unlink(s);

	/* c still holds the 64 MiB cache from test_format */
	read_sb(c, &before);
	make_fails(1, "use --wipe", c, NULL);
	read_sb(c, &after);
	check(!memcmp(&before, &after, sizeof(before)),
	      "refused re-format leaves the superblock alone");

	check(run("make-bcache", "-q", "--wipe", "-l", "cache one",
		  "--cset-uuid", SET_UUID, c, NULL) == 0,
	      "re-format with --wipe: exit 0");
	read_sb(c, &after);
	check(memcmp(before.uuid, after.uuid, 16), "--wipe: new device uuid");
	rw_file(c, sector0, 512, 0, false);
	check(!memcmp(sector0, zero, 512), "--wipe: sectors 0..7 zeroed");
	check_layout(c, 8, 1024, 64 * MiB, 0);
}

static void show_fails(const char *path, const char *msg, const char *what)
{
	int rc = run("bcache-super-show", path, NULL);

	if (!check(rc == 1 && has(err, msg), "super-show %s: exit 1, \"%s\"",
		   what, msg))
		printf("     got %d: %s", rc, err);
}

static void test_show_errors(void)
{
	const char *c = tpath("cache"), *b = tpath("bad");
	struct bch_sb_disk sb;

	make_file(b, 64 * MiB);
	show_fails(b, "no dm-bcache superblock (bad magic)", "zero file");
	make_file(b, 0);
	show_fails(b, "no dm-bcache superblock", "empty file");
	show_fails(tpath("missing"), "No such file", "missing file");

	copy_file(c, b);
	flip_byte(b, BCH_SB_OFFSET + 60);
	show_fails(b, "superblock checksum mismatch", "flipped label byte");

	/* version 2 on request, as older modules want it; nothing else */
	copy_file(c, b);
	check(run("make-bcache", "-q", "--wipe", "--format-version", "2", b, NULL) == 0 &&
	      run("bcache-super-show", b, NULL) == 0 && has(out, "sb.version\t2\n") &&
	      has(out, "btree.root\tnone\n"),
	      "make-bcache --format-version 2: a version 2 cache");
	check(run("make-bcache", "-q", "--wipe", "--format-version", "4", b, NULL) == 1 &&
	      has(err, "the format version must be 2 or 3"),
	      "make-bcache --format-version 4: refused");

	copy_file(c, b);
	read_sb(b, &sb);
	sb.version = htole32(1);
	write_sb(b, &sb);
	show_fails(b, "unsupported version 1 (this tool knows 2 to 3)", "version 1");
	sb.version = htole32(4);
	write_sb(b, &sb);
	show_fails(b, "unsupported version 4", "version 4");

	/* the journal's geometry (c: 128 buckets, the first for metadata) */
	copy_file(c, b);
	read_sb(b, &sb);
	sb.journal_buckets = htole32(1);
	write_sb(b, &sb);
	show_fails(b, "journal of 1 buckets (must be 2 to 256)", "journal of 1");
	sb.journal_buckets = htole32(257);
	write_sb(b, &sb);
	show_fails(b, "journal of 257 buckets", "journal of 257");
	sb.journal_buckets = htole32(112);
	write_sb(b, &sb);
	show_fails(b, "only 15 data buckets besides the journal (minimum 16)",
		   "journal leaving 15 data buckets");
	sb.journal_buckets = htole32(4);
	sb.journal_first = 0;
	write_sb(b, &sb);
	show_fails(b, "journal buckets 0 to 3 are outside the buckets [1, 128)",
		   "journal over the metadata");
	sb.journal_first = htole64(125);
	write_sb(b, &sb);
	show_fails(b, "journal buckets 125 to 128 are outside", "journal past the end");
	sb.journal_first = htole64(124);
	write_sb(b, &sb);
	check(run("bcache-super-show", b, NULL) == 0 &&
	      has(out, "sb.journal_first\t124\n"),
	      "super-show: a journal at the last 4 buckets is fine");
	sb.journal_first = htole64(1);
	sb.journal_pos = htole64(4096);
	write_sb(b, &sb);
	show_fails(b, "journal position 4096 is not a block of the 4096 sector ring",
		   "journal position past the ring");
	sb.journal_pos = htole64(12);
	write_sb(b, &sb);
	show_fails(b, "journal position 12 is not a block", "journal position not a block");
	sb.journal_pos = htole64(4088);
	sb.journal_seq = htole64(77);
	write_sb(b, &sb);
	check(run("bcache-super-show", b, NULL) == 0 &&
	      has(out, "sb.journal_pos\t4088\n") && has(out, "sb.journal_seq\t77\n"),
	      "super-show: the last block of the ring, seq 77");
	sb.journal_seq = 0;
	write_sb(b, &sb);
	show_fails(b, "journal seq 0 (seqs start at 1)", "journal seq 0");

	copy_file(c, b);
	read_sb(b, &sb);
	sb.bucket_size = htole32(768);
	write_sb(b, &sb);
	show_fails(b, "invalid bucket size 768", "bucket 768 sectors");

	copy_file(c, b);
	read_sb(b, &sb);
	sb.uuid_offset[1] = sb.uuid_offset[0];
	write_sb(b, &sb);
	show_fails(b, "UUID table copy 1 overlaps UUID table copy 0",
		   "overlapping copies");

	copy_file(c, b);
	if (truncate(b, 32 * MiB))
		exit(1);
	show_fails(b, "device smaller than the superblock says", "truncated");

	copy_file(c, b);
	flip_byte(b, (BCH_META_START << BCH_SECTOR_SHIFT) + 1000);
	show_fails(b, "bucket array copy 0 checksum mismatch", "corrupted prio copy");
	check(has(out, "prio.csum\t0x") && has(out, " BAD\n") &&
	      has(out, "nbuckets\t128\n"), "... still prints, prio.csum BAD");

	copy_file(c, b);
	flip_byte(b, (24 << BCH_SECTOR_SHIFT) + 1000);
	check(run("bcache-super-show", b, NULL) == 0,
	      "super-show ignores damage to the non-current prio copy");

	copy_file(c, b);
	flip_byte(b, (32 << BCH_SECTOR_SHIFT) + 5);
	show_fails(b, "UUID table copy 0 checksum mismatch", "corrupted uuid copy");
	check(has(out, "uuid.csum\t0x") && has(out, " BAD\n"),
	      "... uuid.csum BAD");

	check(run("bcache-super-show", NULL) == 2, "super-show no args: 2");
	check(run("bcache-super-show", "-x", c, NULL) == 2,
	      "super-show bad option: 2");
	check(run("bcache-super-show", c, c, NULL) == 2,
	      "super-show two devices: 2");
	check(run("bcache-super-show", "-h", NULL) == 0 && has(out, "-u"),
	      "super-show -h: 0");
	unlink(b);
}

/* A slot written by hand into copy 1, which the superblock then names. */
static void test_show_uuids(void)
{
	const char *c = tpath("cache"), *b = tpath("slots");
	static struct bch_uuid_disk t[BCH_UUID_SLOTS];
	struct bch_sb_disk sb;
	uint64_t off;

	copy_file(c, b);
	read_sb(b, &sb);
	memset(t, 0, sizeof(t));
	bch_uuid_parse("fedcba98-7654-3210-0123-456789abcdef", t[5].uuid);
	strcpy((char *)t[5].label, "origin\tfive");
	t[5].sectors = htole64(2048);
	t[5].epoch = htole32(3);
	t[5].flags = htole32(BCH_UUID_VALID | BCH_UUID_ATTACHED |
			     BCH_UUID_FINGERPRINT);
	t[5].fingerprint = htole32(0xdeadbeef);
	t[9].flags = htole32(BCH_UUID_EPHEMERAL);	/* not valid: hidden */
	off = le64toh(sb.uuid_offset[1]) << BCH_SECTOR_SHIFT;
	rw_file(b, t, sizeof(t), off, true);
	sb.uuid_current = htole32(1);
	sb.uuid_csum = htole32(bch_csum(t, sizeof(t)));
	sb.seq = htole64(2);
	write_sb(b, &sb);

	if (!check(run("bcache-super-show", "-u", b, NULL) == 0,
		   "super-show -u on a hand-written slot: exit 0"))
		printf("     %s", err);
	check(has(out, "uuid.current\t1\n") && has(out, "uuid.slots\t1\n") &&
	      has(out, "slot.5.uuid\tfedcba98-7654-3210-0123-456789abcdef\n") &&
	      has(out, "slot.5.label\torigin\\x09five\n") &&
	      has(out, "slot.5.sectors\t2048\n") &&
	      has(out, "slot.5.epoch\t3\n") &&
	      has(out, "slot.5.flags\tvalid,attached,fingerprint\n") &&
	      has(out, "slot.5.fingerprint\t0xdeadbeef\n") &&
	      !has(out, "slot.9"), "... prints slot 5 only, decoded");
	check(run("bcache-super-show", b, NULL) == 0 && !has(out, "slot."),
	      "without -u no slots");

	flip_byte(b, off + 5 * 128 + 20);
	check(run("bcache-super-show", "-u", b, NULL) == 1 &&
	      has(out, "uuid.csum") && !has(out, "slot."),
	      "-u on a corrupted table: exit 1, slots not decoded");
	unlink(b);
}

/* A root of one pointer to @sector (size 1024, gen 7), as a checkpoint writes. */
static void set_root(struct bch_sb_disk *sb, uint64_t sector)
{
	struct bch_bkey k = { .size = 1024, .end = 1024, .nptrs = 1 };

	k.ptr[0] = bch_ptr(0, 7, sector);
	bch_sb_set_root(sb, &k);
}

static void test_root(void)
{
	const char *c = tpath("cache"), *b = tpath("root");
	struct bch_sb_disk sb;

	copy_file(c, b);
	read_sb(b, &sb);
	set_root(&sb, 10 * 1024);
	sb.btree_level = htole32(1);
	write_sb(b, &sb);
	check(run("bcache-super-show", b, NULL) == 0 &&
	      has(out, "btree.root\tbucket 10 gen 7 level 1 "),
	      "btree root printed as bucket/gen/level");

	set_root(&sb, 10 * 1024 + 8);
	write_sb(b, &sb);
	show_fails(b, "not bucket aligned", "misaligned root");

	set_root(&sb, 0);
	write_sb(b, &sb);
	show_fails(b, "not a data bucket", "root in the metadata bucket");

	set_root(&sb, 4 * 1024);
	write_sb(b, &sb);
	show_fails(b, "btree root bucket 4 is not a data bucket", "root in a journal bucket");

	/* the root is the checkpoint whatever the clean flag says */
	set_root(&sb, 10 * 1024);
	sb.flags = 0;
	write_sb(b, &sb);
	check(run("bcache-super-show", b, NULL) == 0 &&
	      has(out, "sb.flags\tdirty\n") &&
	      has(out, "btree.root\tbucket 10 gen 7 level 1 "),
	      "dirty superblock: the root (checkpoint) still printed");
	set_root(&sb, 10 * 1024 + 8);
	write_sb(b, &sb);
	show_fails(b, "not bucket aligned", "misaligned root, dirty superblock");
	unlink(b);
}

/* crc32c of a whole file: to tell that a refused run left it alone. */
static uint32_t file_sum(const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		perror(path);
		exit(1);
	}
	return region_csum(path, 0, st.st_size >> BCH_SECTOR_SHIFT);
}

/*
 * The @n files of a set just formatted: each superblock names itself
 * (dev_idx) and carries the same table of every member, ACTIVE, with its
 * own uuid and geometry; the other entries are zero.
 */
static void check_set(const char *const *p, unsigned int n)
{
	static const uint8_t zero[sizeof(struct bch_member_disk)];
	struct bch_sb_disk sb[BCH_MAX_MEMBERS];
	const struct bch_member_disk *m;
	unsigned int i, j;
	bool ok;

	for (i = 0; i < n; i++)
		read_sb(p[i], &sb[i]);
	for (i = 0; i < n; i++) {
		check(le32toh(sb[i].dev_idx) == i && !sb[i].members_pad,
		      "set of %u: member %u has dev_idx %u", n, i, i);
		check(!memcmp(sb[i].set_uuid, sb[0].set_uuid, 16),
		      "set of %u: member %u shares the set uuid", n, i);
		check(!memcmp(sb[i].members, sb[0].members, sizeof(sb[0].members)),
		      "set of %u: member %u carries the same member table", n, i);
		check(bch_sb_members(&sb[i], BCH_MEMBER_ACTIVE) == n &&
		      bch_sb_members(&sb[i], BCH_MEMBER_NONE) == BCH_MAX_MEMBERS - n,
		      "set of %u: member %u's table has %u members ACTIVE", n, i, n);
	}
	for (j = 0; j < BCH_MAX_MEMBERS; j++) {
		m = &sb[0].members[j];
		if (j >= n) {
			check(!memcmp(m, zero, sizeof(zero)),
			      "set of %u: entry %u is zero", n, j);
			continue;
		}
		ok = true;
		for (i = 0; i < j; i++)
			if (!memcmp(sb[i].uuid, sb[j].uuid, 16))
				ok = false;
		check(ok && !memcmp(m->uuid, sb[j].uuid, 16) &&
		      m->nbuckets == sb[j].nbuckets &&
		      m->bucket_size == sb[j].bucket_size &&
		      le32toh(m->state) == BCH_MEMBER_ACTIVE,
		      "set of %u: entry %u is member %u's own uuid (distinct) and geometry, ACTIVE",
		      n, j, j);
	}
}

static void test_set_format(void)
{
	const char *p[BCH_MAX_MEMBERS];
	const uint64_t size[3] = { 64 * MiB, 32 * MiB, 48 * MiB + 4096 };
	struct bch_sb_disk sb[3];
	char name[16], want[512], u[BCH_UUID_STR_LEN];
	time_t t0 = time(NULL);
	unsigned int i;
	bool ok;
	int rc;

	for (i = 0; i < BCH_MAX_MEMBERS; i++) {
		snprintf(name, sizeof(name), "member%u", i);
		p[i] = tpath(name);
	}
	for (i = 0; i < 3; i++)
		make_file(p[i], size[i]);

	check(run("make-bcache", "-q", "-l", "cache one", "--cset-uuid", SET_UUID,
		  p[0], p[1], NULL) == 0 && !out[0] && !err[0],
	      "make-bcache of two devices, quiet: exit 0, silent");
	for (i = 0; i < 2; i++)
		check_layout(p[i], 8, 1024, size[i], t0);
	check_set(p, 2);

	/* neither member can be read alone: their keys may point to the other */
	for (i = 0; i < 2; i++) {
		snprintf(want, sizeof(want),
			 "bcache-check: %s is member %u of a set of 2 members: %s\n",
			 p[i], i, i ? SET_NO_MEMBER0 : SET_ONE_MISSING);
		rc = run("bcache-check", p[i], NULL);
		if (!check(rc == 3 && !strcmp(err, want) && !out[0],
			   "bcache-check on member %u of 2: exit 3, one line", i))
			printf("     got %d: %s%s", rc, out, err);
	}
	check(run("bcache-check", "-q", p[1], NULL) == 3 && !out[0] && !err[0],
	      "bcache-check -q on a member of a set of 2: exit 3, silent");
	check(run("bcache-check", "--repair", p[1], NULL) == 3 &&
	      has(err, "is member 1 of a set of 2 members"),
	      "bcache-check --repair on a member of a set of 2: exit 3");
	check(run("bcache-dump", p[0], NULL) == 3 && !out[0] &&
	      has(err, "bcache-dump: ") &&
	      has(err, "is member 0 of a set of 2 members: 1 member is missing"),
	      "bcache-dump on a member of a set of 2: exit 3, refused");
	/* both named, in any order: the set */
	check(run("bcache-check", p[1], p[0], NULL) == 0 &&
	      has(out, "cache set: 2 members, all named") && has(out, ": consistent\n"),
	      "bcache-check on both members of a set of 2: exit 0");
	check(run("bcache-dump", p[0], p[1], NULL) == 0 && has(out, "member 1 of 2"),
	      "bcache-dump on both members of a set of 2: exit 0");
	check(run("bcache-check", "--repair", p[0], p[1], NULL) == 0 &&
	      has(out, "consistent"),
	      "bcache-check --repair on a consistent set of 2: nothing to repair, exit 0");

	/*
	 * One member left in use, the other REMOVED: still a set of two (a
	 * REMOVED member keeps its index, as in the kernel), whose member 0
	 * (which the kernel never removes: it holds the index) is not named.
	 */
	read_sb(p[1], &sb[1]);
	sb[1].members[0].state = htole32(BCH_MEMBER_REMOVED);
	write_sb(p[1], &sb[1]);
	check(run("bcache-check", p[1], NULL) == 3 &&
	      has(err, "is member 1 of a set of 2 members: " SET_NO_MEMBER0),
	      "bcache-check on a member whose other member, member 0, is REMOVED: still a set of 2, refused");
	check(run("bcache-super-show", p[1], NULL) == 0 &&
	      has(out, "sb.dev_idx\t1\n") &&
	      has(out, "member.0.state\tremoved\n") &&
	      has(out, "member.1.state\tactive\n"),
	      "super-show: a REMOVED member printed as removed");
	sb[1].members[0].state = htole32(BCH_MEMBER_FAILED);
	write_sb(p[1], &sb[1]);
	/* member 0 cannot be lost: it holds the index */
	check(run("bcache-check", p[1], NULL) == 3 &&
	      has(err, "is member 1 of a set of 2 members: member 0 is not named"),
	      "bcache-check on a member whose other member, member 0, is FAILED: refused");
	check(run("bcache-super-show", p[1], NULL) == 0 &&
	      has(out, "member.0.state\tfailed\n"),
	      "super-show: a FAILED member printed as failed");

	/* three, each of its own size, 256k buckets, with the summary */
	rc = run("make-bcache", "--wipe", "-b", "256k", "-l", "cache one",
		 "--cset-uuid", SET_UUID, p[0], p[1], p[2], NULL);
	if (!check(rc == 0 && !err[0], "make-bcache of three devices: exit 0"))
		printf("     got %d: %s", rc, err);
	for (i = 0; i < 3; i++)
		check_layout(p[i], 8, 512, size[i], t0);
	check_set(p, 3);
	ok = true;
	for (i = 0; i < 3; i++) {
		read_sb(p[i], &sb[i]);
		bch_uuid_format(sb[i].uuid, u);
		snprintf(want, sizeof(want),
			 "%s: dm-bcache cache device\n  uuid          %s\n"
			 "  set uuid      " SET_UUID "\n  member        %u of 3\n"
			 "  label         cache one\n", p[i], u, i);
		if (!has(out, want))
			ok = false;
	}
	check(ok && has(out, "  nbuckets      256\n") &&
	      has(out, "  nbuckets      128\n") && has(out, "  nbuckets      192\n"),
	      "the summary lists every member, in order, each with its geometry");

	check(run("bcache-super-show", p[1], NULL) == 0,
	      "super-show on member 1 of 3: exit 0");
	ok = has(out, "sb.dev_idx\t1\n") && !has(out, "member.3.");
	for (i = 0; i < 3; i++) {
		bch_uuid_format(sb[i].uuid, u);
		snprintf(want, sizeof(want),
			 "member.%u.uuid\t%s\nmember.%u.nbuckets\t%llu\n"
			 "member.%u.bucket_size\t262144 (512 sectors)\n"
			 "member.%u.state\tactive\n", i, u, i,
			 (unsigned long long)le64toh(sb[i].nbuckets), i, i);
		if (!has(out, want))
			ok = false;
	}
	check(ok, "... prints dev_idx and the three members' lines, nothing for the others");

	/* eight, the most a set has */
	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		make_file(p[i], 12 * MiB);
	check(run("make-bcache", "-q", "--cset-uuid", SET_UUID, p[0], p[1], p[2],
		  p[3], p[4], p[5], p[6], p[7], NULL) == 0,
	      "make-bcache of eight devices: exit 0");
	check_set(p, BCH_MAX_MEMBERS);
	check(run("bcache-super-show", p[7], NULL) == 0 &&
	      has(out, "sb.dev_idx\t7\n") && has(out, "member.7.state\tactive\n"),
	      "super-show on member 7 of 8");
	for (i = 0; i < BCH_MAX_MEMBERS; i++)
		unlink(p[i]);
}

/* Some bytes in every sector a format would write first or wipe. */
static void scribble(const char *path, uint64_t size)
{
	static char buf[BCH_SB_OFFSET + BCH_SB_SIZE];

	make_file(path, size);
	memset(buf, 'P', sizeof(buf));
	rw_file(path, buf, sizeof(buf), 0, true);
}

/* Refused sets: the devices are all checked before any is written. */
static void test_set_errors(void)
{
	const char *d[BCH_MAX_MEMBERS + 1], *s = tpath("small");
	const char *hard = tpath("hardlink"), *sym = tpath("symlink");
	uint32_t sum[BCH_MAX_MEMBERS + 1];
	char name[16];
	unsigned int i;
	bool same;

	for (i = 0; i <= BCH_MAX_MEMBERS; i++) {
		snprintf(name, sizeof(name), "dev%u", i);
		d[i] = tpath(name);
		scribble(d[i], 12 * MiB);
		sum[i] = file_sum(d[i]);
	}
#define UNCHANGED(n, what) do {						\
		same = true;						\
		for (i = 0; i < (n); i++)				\
			same &= file_sum(d[i]) == sum[i];		\
		check(same, "%s: the devices are left as they were", what); \
	} while (0)

	make_fails(1, "9 devices given: a set has at most 8 members", d[0], d[1],
		   d[2], d[3], d[4], d[5], d[6], d[7], d[8], NULL);
	UNCHANGED(BCH_MAX_MEMBERS + 1, "nine devices");
	make_fails(1, "a set of several devices needs format version 3",
		   "--format-version", "2", d[0], d[1], NULL);
	make_fails(1, "a set of several devices needs format version 3",
		   d[0], "--format-version=2", d[1], NULL);
	UNCHANGED(2, "two devices in format version 2");

	make_fails(1, "are the same device: a device can be a member only once",
		   d[0], d[1], d[0], NULL);
	if (link(d[0], hard) || symlink(d[1], sym))
		exit(1);
	make_fails(1, "are the same device", d[0], hard, NULL);
	make_fails(1, "are the same device", sym, d[2], d[1], NULL);
	make_fails(1, "are the same device", "--wipe", d[2], d[1], sym, NULL);
	UNCHANGED(3, "one device named twice");
	unlink(hard);
	unlink(sym);

	/* the first holds a cache to wipe, the second cannot be formatted */
	check(run("make-bcache", "-q", d[0], NULL) == 0, "dev0 formatted alone");
	sum[0] = file_sum(d[0]);
	make_file(s, 1 * MiB);
	make_fails(1, "small is too small (1048576 bytes)", "--wipe", d[0], d[1], s, NULL);
	make_fails(1, "small is too small (1048576 bytes)", "--wipe", "-b", "64k", d[0], s,
		   NULL);
	make_fails(1, "No such file or directory", "--wipe", d[0], tpath("missing"), NULL);
	check(access(tpath("missing"), F_OK), "missing file not created");
	make_fails(1, "already holds a dm-bcache superblock", d[1], d[0], NULL);
	make_fails(1, "already holds a dm-bcache superblock", "-w", "8k", d[2], d[0], d[1],
		   NULL);
	UNCHANGED(3, "a device refused after another was checked");
	check(run("make-bcache", "-q", "--wipe", d[1], d[0], NULL) == 0 &&
	      run("bcache-super-show", d[0], NULL) == 0 &&
	      has(out, "sb.dev_idx\t1\n"),
	      "with --wipe: the old cache is member 1 of the new set");
#undef UNCHANGED
	for (i = 0; i <= BCH_MAX_MEMBERS; i++)
		unlink(d[i]);
	unlink(s);
}

/*
 * bch_sb_members_invalid(): each rule broken in a superblock written by
 * hand, from member 0 of a set of two (and a version 2 cache).
 */
static void test_member_rules(void)
{
	const char *p0 = tpath("rules0"), *p1 = tpath("rules1"), *b = tpath("rules");
	struct bch_sb_disk good, sb;
	uint8_t v4[16];

	make_file(p0, 64 * MiB);
	make_file(p1, 32 * MiB);
	check(run("make-bcache", "-q", p0, p1, NULL) == 0, "rules: a set of two");
	read_sb(p0, &good);
	copy_file(p0, b);

	check(run("bcache-super-show", b, NULL) == 0, "rules: the set's member 0 as made");
	sb = good;
	sb.dev_idx = htole32(8);
	write_sb(b, &sb);
	show_fails(b, "superblock has a bad member index", "dev_idx 8");
	sb = good;
	sb.members_pad = htole32(1);
	write_sb(b, &sb);
	show_fails(b, "superblock has a bad member index", "member table padding");
	sb = good;
	sb.members[0].state = htole32(BCH_MEMBER_FAILED);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock", "own entry FAILED");
	sb.members[0].state = htole32(BCH_MEMBER_NONE);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock", "own entry NONE");
	sb = good;
	bch_uuid_generate(v4);
	memcpy(sb.members[0].uuid, v4, 16);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock", "own entry's uuid");
	sb = good;
	sb.dev_idx = htole32(1);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock",
		   "dev_idx naming the other member's entry");
	sb = good;
	sb.members[0].nbuckets = htole64(le64toh(sb.nbuckets) - 1);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock", "own entry's nbuckets");
	sb = good;
	sb.members[0].bucket_size = htole32(512);
	write_sb(b, &sb);
	show_fails(b, "member table disagrees with its own superblock", "own entry's bucket_size");

	sb = good;
	sb.members[2].state = htole32(7);
	write_sb(b, &sb);
	show_fails(b, "member table has a member in an unknown state", "a member in state 7");
	sb = good;
	sb.members[1].state = htole32(BCH_MEMBER_STATES);
	write_sb(b, &sb);
	show_fails(b, "member table has a member in an unknown state", "a member in state 4");
	sb = good;
	sb.members[1].bucket_size = htole32(768);
	write_sb(b, &sb);
	show_fails(b, "member table has a member of another bucket size",
		   "a member of 768-sector buckets");
	sb.members[1].state = htole32(BCH_MEMBER_FAILED);
	write_sb(b, &sb);
	show_fails(b, "member table has a member of another bucket size",
		   "a FAILED member of 768-sector buckets");
	sb.members[1].bucket_size = htole32(le32toh(good.bucket_size) * 2);
	write_sb(b, &sb);
	show_fails(b, "member table has a member of another bucket size",
		   "a FAILED member of twice the set's bucket size");
	sb = good;
	sb.members[1].nbuckets = 0;
	write_sb(b, &sb);
	show_fails(b, "member table has a member of bad geometry", "a member of no buckets");
	sb = good;
	sb.members[1].bucket_size = htole32(4);
	write_sb(b, &sb);
	show_fails(b, "member table has a member of another bucket size",
		   "buckets smaller than a block");
	sb.members[1].state = htole32(BCH_MEMBER_REMOVED);
	write_sb(b, &sb);
	check(run("bcache-super-show", b, NULL) == 0 &&
	      has(out, "member.1.state\tremoved\n"),
	      "super-show: a REMOVED member's geometry is not checked");
	/* nor used: member 0 alone is the set, of two members still */
	check(run("bcache-check", b, NULL) == 0 &&
	      has(out, "cache set: 2 members (1 removed), degraded: one member left;"),
	      "bcache-check: member 0 alone, member 1 REMOVED with buckets smaller than a block");
	sb.members[1].bucket_size = 0;
	sb.members[1].nbuckets = htole64(1ULL << 60);
	write_sb(b, &sb);
	check(run("bcache-check", "-d", b, NULL) == 0 && has(out, ": consistent\n"),
	      "bcache-check: member 1 REMOVED with buckets of 0 sectors, 2^60 of them");
	check(run("bcache-dump", b, NULL) == 0 && has(out, "member 1 of 2, removed"),
	      "bcache-dump: the same");
	sb = good;
	memcpy(sb.members[1].uuid, sb.members[0].uuid, 16);
	write_sb(b, &sb);
	show_fails(b, "member table names one device twice", "two members of one uuid");
	sb.members[1].state = htole32(BCH_MEMBER_FAILED);
	write_sb(b, &sb);
	show_fails(b, "member table names one device twice", "a FAILED member of the same uuid");

	/* version 2 has no member table at all */
	check(run("make-bcache", "-q", "--wipe", "--format-version", "2", b, NULL) == 0,
	      "rules: a version 2 cache");
	check(run("bcache-super-show", b, NULL) == 0 && !has(out, "sb.dev_idx") &&
	      !has(out, "member."), "super-show of version 2: no member lines");
	read_sb(b, &good);
	check(!good.dev_idx && !good.members_pad &&
	      bch_sb_members(&good, BCH_MEMBER_NONE) == BCH_MAX_MEMBERS,
	      "version 2: the member table is zero");
	sb = good;
	memcpy(sb.members[0].uuid, sb.uuid, 16);
	sb.members[0].nbuckets = sb.nbuckets;
	sb.members[0].bucket_size = sb.bucket_size;
	sb.members[0].state = htole32(BCH_MEMBER_ACTIVE);
	write_sb(b, &sb);
	show_fails(b, "version 2 superblock has a member table", "version 2 with a member table");
	sb = good;
	sb.dev_idx = htole32(1);
	write_sb(b, &sb);
	show_fails(b, "version 2 superblock has a member table", "version 2 with dev_idx 1");
	sb = good;
	sb.members[7].nbuckets = htole64(1);
	write_sb(b, &sb);
	show_fails(b, "version 2 superblock has a member table", "version 2 with a stray byte");
	unlink(p0);
	unlink(p1);
	unlink(b);
}

/*
 * The leaf key rules of both versions (bcache_ondisk.h), and the two
 * layouts' round trips: the kernel and the tools refuse the same keys.
 */
static void test_key_rules(void)
{
	/* two members of 1024 buckets of 1024 sectors; journal in 1-4 */
	const struct bch_member_geom m[2] = {
		{ 1024, 4, 1, 1024, 1 }, { 1024, 4, 1, 1024, 1 },
	};
	struct bch_bkey k, good = { .size = 8, .end = 108, .nptrs = 1 }, back;
	uint8_t disk[BCH_KEY_BYTES_V3];

	good.ptr[0] = bch_ptr(0, 3, 10 * 1024 + 16);
	check(!bch_leaf_key_invalid(&good, 3, m, 1), "rules: one pointer, version 3");
	check(!bch_leaf_key_invalid(&good, 2, m, 1), "rules: one pointer, version 2");

	k = good;
	k.ptr[1] = bch_ptr(1, 9, 20 * 1024);
	k.nptrs = 2;
	check(!bch_leaf_key_invalid(&k, 3, m, 2), "rules: two pointers on two members");
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1),
		      "points to a member the set does not have"),
	      "rules: a pointer to member 1 of a set of one");
	k.ptr[1] = bch_ptr(0, 9, 20 * 1024);
	check(bch_leaf_key_invalid(&k, 3, m, 2) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 2), "has two pointers on one member"),
	      "rules: two pointers on one member");
	k.ptr[1] = bch_ptr(1, 9, 2 * 1024);
	check(bch_leaf_key_invalid(&k, 3, m, 2) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 2), "points into a journal bucket"),
	      "rules: the second pointer checked too");

	k = good;
	k.nptrs = 0;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1), "has no pointer"),
	      "rules: data with no pointer");
	k.flags = BCH_KEY_HOLE;
	check(!bch_leaf_key_invalid(&k, 3, m, 1), "rules: a hole");
	k.nptrs = 1;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1), "is a hole with a pointer"),
	      "rules: a hole with a pointer");
	k.nptrs = 0;
	k.flags |= BCH_KEY_CSUM;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1), "is a hole with a checksum"),
	      "rules: a hole with a checksum");

	k = good;
	k.flags = BCH_KEY_CSUM;
	k.csum_front = 2;
	k.csum_sectors = 10;
	check(!bch_leaf_key_invalid(&k, 3, m, 1), "rules: a checksummed range that holds the key");
	check(bch_leaf_key_invalid(&k, 2, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 2, m, 1), "has unknown flags"),
	      "rules: version 2 has no checksums");
	k.csum_sectors = 9;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1),
		      "has a checksummed range that does not hold it"),
	      "rules: a range too short for the key");
	k.csum_front = 0;
	k.csum_sectors = BCH_CSUM_MAX_SECTORS + 8;
	check(bch_leaf_key_invalid(&k, 3, m, 1), "rules: a range over 64 KiB");
	k.csum_front = 17;	/* the key is 16 sectors into its bucket */
	k.csum_sectors = 32;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1),
		      "has a checksummed range outside its bucket"),
	      "rules: a range starting in the bucket before");
	k.csum_front = 16;
	check(!bch_leaf_key_invalid(&k, 3, m, 1), "rules: a range from the bucket's start");
	k.ptr[0] = bch_ptr(0, 3, 10 * 1024 + 1016);
	k.csum_front = 0;
	k.csum_sectors = 16;
	check(bch_leaf_key_invalid(&k, 3, m, 1) &&
	      !strcmp(bch_leaf_key_invalid(&k, 3, m, 1),
		      "has a checksummed range outside its bucket"),
	      "rules: a range ending in the next bucket");
	k.csum_sectors = 8;
	check(!bch_leaf_key_invalid(&k, 3, m, 1), "rules: a range to the bucket's end");

	/* round trips */
	k = good;
	k.ptr[1] = bch_ptr(1, 9, 20 * 1024);
	k.nptrs = 2;
	k.flags = BCH_KEY_CSUM | BCH_KEY_DIRTY;
	k.csum = 0xdeadbeef;
	k.csum_sectors = 8;
	bch_bkey_pack(disk, &k, BCH_KEY_BYTES_V3);
	check(bch_bkey_unpack(&back, disk, BCH_KEY_BYTES_V3) && !memcmp(&back, &k, sizeof(k)),
	      "version 3 key: packed and unpacked whole");
	check(!bch_bkey_fits(&k, BCH_KEY_BYTES_V2), "two pointers do not fit version 2");
	disk[41] = 3;	/* nptrs */
	check(!bch_bkey_unpack(&back, disk, BCH_KEY_BYTES_V3),
	      "version 3 key of 3 pointers: no key");
	k = good;
	bch_bkey_pack(disk, &k, BCH_KEY_BYTES_V2);
	check(bch_bkey_unpack(&back, disk, BCH_KEY_BYTES_V2) && !memcmp(&back, &k, sizeof(k)),
	      "version 2 key: packed and unpacked whole");
	memset(disk + 16, 0xff, 8);	/* a ptr past 2^48 sectors */
	check(!bch_bkey_unpack(&back, disk, BCH_KEY_BYTES_V2),
	      "version 2 key pointing past 2^48 sectors: no key");
	disk[25] = BCH_KEY_HOLE;	/* a hole's ptr means nothing */
	check(bch_bkey_unpack(&back, disk, BCH_KEY_BYTES_V2) && !back.nptrs,
	      "version 2 hole: no pointer, whatever its ptr field");
}

/*
 * bcache-writeback, on caches the fixture builds with the kernel's index
 * code: slot 0 (WB_UUID) holds 100 checkpoint keys of 8 sectors from
 * origin sector 0, the first 10 dirty, their data written and (version
 * 3) checksummed; the journal then adds a dirty key (1000+16), hides
 * dirty key 5 under a clean one and the front half of dirty key 1 under
 * a hole (its part 12+4 keeps its range's checksum: csum_front 4), plus
 * dirty keys that must not be copied: a stale one, one of slot 1, one of
 * an old epoch. The origin records size and fingerprint as at attach.
 */
#define WB_UUID		"f1f1f1f1-0000-4000-8000-000000000001"
#define WB_UUID1	"f1f1f1f1-0000-4000-8000-000000000002"
#define WB_ORIGIN	(4 * MiB)
#define WB_EXTENTS	10
#define WB_MARKED	"writeback: marked clean: slot 0 now at epoch 2, none of its old data is used (written as UUID table copy 1)\n"
#define WB_JOURNAL_REFUSED "the index cannot be trusted: journal entry seq 1, key 0: points into the metadata: the kernel drops the whole index"

struct wb_extent {
	uint64_t	start;
	uint32_t	len;
	uint64_t	cache;		/* sector, filled in by wb_make() */
};

/* The dirty extents of slot 0, ascending; cache sectors from wb_make(). */
static struct wb_extent wb_ext[WB_EXTENTS] = {
	{ 0, 8, 0 }, { 12, 4, 0 }, { 16, 8, 0 }, { 24, 8, 0 }, { 32, 8, 0 },
	{ 48, 8, 0 }, { 56, 8, 0 }, { 64, 8, 0 }, { 72, 8, 0 }, { 1000, 16, 0 },
};

/* The origin's bytes before any writeback: unlike the fixture's data. */
static uint8_t origin_byte(uint64_t off)
{
	return (uint8_t)(off * 17 + (off >> 9) * 3 + 0xc3);
}

/* tests/fixture with @args; a failure is one */
static bool fx_run(const char *const *args)
{
	int rc = runv("tests/fixture", args);

	if (rc)
		check(false, "tests/fixture %s %s: exit %d: %s", args[0], args[1], rc, err);
	return !rc;
}

#define fx(...) fx_run((const char *const[]){ __VA_ARGS__, NULL })

/* The cache and origin described above, in format @version. */
static bool wb_make(const char *cache, const char *origin, const char *version)
{
	static uint8_t buf[WB_ORIGIN];
	uint64_t data, bucket, i;
	struct bch_sb_disk sb;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = origin_byte(i);
	make_file(origin, WB_ORIGIN);
	rw_file(origin, buf, sizeof(buf), 0, true);
	make_file(cache, 64 * MiB);
	if (run("make-bcache", "-q", "--format-version", version, cache, NULL)) {
		check(false, "make-bcache of %s: %s", cache, err);
		return false;
	}
	read_sb(cache, &sb);
	bucket = le32toh(sb.bucket_size);
	/* the fixture's data buckets start after the journal */
	data = (le64toh(sb.first_bucket) + le32toh(sb.journal_buckets)) * bucket;
	for (i = 0; i < WB_EXTENTS - 1; i++)
		wb_ext[i].cache = data + wb_ext[i].start;
	wb_ext[i].cache = 20 * bucket;
	return fx("index", cache, "keys=100", "dirty=10", "data") &&
	       fx("journal", cache, "d:1000+16@20,dirty,data", "d:40+8@21,data", "h:8+4",
		  "d:2000+8@22,dirty,data,stale", "slot=1,d:3000+8@23,dirty,data",
		  "d:4000+8@24,dirty,data,epoch=0") &&
	       fx("origin", cache, origin);
}

/*
 * The origin holds the cache's bytes exactly at the dirty extents (but
 * those in @skip, a bit each) and its own everywhere else.
 */
static bool origin_is(const char *cache, const char *origin, unsigned int skip)
{
	static uint8_t want[WB_ORIGIN], got[WB_ORIGIN];
	struct stat st;
	unsigned int i;
	uint64_t j;

	if (stat(origin, &st) || st.st_size != WB_ORIGIN)
		return false;
	for (j = 0; j < sizeof(want); j++)
		want[j] = origin_byte(j);
	for (i = 0; i < WB_EXTENTS; i++)
		if (!(skip & 1U << i))
			rw_file(cache, want + (wb_ext[i].start << BCH_SECTOR_SHIFT),
				(size_t)wb_ext[i].len << BCH_SECTOR_SHIFT,
				wb_ext[i].cache << BCH_SECTOR_SHIFT, false);
	rw_file(origin, got, sizeof(got), 0, false);
	return !memcmp(want, got, sizeof(want));
}

static void test_writeback(void)
{
	const char *c = tpath("wb-cache"), *o = tpath("wb-origin"), *c2 = tpath("wb-cache2");
	char want[PATH_MAX + 128];
	uint32_t csum, osum;
	unsigned int i;
	bool ok;

	if (!wb_make(c, o, "3"))
		return;
	csum = file_sum(c);
	osum = file_sum(o);

	/* --dry-run: the list, checksums verified, nothing written */
	check(run("bcache-writeback", "--dry-run", "--uuid", WB_UUID, c, o, NULL) == 0,
	      "writeback --dry-run: exit 0");
	for (ok = true, i = 0; i < WB_EXTENTS; i++) {
		snprintf(want, sizeof(want), "%llu+%u at cache sector %llu\n",
			 (unsigned long long)wb_ext[i].start, wb_ext[i].len,
			 (unsigned long long)wb_ext[i].cache);
		ok = ok && has(out, want);
	}
	check(ok && has(out, "\n1000+16 at cache sector") && has(out, "\n12+4 at cache sector") &&
	      !has(out, "\n40+8 at") && !has(out, "\n8+8 at") && !has(out, "2000+") &&
	      !has(out, "3000+") && !has(out, "4000+"),
	      "writeback --dry-run: lists the 10 dirty extents of slot 0, and nothing else");
	snprintf(want, sizeof(want),
		 "writeback: would copy 10 extents, 84 sectors to %s, 0 mismatched\n", o);
	check(has(out, want), "writeback --dry-run: the summary");
	check(file_sum(c) == csum && file_sum(o) == osum, "writeback --dry-run: both files unchanged");

	/* the refusals change nothing */
	check(run("bcache-writeback", "--uuid", "f1f1f1f1-0000-4000-8000-0000000000ff", c, o,
		  NULL) == 3 &&
	      has(err, "no UUID slot holds origin_uuid f1f1f1f1-0000-4000-8000-0000000000ff"),
	      "writeback: an origin_uuid no slot holds: exit 3");
	check(run("bcache-writeback", "--uuid", WB_UUID1, c, o, NULL) == 1 &&
	      has(err, "recorded an origin of 1048576 sectors"),
	      "writeback: slot 1's uuid for slot 0's origin: refused by its size");
	check(file_sum(c) == csum && file_sum(o) == osum, "writeback: refusals wrote nothing");
	make_file(tpath("wb-big"), WB_ORIGIN + 4096);
	check(run("bcache-writeback", "--uuid", WB_UUID, c, tpath("wb-big"), NULL) == 1 &&
	      has(err, "4198400 bytes, but slot 0 recorded an origin of 8192 sectors"),
	      "writeback: an origin of another size: exit 1");
	check(zero_at(tpath("wb-big"), 0, (WB_ORIGIN + 4096) >> BCH_SECTOR_SHIFT),
	      "writeback: ... left alone");
	unlink(tpath("wb-big"));
	flip_byte(o, 4095);
	osum = file_sum(o);
	check(run("bcache-writeback", "--uuid", WB_UUID, c, o, NULL) == 1 &&
	      has(err, "do not match the fingerprint slot 0 recorded"),
	      "writeback: an origin whose first 4 KiB changed: exit 1");
	check(file_sum(c) == csum && file_sum(o) == osum, "writeback: ... nothing written");
	check(run("bcache-writeback", "--uuid", WB_UUID, c, c, NULL) == 1 &&
	      has(err, "is the cache device itself") && file_sum(c) == csum,
	      "writeback: the cache as its own origin: exit 1");
	check(run("bcache-writeback", "--dry-run", "--mark-clean", "--uuid", WB_UUID, c, o,
		  NULL) == 2 && has(err, "--mark-clean does not go with --dry-run") &&
	      file_sum(c) == csum && file_sum(o) == osum,
	      "writeback: --mark-clean with --dry-run: exit 2");
	/* a crash amid the cache's writes there: the fingerprint is not checked */
	flip_byte(o, 4095);
	fx("origin", c, o, "fpwriting");
	flip_byte(o, 4095);
	check(run("bcache-writeback", "--dry-run", "--uuid", WB_UUID, c, o, NULL) == 0 &&
	      has(err, "the fingerprint is not checked"),
	      "writeback: BCH_UUID_FP_WRITING: the fingerprint is not checked");
	flip_byte(o, 4095);

	/* the copy */
	if (!wb_make(c, o, "3"))
		return;
	csum = file_sum(c);
	snprintf(want, sizeof(want),
		 "writeback: 10 extents, 84 sectors copied to %s, 0 mismatched\n", o);
	check(run("bcache-writeback", "--uuid", WB_UUID, c, o, NULL) == 0 && !strcmp(out, want),
	      "writeback: exit 0, the summary alone on stdout");
	check(has(err, "writeback: 10 of 10 extents, 84 of 84 sectors (100%)"),
	      "writeback: progress on stderr");
	check(origin_is(c, o, 0), "writeback: the origin holds the dirty extents, and only them");
	check(file_sum(c) == csum, "writeback: the cache is only read");
	check(has(err, "note: the origin's first 4 KiB were written"),
	      "writeback: says the fingerprint no longer matches");
	check(run("bcache-writeback", "--uuid", WB_UUID, c, o, NULL) == 1 &&
	      has(err, "do not match the fingerprint"),
	      "writeback: so a second run is refused");

	/* -q: no progress, no note */
	if (!wb_make(c, o, "3"))
		return;
	check(run("bcache-writeback", "-q", "--uuid", WB_UUID, c, o, NULL) == 0 &&
	      !strcmp(out, want) && !err[0] && origin_is(c, o, 0),
	      "writeback -q: only the summary");

	/* --mark-clean */
	if (!wb_make(c, o, "3"))
		return;
	check(run("bcache-writeback", "--mark-clean", "--uuid", WB_UUID, c, o, NULL) == 0 &&
	      has(out, want) &&
	      has(out, WB_MARKED),
	      "writeback --mark-clean: exit 0, says so");
	check(origin_is(c, o, 0), "writeback --mark-clean: the origin as without it");
	check(run("bcache-check", c, NULL) == 0 && !has(out, "dirty: slot 0") &&
	      has(out, "dirty: slot 1 (uuid " WB_UUID1 "): 8 sectors") &&
	      has(out, "102 old-epoch"),
	      "writeback --mark-clean: bcache-check: consistent, slot 0 holds no dirty data (slot 1's kept)");
	check(run("bcache-super-show", "-u", c, NULL) == 0 && has(out, "uuid.current\t1\n") &&
	      has(out, "slot.0.epoch\t2\n") && has(out, "slot.0.flags\tvalid,fingerprint\n") &&
	      has(out, "slot.1.epoch\t1\n"),
	      "writeback --mark-clean: a new UUID table copy, slot 0's epoch bumped, a fingerprint");
	csum = file_sum(c);
	osum = file_sum(o);
	snprintf(want, sizeof(want),
		 "writeback: 0 extents, 0 sectors copied to %s, 0 mismatched\n", o);
	check(run("bcache-writeback", "--uuid", WB_UUID, c, o, NULL) == 0 && !strcmp(out, want),
	      "writeback: after --mark-clean a second run copies nothing");
	check(run("bcache-writeback", "--mark-clean", "--uuid", WB_UUID, c, o, NULL) == 0 &&
	      has(err, "--mark-clean: nothing to do") && file_sum(c) == csum &&
	      file_sum(o) == osum,
	      "writeback --mark-clean: nothing dirty: nothing written");

	/* a flipped byte in the data of a dirty extent, and in the range of another */
	if (!wb_make(c, o, "3"))
		return;
	flip_byte(c, (wb_ext[3].cache << BCH_SECTOR_SHIFT) + 100);
	/* extent 1 (12+4) is the back half of its range: the front is checked too */
	flip_byte(c, ((wb_ext[1].cache - 4) << BCH_SECTOR_SHIFT) + 3);
	csum = file_sum(c);
	snprintf(want, sizeof(want),
		 "writeback: 8 extents, 72 sectors copied to %s, 2 mismatched\n", o);
	check(run("bcache-writeback", "--mark-clean", "--uuid", WB_UUID, c, o, NULL) == 1 &&
	      !strcmp(out, want), "writeback: checksum mismatches: exit 1, counted");
	snprintf(want, sizeof(want), "origin sectors 24+8 (cache sector %llu): data checksum ",
		 (unsigned long long)wb_ext[3].cache);
	check(has(err, want), "writeback: the mismatch reported");
	snprintf(want, sizeof(want), "origin sectors 12+4 (cache sector %llu): data checksum ",
		 (unsigned long long)wb_ext[1].cache);
	check(has(err, want) && has(err, "(range of 8 sectors from cache sector"),
	      "writeback: a mismatch in the part of the range the key lost, reported");
	check(origin_is(c, o, 1U << 1 | 1U << 3),
	      "writeback: mismatched extents not copied, the others copied");
	check(has(err, "--mark-clean: not done") && file_sum(c) == csum,
	      "writeback: --mark-clean refused after a mismatch, the cache unchanged");

	/* version 2: no checksums */
	if (!wb_make(c, o, "2"))
		return;
	snprintf(want, sizeof(want),
		 "writeback: 10 extents, 84 sectors copied to %s, 0 mismatched\n", o);
	check(run("bcache-writeback", "-q", "--uuid", WB_UUID, c, o, NULL) == 0 &&
	      !strcmp(out, want) && origin_is(c, o, 0),
	      "writeback of a version 2 cache");

	/* caches that cannot be read or trusted */
	if (!wb_make(c, o, "3"))
		return;
	osum = file_sum(o);
	copy_file(c, c2);
	fx("uuidcsum", c2);
	check(run("bcache-writeback", "--uuid", WB_UUID, c2, o, NULL) == 3 &&
	      has(err, "the current UUID table copy fails its checksum"),
	      "writeback: a bad UUID table: exit 3");
	copy_file(c, c2);
	fx("journal", c2, "d:5000+8@0,dirty");
	check(run("bcache-writeback", "--uuid", WB_UUID, c2, o, NULL) == 3 &&
	      has(err, WB_JOURNAL_REFUSED),
	      "writeback: a journal key the kernel refuses: exit 3");
	copy_file(c, c2);
	/* the checkpoint's root node: the fixture's nodes come from the last bucket down */
	snprintf(want, sizeof(want), "%llu", 64 * MiB - 512 * 1024 + 1000);
	fx("flip", c2, want);
	check(run("bcache-writeback", "--uuid", WB_UUID, c2, o, NULL) == 3 &&
	      has(err, "the index cannot be trusted: it cannot be loaded: "),
	      "writeback: an index node that fails its checksum: exit 3");
	copy_file(c, c2);
	fx("flip", c2, "4196");	/* the superblock */
	check(run("bcache-writeback", "--uuid", WB_UUID, c2, o, NULL) == 3 &&
	      has(err, "superblock checksum mismatch"), "writeback: a bad superblock: exit 3");
	check(file_sum(o) == osum, "writeback: ... the origin untouched");
	check(run("bcache-writeback", "--uuid", WB_UUID, tpath("nonexistent"), o, NULL) == 3 &&
	      has(err, "cannot open"), "writeback: no cache: exit 3");
	unlink(c2);
	unlink(c);
	unlink(o);
}

/* Usage errors and a set of several devices. */
static void test_writeback_usage(void)
{
	const char *a = tpath("wb-a"), *b = tpath("wb-b");

	check(run("bcache-writeback", NULL) == 2 && has(err, "Usage:"),
	      "writeback: no arguments: exit 2");
	check(run("bcache-writeback", a, b, NULL) == 2 && has(err, "--uuid is needed"),
	      "writeback: no --uuid: exit 2");
	check(run("bcache-writeback", "-u", "nonsense", a, b, NULL) == 2,
	      "writeback: a bad uuid: exit 2");
	check(run("bcache-writeback", "-u", WB_UUID, a, NULL) == 2,
	      "writeback: one device: exit 2");
	check(run("bcache-writeback", "-u", WB_UUID, "--frob", a, b, NULL) == 2,
	      "writeback: an unknown option: exit 2");
	check(run("bcache-writeback", "--help", NULL) == 0 && has(out, "--mark-clean") &&
	      has(out, "Exit status"), "writeback --help");
	make_file(a, 64 * MiB);
	make_file(b, 64 * MiB);
	check(run("bcache-writeback", "-u", WB_UUID, a, b, NULL) == 3 &&
	      has(err, "no dm-bcache superblock (bad magic)"),
	      "writeback: an unformatted cache: exit 3");
	check(run("make-bcache", "-q", a, b, NULL) == 0 &&
	      run("bcache-writeback", "-u", WB_UUID, a, b, NULL) == 3 &&
	      has(err, "a set of several devices is not supported yet"),
	      "writeback: a member of a set of two: exit 3");
	unlink(a);
	unlink(b);
}

/* Are @len bytes at @p all zero? */
static bool zeros(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

/* The version 3 superblock --upgrade wrote (@b) over the version 2 one (@a). */
static void check_upgraded_sb(const struct bch_sb_disk *a, const struct bch_sb_disk *b,
			      uint64_t dev_size)
{
	const struct bch_member_disk *m = &b->members[0];
	struct bch_bkey root;

	check(le32toh(b->version) == 3 && !b->dev_idx && !b->members_pad,
	      "upgrade: version 3, member 0");
	check(le32toh(m->state) == BCH_MEMBER_ACTIVE && !memcmp(m->uuid, b->uuid, 16) &&
	      m->nbuckets == b->nbuckets && m->bucket_size == b->bucket_size &&
	      zeros(&b->members[1], sizeof(b->members) - sizeof(*m)),
	      "upgrade: the member table: this device alone, active");
	check(zeros(&b->btree_root, sizeof(b->btree_root)) && bch_sb_root(b, &root) &&
	      root.size == 1 && root.nptrs == 1 && !bch_ptr_dev(root.ptr[0]) && !b->btree_level,
	      "upgrade: the version 3 root, the version 2 one zero");
	check(!b->state_seq, "upgrade: the bucket states not valid (state_seq 0)");
	check(le64toh(b->seq) == le64toh(a->seq) + 1 && b->flags == a->flags,
	      "upgrade: one superblock write on, the flags kept");
	check(le32toh(b->prio_current) == !le32toh(a->prio_current) &&
	      b->prio_csum_other == a->prio_csum,
	      "upgrade: the other bucket array copy current, the old one the fallback");
	check(b->uuid_current == a->uuid_current && b->uuid_csum == a->uuid_csum &&
	      b->uuid_csum_other == a->uuid_csum_other, "upgrade: the UUID table unchanged");
	check(!memcmp(a->uuid, b->uuid, 16) && !memcmp(a->set_uuid, b->set_uuid, 16) &&
	      !memcmp(a->label, b->label, sizeof(a->label)) && a->created == b->created &&
	      a->nbuckets == b->nbuckets && a->journal_first == b->journal_first,
	      "upgrade: the device's identity and layout kept");
	check(le64toh(b->journal_seq) == 2 && le64toh(b->journal_pos) == 8,
	      "upgrade: the journal starts past its one entry (seq 2, ring sector 8)");
	check(zeros(b->reserved, sizeof(b->reserved)), "upgrade: reserved bytes zero");
	check(!bch_sb_validate(b, dev_size >> BCH_SECTOR_SHIFT), "upgrade: the superblock validates");
}

/* bcache-check --upgrade: the superblock and the root node it writes; refusals. */
static void test_upgrade(void)
{
	const char *c = tpath("up"), *s1 = tpath("up-1");
	struct bch_bset_disk set;
	struct bch_sb_disk a, b;
	struct bch_bkey root;

	make_file(c, 64 * MiB);
	check(run("make-bcache", "-q", "--format-version", "2", c, NULL) == 0,
	      "upgrade: a version 2 cache");
	if (!fx("index", c, "keys=100", "dirty=10") || !fx("journal", c, "d:2000+8@40,dirty"))
		return;
	read_sb(c, &a);
	check(run("bcache-check", "--upgrade", "--dry-run", c, NULL) == 0 &&
	      has(out, "upgrade: --dry-run: nothing was written"), "upgrade: --dry-run");
	read_sb(c, &b);
	check(!memcmp(&a, &b, sizeof(a)), "upgrade: --dry-run: the superblock as it was");
	check(run("bcache-check", "-q", "--upgrade", c, NULL) == 0 && !out[0],
	      "upgrade: --upgrade -q: exit 0, nothing printed");
	read_sb(c, &b);
	check_upgraded_sb(&a, &b, 64 * MiB);
	bch_sb_root(&b, &root);
	rw_file(c, &set, sizeof(set), bch_ptr_sector(root.ptr[0]) << BCH_SECTOR_SHIFT, false);
	check(le32toh(set.magic) == BCH_BSET_MAGIC && le16toh(set.key_bytes) == BCH_KEY_BYTES_V3 &&
	      !set.level && !set.set && le32toh(set.nkeys) == 101,
	      "upgrade: the root node: one set of 101 keys of 48 bytes");
	check(run("bcache-check", "-q", c, NULL) == 0, "upgrade: then consistent");
	check(run("bcache-check", "--upgrade", c, NULL) == 3 &&
	      has(out, "already format version 3"), "upgrade: again: refused, exit 3");

	check(run("bcache-check", "--upgrade", "-r", c, NULL) == 2 &&
	      has(err, "--upgrade does not go with --repair"), "upgrade: with -r: exit 2");
	check(run("bcache-check", "-n", c, NULL) == 2 &&
	      has(err, "--dry-run only goes with --upgrade"), "upgrade: -n alone: exit 2");
	check(run("bcache-check", "-U", c, c, NULL) == 2 && has(err, "takes one device"),
	      "upgrade: two devices: exit 2");
	check(run("bcache-check", "--help", NULL) == 0 && has(out, "--upgrade") &&
	      has(out, "3 not upgraded"), "upgrade: --help");
	make_file(c, 64 * MiB);
	make_file(s1, 64 * MiB);
	check(run("make-bcache", "-q", c, s1, NULL) == 0 &&
	      run("bcache-check", "--upgrade", c, NULL) == 3, "upgrade: a member of a set: exit 3");
	unlink(c);
	unlink(s1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <bindir>\n", argv[0]);
		return 2;
	}
	bindir = argv[1];
	strcpy(tmpdir, "/tmp/bcache-unit.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}

	test_crc32c();
	test_sizes();
	test_uuid();
	test_format();
	test_make_errors();
	test_show_errors();
	test_show_uuids();
	test_root();
	test_set_format();
	test_set_errors();
	test_member_rules();
	test_key_rules();
	test_writeback();
	test_writeback_usage();
	test_upgrade();

	unlink(tpath("cache"));
	unlink(tpath("stdout"));
	unlink(tpath("stderr"));
	rmdir(tmpdir);

	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
