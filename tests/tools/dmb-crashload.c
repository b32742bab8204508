// SPDX-License-Identifier: GPL-2.0
/*
 * dmb-crashload: a crash-consistency workload and its checker.
 *
 * The workload writes batches: each batch is a few writes of 4 KiB ..
 * 128 KiB at random 4 KiB offsets of DEV (O_DIRECT, one at a time, with
 * checked reads in between), then an fsync. Every 4 KiB block written
 * carries its block number, a stamp naming the write, and a pattern
 * derived from both. The model of what was written lives on a separate
 * MODEL device, written with O_DIRECT and fdatasync:
 *
 *   block 0       header: magic, block count of the region, seed
 *   block 2N      batch N's intent: its writes, before the first is issued
 *   block 2N+1    batch N's ack, once the fsync after its writes returned
 *
 * so after a crash the model says which batches were acknowledged (every
 * write of them must read back) and which one was in flight (each of its
 * blocks may hold the old or the new data). The stamp of write i of batch
 * N is N << 16 | (i + 1): stamps grow with time, so a block holding a
 * stamp older than the model's lost an acknowledged write.
 *
 *   dmb-crashload init -m MODEL -s MiB [-S SEED]
 *   dmb-crashload run -d DEV -m MODEL -n BATCHES [-w WRITES] [-r READS]
 *                     [-M LOGDEV] [-q]
 *       Finishes a batch left in flight by a crash (rewrites it, fsyncs,
 *       acks it), then runs BATCHES more, at most WRITES writes (default
 *       16) and READS checked reads (default 8) each. With -M, after each
 *       ack "dmsetup message LOGDEV 0 mark ackN" (dm-log-writes) runs.
 *       Prints "ack N" after each batch unless -q.
 *   dmb-crashload verify -d DEV [-o ORIGIN] -m MODEL [-K ACKED] [-x]
 *       Reads the region of DEV (and ORIGIN) and classifies every block:
 *       lost (older than the last acknowledged write), corrupt (not a
 *       block this workload wrote there), stale (DEV and ORIGIN differ).
 *       -K: treat batches 1..ACKED as the acknowledged ones (a replayed
 *       log's point), whatever the model's acks say; -x: nothing was in
 *       flight (the point is right after an ack).
 *   dmb-crashload pick -m MODEL [-K ACKED]
 *       Print a block (not block 0) holding acknowledged data.
 *
 * Exit status: 0 clean, 1 a mismatch (details on stderr), 2 usage/IO.
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
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "dmb-io.h"

#define BLK		4096
#define CHUNK		64	/* blocks per verify read */
#define MAX_LEN		32	/* blocks per write */
#define MAX_WRITES	500	/* writes per batch: they fit one record */
#define MAGIC_HDR	0x31524448424d44ULL	/* "DMBHDR1" */
#define MAGIC_REC	0x31434552424d44ULL	/* "DMBREC1" */
#define KIND_INTENT	1
#define KIND_ACK	2
#define SHOW_MAX	10

struct hdr {
	uint64_t magic;
	uint64_t sum;
	uint64_t nblocks;
	uint64_t seed;
};

struct wr {
	uint32_t blk;
	uint32_t n;
};

struct rec {
	uint64_t magic;
	uint64_t sum;
	uint64_t batch;
	uint32_t kind;
	uint32_t nwrites;
	struct wr w[MAX_WRITES];
};

_Static_assert(sizeof(struct rec) <= BLK, "a record fits a block");

static int mfd = -1;
static const char *mpath;
static uint64_t mblocks;	/* blocks of the model device */
static struct hdr hdr;
static uint64_t *model;		/* stamp of every block, 0: never written */
static uint64_t acked;		/* last acknowledged batch */
static struct rec *inflight;	/* the batch after it, if its intent exists */
static unsigned char *zero;

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dmb-crashload: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void *balloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, BLK, len))
		die(2, "out of memory");
	memset(p, 0, len);
	return p;
}

static uint64_t fnv(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t stamp_of(uint64_t batch, uint32_t i)
{
	return batch << 16 | (i + 1);
}

static void fill_block(uint64_t *p, uint64_t blk, uint64_t stamp)
{
	uint64_t s = (blk * 0x9e3779b97f4a7c15ULL) ^ stamp ^ 0x2545f4914f6cdd1dULL;
	size_t i;

	p[0] = blk;
	p[1] = stamp;
	for (i = 2; i < BLK / 8; i++)
		p[i] = dmb_xs(&s);
}

/* The stamp a block holds: 0 for zeros, UINT64_MAX if not ours. */
static uint64_t block_stamp(const uint64_t *p, uint64_t blk)
{
	static uint64_t want[BLK / 8];

	if (!memcmp(p, zero, BLK))
		return 0;
	if (p[0] != blk || !p[1] || p[1] == UINT64_MAX)
		return UINT64_MAX;
	fill_block(want, blk, p[1]);
	return memcmp(p, want, BLK) ? UINT64_MAX : p[1];
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

static void io(int fd, const char *path, void *buf, uint64_t blk, uint64_t n,
	       int write)
{
	if (dmb_io_all(fd, buf, n * BLK, blk * BLK, write))
		die(2, "%s: %s at block %" PRIu64 ": %s", path,
		    write ? "write" : "read", blk,
		    errno ? strerror(errno) : "short");
}

static int open_dev(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT);

	if (fd < 0)
		die(2, "%s: %s", path, strerror(errno));
	return fd;
}

static void model_open(const char *path, int flags)
{
	mpath = path;
	mfd = open_dev(path, flags);
	mblocks = dev_size(mfd, path) / BLK;
	if (mblocks < 4)
		die(2, "%s: too small for a model", path);
}

static void model_sync(void)
{
	if (fdatasync(mfd))
		die(2, "%s: fdatasync: %s", mpath, strerror(errno));
}

static uint64_t max_batch(void)
{
	return (mblocks - 2) / 2;
}

static void hdr_read(void)
{
	struct hdr *h = balloc(BLK);
	uint64_t sum;

	io(mfd, mpath, h, 0, 1, 0);
	sum = h->sum;
	h->sum = 0;
	if (h->magic != MAGIC_HDR || sum != fnv(h, BLK) || !h->nblocks)
		die(2, "%s: no model header (run init)", mpath);
	hdr = *h;
	free(h);
}

/* A record, or NULL if that block holds none (not yet written, torn). */
static struct rec *rec_read(uint64_t batch, uint32_t kind)
{
	struct rec *r = balloc(BLK);
	uint64_t sum;
	uint32_t i;

	if (batch > max_batch())
		goto none;
	io(mfd, mpath, r, 2 * batch + (kind == KIND_ACK), 1, 0);
	sum = r->sum;
	r->sum = 0;
	if (r->magic != MAGIC_REC || sum != fnv(r, BLK) || r->batch != batch ||
	    r->kind != kind || r->nwrites > MAX_WRITES)
		goto none;
	for (i = 0; i < r->nwrites; i++)
		if (!r->w[i].n || r->w[i].n > MAX_LEN ||
		    r->w[i].blk + (uint64_t)r->w[i].n > hdr.nblocks)
			die(2, "%s: batch %" PRIu64 " write %u is out of range",
			    mpath, batch, i);
	return r;
none:
	free(r);
	return NULL;
}

static void rec_write(struct rec *r, uint64_t batch, uint32_t kind)
{
	if (batch > max_batch())
		die(2, "%s: full after %" PRIu64 " batches", mpath, max_batch());
	r->magic = MAGIC_REC;
	r->batch = batch;
	r->kind = kind;
	r->sum = 0;
	r->sum = fnv(r, BLK);
	io(mfd, mpath, r, 2 * batch + (kind == KIND_ACK), 1, 1);
	model_sync();
}

static void apply(const struct rec *r)
{
	uint32_t i, j;

	for (i = 0; i < r->nwrites; i++)
		for (j = 0; j < r->w[i].n; j++)
			model[r->w[i].blk + j] = stamp_of(r->batch, i);
}

/*
 * Load the model: batches 1..ACKED applied, the next one in flight if
 * its intent exists. force: ACKED is given (each of them must have an
 * intent), else it is the last batch with an ack.
 */
static void model_load(int force, uint64_t k, int exact)
{
	struct rec *r, *a;
	uint64_t n;

	hdr_read();
	model = calloc(hdr.nblocks, sizeof(*model));
	zero = balloc(BLK);
	if (!model)
		die(2, "out of memory");
	for (n = 1;; n++) {
		if (force && n > k)
			break;
		r = rec_read(n, KIND_INTENT);
		if (!r) {
			if (force)
				die(2, "%s: batch %" PRIu64 " has no intent", mpath, n);
			break;
		}
		a = force ? NULL : rec_read(n, KIND_ACK);
		if (!force && !a) {
			inflight = r;
			break;
		}
		free(a);
		apply(r);
		free(r);
	}
	acked = n - 1;
	if (force && !exact)
		inflight = rec_read(n, KIND_INTENT);
	if (exact && inflight) {
		free(inflight);
		inflight = NULL;
	}
}

/* May block blk hold stamp s, written by the batch in flight? */
static int inflight_has(uint64_t blk, uint64_t s)
{
	uint32_t i;

	if (!inflight)
		return 0;
	for (i = 0; i < inflight->nwrites; i++)
		if (blk >= inflight->w[i].blk &&
		    blk < inflight->w[i].blk + (uint64_t)inflight->w[i].n &&
		    s == stamp_of(inflight->batch, i))
			return 1;
	return 0;
}

static uint64_t parse(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		die(2, "not a number: '%s'", s);
	return v;
}

static int cmd_init(int argc, char **argv)
{
	uint64_t size = 0, seed = 1, b, n;
	const char *m = NULL;
	struct hdr *h;
	int c;

	while ((c = getopt(argc, argv, "m:s:S:")) != -1) {
		switch (c) {
		case 'm':
			m = optarg;
			break;
		case 's':
			size = parse(optarg) << 20;
			break;
		case 'S':
			seed = parse(optarg);
			break;
		default:
			return -1;
		}
	}
	if (!m || !size || optind != argc)
		return -1;
	model_open(m, O_RDWR);
	/* Clear every record slot: a model disk may have been used before. */
	h = balloc(256 * BLK);
	for (b = 1; b < mblocks; b += n)
		io(mfd, mpath, h, b, n = mblocks - b < 256 ? mblocks - b : 256, 1);
	h->magic = MAGIC_HDR;
	h->nblocks = size / BLK;
	h->seed = seed ? seed : 1;
	h->sum = fnv(h, BLK);
	io(mfd, mpath, h, 0, 1, 1);
	model_sync();
	printf("dmb-crashload: model on %s: %" PRIu64 " blocks, room for %" PRIu64
	       " batches\n", m, size / BLK, max_batch());
	return 0;
}

static int fd = -1;
static const char *dpath;
static uint64_t *buf;
static uint64_t rstate;

static void write_one(const struct rec *r, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < r->w[i].n; j++)
		fill_block(buf + j * BLK / 8, r->w[i].blk + j,
			   stamp_of(r->batch, i));
	io(fd, dpath, buf, r->w[i].blk, r->w[i].n, 1);
	for (j = 0; j < r->w[i].n; j++)
		model[r->w[i].blk + j] = stamp_of(r->batch, i);
}

static void sync_dev(void)
{
	if (fsync(fd))
		die(2, "%s: fsync: %s", dpath, strerror(errno));
}

static void mark(const char *logdev, uint64_t batch)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "dmsetup message %s 0 mark ack%" PRIu64,
		 logdev, batch);
	if (system(cmd))
		die(2, "'%s' failed", cmd);
}

/* A read whose every block must be what the model (exactly) says. */
static void checked_read(uint64_t blk, uint64_t n)
{
	uint64_t i, s;

	io(fd, dpath, buf, blk, n, 0);
	for (i = 0; i < n; i++) {
		s = block_stamp(buf + i * BLK / 8, blk + i);
		if (s != model[blk + i]) {
			fprintf(stderr, "MISMATCH read of block %" PRIu64
				" during the run: want stamp %#" PRIx64
				", got %#" PRIx64 "\n", blk + i,
				model[blk + i], s);
			printf("dmb-crashload run: STALE READ\n");
			exit(1);
		}
	}
}

static int cmd_run(int argc, char **argv)
{
	uint64_t nbatches = 0, maxw = 16, reads = 8, n, b, nb, first;
	const char *m = NULL, *logdev = NULL;
	int c, quiet = 0;
	struct rec *r;
	uint32_t i, k;

	while ((c = getopt(argc, argv, "d:m:n:w:r:M:q")) != -1) {
		switch (c) {
		case 'd':
			dpath = optarg;
			break;
		case 'm':
			m = optarg;
			break;
		case 'n':
			nbatches = parse(optarg);
			break;
		case 'w':
			maxw = parse(optarg);
			break;
		case 'r':
			reads = parse(optarg);
			break;
		case 'M':
			logdev = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			return -1;
		}
	}
	if (!dpath || !m || !nbatches || !maxw || maxw > MAX_WRITES ||
	    optind != argc)
		return -1;
	model_open(m, O_RDWR);
	model_load(0, 0, 0);
	nb = hdr.nblocks;
	if (nb < 4 * MAX_LEN)
		die(2, "the region is too small");
	fd = open_dev(dpath, O_RDWR);
	if (dev_size(fd, dpath) < nb * BLK)
		die(2, "%s is smaller than the region (%" PRIu64 " blocks)",
		    dpath, nb);
	buf = balloc(MAX_LEN * BLK);

	/* A batch a crash left in flight: finish it, then go on. */
	if (inflight) {
		for (i = 0; i < inflight->nwrites; i++)
			write_one(inflight, i);
		sync_dev();
		r = balloc(BLK);
		rec_write(r, inflight->batch, KIND_ACK);
		free(r);
		acked = inflight->batch;
		if (logdev)
			mark(logdev, acked);
		if (!quiet)
			printf("ack %" PRIu64 " (finished after a crash)\n", acked);
		free(inflight);
		inflight = NULL;
	}

	first = acked + 1;
	r = balloc(BLK);
	for (b = first; b < first + nbatches; b++) {
		rstate = (hdr.seed * 0x9e3779b97f4a7c15ULL) ^ (b * 0xbf58476d1ce4e5b9ULL);
		dmb_xs(&rstate);
		memset(r, 0, BLK);
		r->nwrites = 1 + dmb_xs(&rstate) % maxw;
		for (i = 0; i < r->nwrites; i++) {
			n = 1 + dmb_xs(&rstate) % (dmb_xs(&rstate) % 4 ? 8 : MAX_LEN);
			r->w[i].n = n;
			/* a quarter of the writes go to a hot eighth */
			if (dmb_xs(&rstate) % 4 == 0)
				r->w[i].blk = dmb_xs(&rstate) % (nb / 8);
			else
				r->w[i].blk = dmb_xs(&rstate) % (nb - n + 1);
		}
		r->batch = b;
		rec_write(r, b, KIND_INTENT);
		for (i = 0; i < r->nwrites; i++) {
			write_one(r, i);
			/* the reads, spread over the batch */
			for (k = reads * i / r->nwrites;
			     k < reads * (i + 1) / r->nwrites; k++) {
				n = 1 + dmb_xs(&rstate) % 16;
				if (dmb_xs(&rstate) % 2)	/* the hot eighth */
					checked_read(dmb_xs(&rstate) % (nb / 8), n);
				else
					checked_read(dmb_xs(&rstate) % (nb - n + 1), n);
			}
		}
		sync_dev();
		memset(r, 0, BLK);
		rec_write(r, b, KIND_ACK);
		acked = b;
		if (logdev)
			mark(logdev, b);
		if (!quiet) {
			printf("ack %" PRIu64 "\n", b);
			fflush(stdout);
		}
	}
	printf("dmb-crashload run: batches %" PRIu64 "..%" PRIu64 " acknowledged\n",
	       first, acked);
	return 0;
}

struct counts {
	uint64_t lost, corrupt, stale, applied;
	uint64_t shown;
};

enum { OK, LANDED, LOST, BAD };

/* One block against the model: OK, LANDED (an in-flight write), LOST, BAD. */
static int classify(const char *what, const uint64_t *p, uint64_t blk,
		    struct counts *c)
{
	uint64_t s = block_stamp(p, blk), want = model[blk];
	int r;

	if (s == want)
		return OK;
	if (s != UINT64_MAX && inflight_has(blk, s))
		return LANDED;
	r = s != UINT64_MAX && s < want ? LOST : BAD;
	if (c->shown++ < SHOW_MAX)
		fprintf(stderr, "%s %s block %" PRIu64 ": want stamp %#" PRIx64
			" (batch %" PRIu64 "), got %s%#" PRIx64 "\n",
			r == LOST ? "LOST" : s == UINT64_MAX ? "CORRUPT" : "UNEXPECTED",
			what, blk, want, want >> 16,
			s == UINT64_MAX ? "foreign data, first word " :
			r == LOST ? "stamp " : "a write not issued by then, stamp ",
			s == UINT64_MAX ? p[0] : s);
	return r;
}

static int cmd_verify(int argc, char **argv)
{
	const char *m = NULL, *opath = NULL;
	uint64_t k = 0, b, n, i, nb;
	int c, force = 0, exact = 0, ofd = -1;
	uint64_t *obuf = NULL;
	struct counts cn = { 0 };

	while ((c = getopt(argc, argv, "d:o:m:K:x")) != -1) {
		switch (c) {
		case 'd':
			dpath = optarg;
			break;
		case 'o':
			opath = optarg;
			break;
		case 'm':
			m = optarg;
			break;
		case 'K':
			k = parse(optarg);
			force = 1;
			break;
		case 'x':
			exact = 1;
			break;
		default:
			return -1;
		}
	}
	if (!dpath || !m || optind != argc)
		return -1;
	model_open(m, O_RDONLY);
	model_load(force, k, exact);
	nb = hdr.nblocks;
	fd = open_dev(dpath, O_RDONLY);
	if (dev_size(fd, dpath) < nb * BLK)
		die(2, "%s is smaller than the region", dpath);
	if (opath) {
		ofd = open_dev(opath, O_RDONLY);
		if (dev_size(ofd, opath) < nb * BLK)
			die(2, "%s is smaller than the region", opath);
		obuf = balloc(CHUNK * BLK);
	}
	buf = balloc(CHUNK * BLK);
	for (b = 0; b < nb; b += n) {
		n = nb - b < CHUNK ? nb - b : CHUNK;
		io(fd, dpath, buf, b, n, 0);
		if (ofd >= 0)
			io(ofd, opath, obuf, b, n, 0);
		for (i = 0; i < n; i++) {
			uint64_t *p = buf + i * BLK / 8;
			int r, ro = OK;

			r = classify("device", p, b + i, &cn);
			if (ofd >= 0) {
				uint64_t *q = obuf + i * BLK / 8;

				ro = classify("origin", q, b + i, &cn);
				if (memcmp(p, q, BLK)) {
					cn.stale++;
					if (cn.shown++ < SHOW_MAX)
						fprintf(stderr, "STALE block %" PRIu64
							": device has stamp %#" PRIx64
							", origin %#" PRIx64 "\n", b + i,
							block_stamp(p, b + i),
							block_stamp(q, b + i));
				}
			}
			/* per block: lost if either lost it, else corrupt */
			if (r == LOST || ro == LOST)
				cn.lost++;
			else if (r == BAD || ro == BAD)
				cn.corrupt++;
			else if (r == LANDED || ro == LANDED)
				cn.applied++;
		}
	}
	printf("dmb-crashload verify: %" PRIu64 " blocks, batches 1..%" PRIu64
	       " acknowledged, %u writes in flight (%" PRIu64
	       " blocks landed): lost=%" PRIu64 " stale=%" PRIu64
	       " corrupt=%" PRIu64 "%s\n", nb, acked,
	       inflight ? inflight->nwrites : 0, cn.applied, cn.lost,
	       opath ? cn.stale : 0, cn.corrupt,
	       opath ? "" : " (no origin compared)");
	return cn.lost || cn.stale || cn.corrupt ? 1 : 0;
}

static int cmd_pick(int argc, char **argv)
{
	const char *m = NULL;
	uint64_t k = 0, b;
	int c, force = 0;

	while ((c = getopt(argc, argv, "m:K:")) != -1) {
		switch (c) {
		case 'm':
			m = optarg;
			break;
		case 'K':
			k = parse(optarg);
			force = 1;
			break;
		default:
			return -1;
		}
	}
	if (!m || optind != argc)
		return -1;
	model_open(m, O_RDONLY);
	model_load(force, k, 1);
	for (b = 1; b < hdr.nblocks; b++)
		if (model[b]) {
			printf("%" PRIu64 "\n", b);
			return 0;
		}
	fprintf(stderr, "dmb-crashload: no block holds acknowledged data\n");
	return 1;
}

int main(int argc, char **argv)
{
	int r = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2) {
		if (!strcmp(argv[1], "init"))
			r = cmd_init(argc - 1, argv + 1);
		else if (!strcmp(argv[1], "run"))
			r = cmd_run(argc - 1, argv + 1);
		else if (!strcmp(argv[1], "verify"))
			r = cmd_verify(argc - 1, argv + 1);
		else if (!strcmp(argv[1], "pick"))
			r = cmd_pick(argc - 1, argv + 1);
	}
	if (r >= 0)
		return r;
	fprintf(stderr,
		"usage: dmb-crashload init -m MODEL -s MiB [-S SEED]\n"
		"       dmb-crashload run -d DEV -m MODEL -n BATCHES [-w WRITES] [-r READS] [-M LOGDEV] [-q]\n"
		"       dmb-crashload verify -d DEV [-o ORIGIN] -m MODEL [-K ACKED] [-x]\n"
		"       dmb-crashload pick -m MODEL [-K ACKED]\n");
	return 2;
}
