// SPDX-License-Identifier: GPL-2.0
/*
 * dmb-replay-log: read and replay dm-log-writes logs.
 *
 * The format (drivers/md/dm-log-writes.c, Documentation/admin-guide/
 * device-mapper/log-writes.rst), all little-endian:
 *
 *   byte 0          struct log_write_super { magic, version, nr_entries,
 *                   sectorsize }, in a block of sectorsize bytes
 *   then nr_entries times:
 *     one block     struct log_write_entry { sector, nr_sectors, flags,
 *                   data_len }, followed in the same block by data_len
 *                   bytes of mark text when flags has MARK
 *     nr_sectors    the data written (none for a DISCARD)
 *
 * sector and nr_sectors count sectorsize units of the logged device. The
 * kernel logs a write only once a later flush (or its own FUA) made it
 * durable, so the prefix of the log up to any entry is a state the device
 * could have been left in by a crash. nr_entries in the super is updated
 * after every FUA and MARK entry (and when the target is removed); entries
 * after it are not read.
 *
 *   dmb-replay-log list [-p] LOG     every entry (-p: only FLUSH/FUA/MARK)
 *   dmb-replay-log points LOG        the index of every FLUSH/FUA/MARK entry
 *   dmb-replay-log find LOG MARK     the index of the first entry marked MARK
 *   dmb-replay-log replay [-s FIRST] (-e LAST | -m MARK | -a) [-d] [-v] LOG DEV
 *                                    write entries FIRST (default 0) up to
 *                                    and including LAST (or the entry marked
 *                                    MARK, or the last one) onto DEV
 *
 * Entries are numbered from 0. A replayed DISCARD writes zeros (with -d it
 * is a BLKDISCARD on a block device, zeros elsewhere or if that fails).
 * DEV is not cleared first: start from a copy of the logged device's first
 * state (for a log of a fresh device: a zeroed one), or replay in steps
 * with -s onto the result of the previous step.
 *
 * Exit status: 0 done, 1 a bad or truncated log, an unknown mark or entry,
 * a target too small; 2 usage or IO errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#define LOG_FLUSH_FLAG		(1 << 0)
#define LOG_FUA_FLAG		(1 << 1)
#define LOG_DISCARD_FLAG	(1 << 2)
#define LOG_MARK_FLAG		(1 << 3)
#define LOG_METADATA_FLAG	(1 << 4)
#define LOG_KNOWN_FLAGS		0x1f
#define LOG_POINT_FLAGS		(LOG_FLUSH_FLAG | LOG_FUA_FLAG | LOG_MARK_FLAG)

#define WRITE_LOG_VERSION	1ULL
#define WRITE_LOG_MAGIC		0x6a736677736872ULL

#define ENTRY_SIZE		32	/* struct log_write_entry */
#define COPY_CHUNK		(1 << 20)

struct entry {
	uint64_t index;
	uint64_t sector;	/* sectorsize units */
	uint64_t nr_sectors;
	uint64_t flags;
	uint64_t data_len;
	uint64_t data_off;	/* byte offset of the data in the log */
	char mark[4096];	/* NUL-terminated when MARK */
};

struct log {
	int fd;
	const char *path;
	uint64_t size;		/* bytes */
	uint64_t nr_entries;
	uint32_t sectorsize;
	uint64_t next_off;	/* byte offset of the next entry header */
	uint64_t next_index;
	unsigned char *block;
};

static int verbose;

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dmb-replay-log: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static uint64_t le64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint32_t le32_at(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t dev_size(int fd, const char *path)
{
	struct stat st;
	uint64_t sz;

	if (fstat(fd, &st))
		die(2, "%s: %s", path, strerror(errno));
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &sz))
			die(2, "%s: BLKGETSIZE64: %s", path, strerror(errno));
		return sz;
	}
	return st.st_size;
}

static void read_all(int fd, const char *path, void *buf, size_t len,
		     uint64_t off)
{
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		r = pread(fd, (char *)buf + done, len - done, off + done);
		if (r < 0)
			die(2, "%s: read at %" PRIu64 ": %s", path, off + done,
			    strerror(errno));
		if (r == 0)
			die(1, "%s: truncated at byte %" PRIu64, path, off + done);
		done += r;
	}
}

static void write_all(int fd, const char *path, const void *buf, size_t len,
		      uint64_t off)
{
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		r = pwrite(fd, (const char *)buf + done, len - done, off + done);
		if (r <= 0)
			die(2, "%s: write at %" PRIu64 ": %s", path, off + done,
			    r ? strerror(errno) : "short write");
		done += r;
	}
}

static void log_open(struct log *lg, const char *path)
{
	unsigned char super[32];
	struct stat st;
	uint64_t magic, version;

	lg->path = path;
	lg->fd = open(path, O_RDONLY);
	if (lg->fd < 0)
		die(2, "%s: %s", path, strerror(errno));
	/*
	 * The log was written by the kernel below the page cache: drop any
	 * pages of the device cached before (a no-op for a file).
	 */
	if (!fstat(lg->fd, &st) && S_ISBLK(st.st_mode))
		ioctl(lg->fd, BLKFLSBUF, 0);
	lg->size = dev_size(lg->fd, path);
	if (lg->size < sizeof(super))
		die(1, "%s: too small for a log super block", path);
	read_all(lg->fd, path, super, sizeof(super), 0);
	magic = le64_at(super);
	version = le64_at(super + 8);
	lg->nr_entries = le64_at(super + 16);
	lg->sectorsize = le32_at(super + 24);
	if (magic != WRITE_LOG_MAGIC)
		die(1, "%s: not a dm-log-writes log (magic %#" PRIx64 ")", path,
		    magic);
	if (version != WRITE_LOG_VERSION)
		die(1, "%s: log version %" PRIu64 ", only %llu is known", path,
		    version, WRITE_LOG_VERSION);
	if (lg->sectorsize < 512 || lg->sectorsize > 4096 ||
	    (lg->sectorsize & (lg->sectorsize - 1)))
		die(1, "%s: bad sector size %u", path, lg->sectorsize);
	lg->block = malloc(lg->sectorsize);
	if (!lg->block)
		die(2, "out of memory");
	lg->next_off = lg->sectorsize;
	lg->next_index = 0;
}

/* The next entry's header; 0 at the end of the log. */
static int log_next(struct log *lg, struct entry *e)
{
	uint64_t data_bytes;

	if (lg->next_index >= lg->nr_entries)
		return 0;
	if (lg->next_off + lg->sectorsize > lg->size)
		die(1, "%s: entry %" PRIu64 " of %" PRIu64 " is past the end of the log",
		    lg->path, lg->next_index, lg->nr_entries);
	read_all(lg->fd, lg->path, lg->block, lg->sectorsize, lg->next_off);
	e->index = lg->next_index;
	e->sector = le64_at(lg->block);
	e->nr_sectors = le64_at(lg->block + 8);
	e->flags = le64_at(lg->block + 16);
	e->data_len = le64_at(lg->block + 24);
	e->data_off = lg->next_off + lg->sectorsize;
	e->mark[0] = 0;
	if (e->flags & ~(uint64_t)LOG_KNOWN_FLAGS)
		die(1, "%s: entry %" PRIu64 ": unknown flags %#" PRIx64,
		    lg->path, e->index, e->flags);
	if (e->flags & LOG_MARK_FLAG) {
		if (e->data_len > lg->sectorsize - ENTRY_SIZE)
			die(1, "%s: entry %" PRIu64 ": mark of %" PRIu64 " bytes",
			    lg->path, e->index, e->data_len);
		memcpy(e->mark, lg->block + ENTRY_SIZE, e->data_len);
		e->mark[e->data_len] = 0;
		if (strlen(e->mark) != e->data_len)
			die(1, "%s: entry %" PRIu64 ": NUL in mark", lg->path,
			    e->index);
	} else if (e->data_len) {
		/* Only marks carry inline data (the kernel logs no other). */
		die(1, "%s: entry %" PRIu64 ": %" PRIu64 " bytes of inline data",
		    lg->path, e->index, e->data_len);
	}
	if (e->nr_sectors > (UINT64_MAX - e->data_off) / lg->sectorsize ||
	    e->sector > UINT64_MAX / lg->sectorsize - e->nr_sectors)
		die(1, "%s: entry %" PRIu64 ": bad extent", lg->path, e->index);
	data_bytes = (e->flags & LOG_DISCARD_FLAG) ? 0 :
		     e->nr_sectors * lg->sectorsize;
	if (e->data_off + data_bytes > lg->size)
		die(1, "%s: entry %" PRIu64 ": data past the end of the log",
		    lg->path, e->index);
	lg->next_off = e->data_off + data_bytes;
	lg->next_index++;
	return 1;
}

static void flags_str(uint64_t flags, char *buf, size_t len)
{
	static const char *const names[] = {
		"FLUSH", "FUA", "DISCARD", "MARK", "METADATA"
	};
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & (1ULL << i))
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "",
				      names[i]);
	if (!n)
		snprintf(buf, len, "-");
}

/* Mark text as printed: anything but printable ASCII becomes '?'. */
static const char *printable(const char *s)
{
	static char out[4096];
	size_t i;

	for (i = 0; s[i] && i < sizeof(out) - 1; i++)
		out[i] = (s[i] > ' ' && s[i] < 127) ? s[i] : '?';
	out[i] = 0;
	return out;
}

static void print_entry(const struct entry *e)
{
	char fl[64];

	flags_str(e->flags, fl, sizeof(fl));
	printf("%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s", e->index, e->sector,
	       e->nr_sectors, fl);
	if (e->flags & LOG_MARK_FLAG)
		printf("\t%s", printable(e->mark));
	putchar('\n');
}

static int cmd_list(int argc, char **argv)
{
	struct log lg;
	struct entry e;
	int c, points = 0;

	while ((c = getopt(argc, argv, "p")) != -1) {
		if (c != 'p')
			return -1;
		points = 1;
	}
	if (optind != argc - 1)
		return -1;
	log_open(&lg, argv[optind]);
	printf("# %s: %" PRIu64 " entries, sector size %u\n", lg.path,
	       lg.nr_entries, lg.sectorsize);
	printf("# index\tsector\tsectors\tflags\tmark\n");
	while (log_next(&lg, &e))
		if (!points || (e.flags & LOG_POINT_FLAGS))
			print_entry(&e);
	return 0;
}

static int cmd_points(int argc, char **argv)
{
	struct log lg;
	struct entry e;

	if (argc != 2)
		return -1;
	log_open(&lg, argv[1]);
	while (log_next(&lg, &e))
		if (e.flags & LOG_POINT_FLAGS)
			printf("%" PRIu64 "\n", e.index);
	return 0;
}

static int find_mark(struct log *lg, const char *mark, uint64_t *index)
{
	struct entry e;

	while (log_next(lg, &e))
		if ((e.flags & LOG_MARK_FLAG) && !strcmp(e.mark, mark)) {
			*index = e.index;
			return 1;
		}
	return 0;
}

static int cmd_find(int argc, char **argv)
{
	struct log lg;
	uint64_t index;

	if (argc != 3)
		return -1;
	log_open(&lg, argv[1]);
	if (!find_mark(&lg, argv[2], &index))
		die(1, "%s: no mark '%s'", lg.path, argv[2]);
	printf("%" PRIu64 "\n", index);
	return 0;
}

static void zero_range(int fd, const char *path, uint64_t off, uint64_t len,
		       int discard, int is_blk)
{
	static char *zeros;
	uint64_t range[2] = { off, len }, n;

	if (discard && is_blk && !ioctl(fd, BLKDISCARD, range))
		return;
	if (!zeros) {
		zeros = calloc(1, COPY_CHUNK);
		if (!zeros)
			die(2, "out of memory");
	}
	for (; len; off += n, len -= n) {
		n = len < COPY_CHUNK ? len : COPY_CHUNK;
		write_all(fd, path, zeros, n, off);
	}
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-';
}

static int cmd_replay(int argc, char **argv)
{
	uint64_t first = 0, last = UINT64_MAX, dsize, off, len, n, done = 0;
	const char *mark = NULL, *dev;
	int c, all = 0, discard = 0, fd, is_blk;
	struct log lg;
	struct entry e;
	struct stat st;
	char *buf;

	while ((c = getopt(argc, argv, "s:e:m:adv")) != -1) {
		switch (c) {
		case 's':
			if (parse_u64(optarg, &first))
				return -1;
			break;
		case 'e':
			if (parse_u64(optarg, &last))
				return -1;
			break;
		case 'm':
			mark = optarg;
			break;
		case 'a':
			all = 1;
			break;
		case 'd':
			discard = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc - 2 || (last != UINT64_MAX) + !!mark + all != 1)
		return -1;
	dev = argv[optind + 1];
	log_open(&lg, argv[optind]);
	if (mark) {
		if (!find_mark(&lg, mark, &last))
			die(1, "%s: no mark '%s'", lg.path, mark);
		/* rewind */
		lg.next_off = lg.sectorsize;
		lg.next_index = 0;
	} else if (all) {
		if (!lg.nr_entries)
			die(1, "%s: the log has no entries", lg.path);
		last = lg.nr_entries - 1;
	}
	if (last >= lg.nr_entries)
		die(1, "%s: no entry %" PRIu64 " (the log has %" PRIu64 ")",
		    lg.path, last, lg.nr_entries);
	if (first > last)
		die(1, "first entry %" PRIu64 " is after the last, %" PRIu64,
		    first, last);
	/* Check every header up to the last before writing anything. */
	while (log_next(&lg, &e) && e.index < last)
		;
	lg.next_off = lg.sectorsize;
	lg.next_index = 0;

	fd = open(dev, O_WRONLY);
	if (fd < 0)
		die(2, "%s: %s", dev, strerror(errno));
	is_blk = !fstat(fd, &st) && S_ISBLK(st.st_mode);
	dsize = dev_size(fd, dev);
	buf = malloc(COPY_CHUNK);
	if (!buf)
		die(2, "out of memory");

	while (log_next(&lg, &e) && e.index <= last) {
		if (e.index < first)
			continue;
		if (verbose)
			print_entry(&e);
		if (!e.nr_sectors)
			continue;
		off = e.sector * lg.sectorsize;
		len = e.nr_sectors * lg.sectorsize;
		if (off + len > dsize)
			die(1, "%s: entry %" PRIu64 " writes bytes %" PRIu64 "..%" PRIu64
			    ", past the end of %s (%" PRIu64 " bytes)", lg.path,
			    e.index, off, off + len, dev, dsize);
		if (e.flags & LOG_DISCARD_FLAG) {
			zero_range(fd, dev, off, len, discard, is_blk);
			done++;
			continue;
		}
		for (; len; off += n, len -= n, e.data_off += n) {
			n = len < COPY_CHUNK ? len : COPY_CHUNK;
			read_all(lg.fd, lg.path, buf, n, e.data_off);
			write_all(fd, dev, buf, n, off);
		}
		done++;
	}
	if (fsync(fd))
		die(2, "%s: fsync: %s", dev, strerror(errno));
	close(fd);
	fprintf(stderr, "dmb-replay-log: replayed entries %" PRIu64 "..%" PRIu64
		" (%" PRIu64 " writes and discards) onto %s\n", first, last,
		done, dev);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: dmb-replay-log list [-p] LOG\n"
		"       dmb-replay-log points LOG\n"
		"       dmb-replay-log find LOG MARK\n"
		"       dmb-replay-log replay [-s FIRST] (-e LAST | -m MARK | -a) [-d] [-v] LOG DEV\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int r = -1;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "list"))
		r = cmd_list(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "points"))
		r = cmd_points(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "find"))
		r = cmd_find(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "replay"))
		r = cmd_replay(argc - 1, argv + 1);
	if (r < 0)
		usage();
	if (fflush(stdout) || ferror(stdout))
		die(2, "write error on stdout");
	return r;
}
