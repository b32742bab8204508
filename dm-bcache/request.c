// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the IO paths.
 *
 * Reads: the index is looked up for the first sector of the bio; dm is
 * told to accept only the piece that is wholly cached or wholly not, and
 * sends the rest back to map() as a new bio. A hit is remapped to the
 * cache device; after it completes, the bucket's gen is checked again
 * and a read that raced with the bucket's reuse (or failed) is retried
 * from the origin. A miss is read from the origin; its data is copied
 * and written to the cache in the background, then indexed. A read that
 * found its data in many small pieces is rewritten the same way, as one
 * extent.
 *
 * Writes complete when the origin has them. The cached range is punched
 * out of the index before the write is issued, and the write waits in
 * the journal until the hole is durable; where the write has its range
 * to itself, its data is also written to the cache and indexed after
 * both writes succeed. track.c decides which fills may be indexed.
 * In writeback a write goes to the cache only and is indexed dirty;
 * writeback.c copies it to the origin later.
 *
 * map() may sleep but must never wait for IO it issues itself: bios
 * submitted from here are queued until map() returns. So a lookup or a
 * punch that needs an index node that is not in memory defers the bio to
 * a worker (bch_defer()), which reads the node and maps it again. There
 * dm_accept_partial_bio() may not be called: a deferred read that is not
 * one extent is served as pieces, from the cache and the origin at once.
 */
#include <linux/bio.h>
#include <linux/delay.h>
#include <linux/mempool.h>
#include <linux/slab.h>

#include "dm-bcache.h"

/* Per-bio data. */
struct bch_io {
	struct bch_target	*bt;
	struct bvec_iter	iter;	/* the bio in origin sectors */
	u64			ptr;	/* hit or cached write: its location */
	u64			snap;	/* track.c, over [sector, +snap_sectors) */
	u32			snap_sectors;
	u32			inode;
	u8			gen;
	u8			kind;
	u8			cache_error;
	u8			stale;	/* pieces: a bucket was reused under one */
	u8			dirty;	/* hit: the key is dirty */
	u8			fua;	/* dirty write: ack once journaled */
	u8			fp;	/* origin write let go by fp_begin */
	u8			origin;	/* counted in bch_origin_track_of() */
	u8			held;	/* has waited in bch_writeback_hold() */
	u8			rewrite; /* pieces: rewrite as one extent */
	u8			deferred; /* mapped again by bch_defer_work() */
	u8			csummed; /* dirty write: csum is its data's */
	u8			read_copy; /* hit: BCH_COPY_* of the copy read */
	u8			mirrored; /* dirty write: a copy at ptr2 too */
	u8			gen2;
	u32			csum;
	u64			ptr2;	/* dirty write: the second copy */
	unsigned long		avoid;	/* read: members whose copy failed */
	/* BCH_IO_PIECES: clones in flight; dirty write: copies in flight */
	atomic_t		pieces;
	struct bch_fill		*copy;	/* cached write: the data written */
	struct work_struct	work;
};

enum {
	BCH_IO_ORIGIN,		/* plain remap, nothing to do at the end */
	BCH_IO_HIT,		/* read from the cache */
	BCH_IO_PIECES,		/* read from the cache by clones, one a key */
	BCH_IO_MISS,		/* read from the origin, to be filled */
	BCH_IO_WRITE,		/* write, range punched out */
	BCH_IO_WRITE_CACHED,	/* write, also being written to the cache */
	BCH_IO_WRITE_DIRTY,	/* writeback: written to the cache only */
	BCH_IO_ACK,		/* dirty write indexed: bch_release_bio ends it */
};

/* A copy of data on its way into the cache. */
struct bch_fill {
	struct work_struct	work;
	struct bch_target	*bt;
	u64			sector;	/* origin */
	u32			sectors;
	u32			inode;
	u64			snap;	/* track.c, over [sector, +snap_sectors) */
	u32			snap_sectors;
	u64			ptr;	/* cached write: already written here (location) */
	u8			gen;
	bool			written;
	bool			rewrite; /* of pieces read from the cache */
	unsigned int		nr_pages;
	struct page		*pages[];
};

#define BCH_FILL_MAX_SECTORS	BIT(11)		/* 1 MiB */
#define BCH_FILLS_MAX		64		/* in flight per origin */

/*
 * One key's piece of a read served by clones (the bioset's front pad),
 * or by a bounce (struct bch_bounce): the key's whole checksummed range
 * read into pages of the module's own, verified, and the piece's part of
 * it copied into the bio.
 */
struct bch_piece {
	u64		ptr;		/* BCH_PIECE_ORIGIN: read from the origin */
	u64		sector;		/* origin, for the log */
	u32		off;		/* sectors into the bio's io->iter */
	u32		sectors;
	u32		csum;		/* if verify */
	u16		front;		/* bounce: the range's sectors before ours */
	u16		range;		/* sectors of the checksummed range */
	u8		gen;
	u8		verify;		/* check the data against csum */
	u8		bounced;	/* a struct bch_bounce */
	u8		dirty;
	u8		read_copy;	/* BCH_COPY_* of the copy read */
	struct bvec_iter iter;	/* clone: its data, as sent */
	struct work_struct work; /* a mismatch: confirmed or dropped */
	struct bio	bio;		/* last */
};

#define BCH_PIECE_ORIGIN	U64_MAX
#define BCH_CSUM_PAGES		DIV_ROUND_UP(BCH_CSUM_MAX_SECTORS << SECTOR_SHIFT, PAGE_SIZE)

struct bch_bounce {
	struct page	*pages[BCH_CSUM_PAGES];
	struct bch_piece p;
	struct bio_vec	bvecs[BCH_CSUM_PAGES];	/* p.bio's: right after it */
};

/* map() codes of a deferred bio: mapped again later, or failed. */
#define BCH_MAPIO_DEFER		(-1)

/* Pieces of one read at most: 1 MiB of 4 KiB keys. */
#define BCH_PIECES_MAX		256
/*
 * A clean read served by at least this many pieces is written back to the
 * cache as one extent, so that the next read of the range takes one IO:
 * data cached by small random reads is often read again in large ones.
 */
#define BCH_REWRITE_PIECES	8

size_t bch_io_size(void)
{
	return sizeof(struct bch_io);
}

unsigned int bch_clone_front_pad(void)
{
	return offsetof(struct bch_piece, bio);
}

static void bch_remap_origin(struct bch_target *bt, struct bio *bio)
{
	bio_set_dev(bio, bt->origin_dev->bdev);
}

/* Whether [sector, +sectors) may be copied into the cache in one fill. */
static bool bch_fillable(struct bch_target *bt, u64 sector, u32 sectors)
{
	u32 mask = bt->set->block_size - 1;

	return sectors <= BCH_FILL_MAX_SECTORS && !((sector | sectors) & mask);
}

static void bch_fill_put(struct bch_target *bt)
{
	atomic_dec(&bt->fills);
}

static void bch_pages_free(struct bch_fill *f)
{
	unsigned int i;

	for (i = 0; i < f->nr_pages; i++)
		__free_page(f->pages[i]);
	kfree(f);
}

/* Pages for @sectors of data, not counted as a fill (yet). */
static struct bch_fill *bch_pages_alloc(u32 sectors, gfp_t gfp)
{
	unsigned int nr = DIV_ROUND_UP(sectors, PAGE_SECTORS), i;
	struct bch_fill *f;

	f = kzalloc(struct_size(f, pages, nr), gfp);
	if (!f)
		return NULL;
	for (i = 0; i < nr; i++) {
		f->pages[i] = alloc_page(gfp);
		if (!f->pages[i])
			break;
		f->nr_pages++;
	}
	if (f->nr_pages == nr)
		return f;
	bch_pages_free(f);
	return NULL;
}

static void bch_fill_free(struct bch_fill *f)
{
	struct bch_target *bt = f->bt;

	bch_pages_free(f);
	bch_fill_put(bt);
}

/* A write of @sectors of @f's pages (from the first) to location @ptr. */
static struct bio *bch_pages_bio(struct bch_cache_set *set, struct bch_fill *f,
				 u32 off, u32 sectors, u64 ptr, gfp_t gfp)
{
	u32 bytes, end = (off + sectors) << SECTOR_SHIFT;
	struct bio *bio;

	/* Pieces start on block boundaries, maybe inside a page. */
	bio = bio_alloc(bch_ptr_bdev(set, ptr),
			DIV_ROUND_UP(offset_in_page(off << SECTOR_SHIFT) +
				     (sectors << SECTOR_SHIFT), PAGE_SIZE),
			REQ_OP_WRITE, gfp);
	if (!bio)
		return NULL;
	bio->bi_iter.bi_sector = bch_ptr_sector(ptr);
	for (off <<= SECTOR_SHIFT; off < end; off += bytes) {
		bytes = min_t(u32, PAGE_SIZE - offset_in_page(off), end - off);
		__bio_add_page(bio, f->pages[off >> PAGE_SHIFT], bytes,
			       offset_in_page(off));
	}
	return bio;
}

/* A piece of a fill to index (bch_index_update()). */
struct bch_fill_op {
	struct bch_index_op	op;
	struct bch_fill		*f;
};

/* Index the piece if no write raced with the data. */
static int bch_fill_check(struct bch_index_op *op)
{
	struct bch_fill *f = container_of(op, struct bch_fill_op, op)->f;
	struct bch_target *bt = f->bt;

	/*
	 * The snapshot's own range: a piece's would sum other regions. Not
	 * onto a member lost since the allocation: no key may point to it
	 * once a GC pass found none (member.c).
	 */
	if (f->inode == BCH_INODE_NONE ||
	    f->inode != bch_slot_inode(bt->set, bt->slot) ||
	    !bch_track_unchanged(bch_track_of(bt), f->sector, f->snap_sectors,
				 f->snap) ||
	    bch_key_on_lost(bt->set, &op->k))
		return -EAGAIN;
	return 0;
}

static void bch_fill_done(struct bch_index_op *op, int r)
{
	struct bch_fill *f = container_of(op, struct bch_fill_op, op)->f;
	struct bch_target *bt = f->bt;

	if (!r)
		bch_journal_add(bt->set, &op->k, NULL);
	bch_alloc_done(bt->set, bch_key_loc(&op->k), r ? 0 : op->k.size);
	if (r)
		return;
	atomic64_add(op->k.size, &bt->stats.filled);
	if (f->rewrite)
		atomic64_add(op->k.size, &bt->stats.rewritten);
}

/*
 * Index [sector, sector + sectors) at @ptr, @gen; or count it given up
 * (@r). With data checksums, as keys of at most BCH_CSUM_MAX_SECTORS,
 * each with the checksum of its part of the fill's pages.
 */
static int bch_fill_index(struct bch_fill *f, u64 sector, u32 sectors, u64 ptr,
			  u8 gen, int r)
{
	struct bch_cache_set *set = f->bt->set;
	bool csums = bch_csums(set);
	u32 max = csums ? BCH_CSUM_MAX_SECTORS : sectors, done, n;
	struct bch_fill_op fo = {
		.op = {
			.check	= bch_fill_check,
			.done	= bch_fill_done,
		},
		.f = f,
	};

	if (r) {
		down_read(&set->btree_lock);
		bch_alloc_done(set, ptr, 0);
		up_read(&set->btree_lock);
		return r;
	}
	if (sectors > max)
		bch_alloc_split(set, ptr, DIV_ROUND_UP(sectors, max) - 1);
	bch_index_read_ahead(set, f->inode, sector, sector + sectors, false);
	for (done = 0; done < sectors; done += n) {
		n = min(sectors - done, max);
		if (r) {
			/* A piece failed (its space given back): so do these. */
			down_read(&set->btree_lock);
			bch_alloc_done(set, ptr + done, 0);
			up_read(&set->btree_lock);
			continue;
		}
		fo.op.k = (struct bch_bkey) {
			.inode	= f->inode,
			.size	= n,
			.end	= sector + done + n,
			.ptr	= { bch_loc_ptr(ptr + done, gen) },
			.nptrs	= 1,
		};
		if (csums)
			bch_key_set_csum(&fo.op.k,
					 bch_csum_pages(f->pages,
							(sector + done - f->sector) << SECTOR_SHIFT,
							n << SECTOR_SHIFT));
		r = bch_index_update(set, &fo.op);
	}
	return r;
}

/* Write the copied pages to the cache, piece by piece, and index them. */
static void bch_fill_work(struct work_struct *work)
{
	struct bch_fill *f = container_of(work, struct bch_fill, work);
	struct bch_target *bt = f->bt;
	struct bch_cache_set *set = bt->set;
	u32 done = 0, got;
	u64 ptr;
	u8 gen;
	int r;

	if (f->written) {
		bch_fill_index(f, f->sector, f->sectors, f->ptr, f->gen, 0);
		goto out;
	}

	while (done < f->sectors) {
		struct bio *bio;

		if (bch_alloc_data(set, f->sectors - done, &ptr, &gen, &got))
			break;
		bio = bch_pages_bio(set, f, done, got, ptr, GFP_NOIO);
		r = submit_bio_wait(bio);
		bio_put(bio);
		if (r) {
			atomic64_inc(&bt->stats.cache_errors);
			bch_member_io_error(set, ptr, true);
		}

		r = bch_fill_index(f, f->sector + done, got, ptr, gen, r);
		if (r)
			break;
		done += got;
	}
out:
	bch_fill_free(f);
}

static struct bch_fill *bch_fill_alloc(struct bch_target *bt, u32 sectors,
				       gfp_t gfp)
{
	struct bch_fill *f;

	if (atomic_inc_return(&bt->fills) > BCH_FILLS_MAX ||
	    bch_cache_failed(bt->set))
		goto busy;
	f = bch_pages_alloc(sectors, gfp);
	if (!f)
		goto busy;
	f->bt = bt;
	INIT_WORK(&f->work, bch_fill_work);
	return f;
busy:
	bch_fill_put(bt);
	return NULL;
}

/* Copy @bv into the fill's pages at byte @off; segments may straddle them. */
static void bch_fill_copy(struct bch_fill *f, u32 off, struct bio_vec *bv)
{
	u32 done = 0, n;
	char *src;

	src = bvec_kmap_local(bv);
	while (done < bv->bv_len) {
		n = min_t(u32, bv->bv_len - done,
			  PAGE_SIZE - offset_in_page(off + done));
		memcpy(page_address(f->pages[(off + done) >> PAGE_SHIFT]) +
		       offset_in_page(off + done), src + done, n);
		done += n;
	}
	kunmap_local(src);
}

/*
 * The data of @bio in pages of the module's own, which the cache is then
 * written from: its checksum is of the bytes the device gets. A
 * writethrough write's copy is indexed as a fill (@fill: counted as one),
 * a dirty write's is freed once written.
 */
static struct bch_fill *bch_copy_bio(struct bch_target *bt, struct bio *bio,
				     bool fill)
{
	gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct bvec_iter iter;
	struct bio_vec bv;
	struct bch_fill *f;
	u32 off = 0;

	if (bch_fault(BCH_FAULT_COPY))
		return NULL;
	if (fill) {
		f = bch_fill_alloc(bt, bio_sectors(bio), gfp);
	} else {
		f = bch_pages_alloc(bio_sectors(bio), gfp);
		if (f)
			f->bt = bt;
	}
	if (!f)
		return NULL;
	bio_for_each_segment(bv, bio, iter) {
		bch_fill_copy(f, off, &bv);
		off += bv.bv_len;
	}
	return f;
}

/* A miss completed: copy its data (the bio is about to be returned). */
static void bch_fill_from_bio(struct bch_target *bt, struct bio *bio,
			      struct bch_io *io)
{
	u32 sectors = io->iter.bi_size >> SECTOR_SHIFT;
	struct bvec_iter iter;
	struct bio_vec bv;
	struct bch_fill *f;
	u32 off = 0;

	f = bch_fill_alloc(bt, sectors, GFP_NOWAIT | __GFP_NOWARN);
	if (!f)
		return;
	f->sector = io->iter.bi_sector;
	f->sectors = sectors;
	f->inode = io->inode;
	f->snap = io->snap;
	f->snap_sectors = io->snap_sectors;
	f->rewrite = io->kind == BCH_IO_PIECES;
	__bio_for_each_segment(bv, bio, iter, io->iter) {
		bch_fill_copy(f, off, &bv);
		off += bv.bv_len;
	}
	queue_work(bt->set->wq, &f->work);
}

static void bch_retry_work(struct work_struct *work)
{
	struct bch_io *io = container_of(work, struct bch_io, work);
	struct bio *bio = dm_bio_from_per_bio_data(io, sizeof(*io));

	submit_bio_noacct(bio);
}

/* Reissue a cache read to the origin; dm completes it after that. */
static void bch_retry_from_origin(struct bch_target *bt, struct bio *bio,
				  struct bch_io *io)
{
	bio->bi_iter = io->iter;
	bio->bi_status = BLK_STS_OK;
	/* A request the bio was merged into may have left this set. */
	bio->bi_next = NULL;
	bch_remap_origin(bt, bio);
	io->kind = BCH_IO_ORIGIN;
	INIT_WORK(&io->work, bch_retry_work);
	queue_work(bt->set->wq, &io->work);
}

/* What map() starts every bio with, and a read mapped again too. */
static void bch_io_reset(struct bch_io *io)
{
	io->kind = BCH_IO_ORIGIN;
	io->cache_error = 0;
	io->stale = 0;
	io->dirty = 0;
	io->fp = 0;
	io->origin = 0;
	io->held = 0;
	io->rewrite = 0;
	io->csummed = 0;
	io->copy = NULL;
	io->mirrored = 0;
	io->read_copy = 0;
}

/*
 * A dirty read that found its bucket reused: the key was written back or
 * overwritten since the lookup, and its bucket freed and taken again. The
 * origin may be older than the newer copy, so the read is mapped again
 * from the index, which names the newer copy or, if clean, the origin.
 */
static void bch_read_again(struct bch_target *bt, struct bio *bio,
			   struct bch_io *io)
{
	bio->bi_iter = io->iter;
	bio->bi_status = BLK_STS_OK;
	bio->bi_next = NULL;
	bch_io_reset(io);
	atomic64_inc(&bt->stats.retries);
	bch_defer(bt, bio);
}

static void bch_pieces_done(struct bch_target *bt, struct bio *bio,
			    struct bch_io *io)
{
	if (io->cache_error && io->dirty) {
		/* As a lone dirty hit: an error, never the origin's data. */
		bio->bi_status = BLK_STS_IOERR;
		bio_endio(bio);
	} else if (io->stale && io->dirty) {
		bch_read_again(bt, bio, io);
	} else if (io->cache_error || io->stale) {
		atomic64_inc(&bt->stats.retries);
		bch_retry_from_origin(bt, bio, io);
	} else {
		if (io->rewrite)
			bch_fill_from_bio(bt, bio, io);
		bio_endio(bio);
	}
}

static void bch_piece_free(struct bch_piece *p)
{
	struct bch_bounce *b;
	unsigned int i;

	if (p->read_copy & BCH_COPY_COUNTED) {
		struct bio *bio = p->bio.bi_private;
		struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

		bch_copy_read_done(io->bt->set, p->ptr);
	}
	if (!p->bounced) {
		bio_put(&p->bio);
		return;
	}
	b = container_of(p, struct bch_bounce, p);
	bio_uninit(&p->bio);
	for (i = 0; i < BCH_CSUM_PAGES && b->pages[i]; i++)
		__free_page(b->pages[i]);
	kfree(b);
}

/* A piece is done with: the read completes with the last. */
static void bch_piece_put(struct bch_piece *p)
{
	struct bio *bio = p->bio.bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	bch_piece_free(p);
	/* Orders every piece's flags before the last one reads them. */
	if (atomic_dec_and_test(&io->pieces))
		bch_pieces_done(io->bt, bio, io);
}

/* The piece's data is what its key's checksum says. */
static bool bch_piece_good(struct bch_piece *p)
{
	if (p->bounced)
		return bch_csum_pages(container_of(p, struct bch_bounce, p)->pages,
				      0, p->range << SECTOR_SHIFT) == p->csum;
	return !bch_fault(BCH_FAULT_CSUM) &&
	       bch_csum_bio(&p->bio, p->iter, p->range << SECTOR_SHIFT) ==
	       p->csum;
}

/*
 * The copy of dirty data at @ptr (@gen; the location of origin @sector)
 * that a read of origin [@sector, +@sectors) used failed, and its key has
 * another: avoid the member for this read, and drop the copy from the
 * index. Process context.
 */
static void bch_copy_failed(struct bch_target *bt, struct bch_io *io,
			    u64 sector, u32 sectors, u64 ptr, u8 gen)
{
	struct bch_cache_set *set = bt->set;

	set_bit(bch_ptr_dev(ptr), &io->avoid);
	DMWARN_LIMIT("%s: a copy of dirty data failed: slot %u sectors %llu+%u member %u bucket %llu; read from the other",
		     set->name, bt->slot, sector, sectors, bch_ptr_dev(ptr),
		     bch_ptr_bucket_nr(set, ptr));
	bch_index_drop_copy(set, io->inode, sector, sectors, ptr, gen);
}

/* A dirty piece's copy failed: its other, once the bio is looked up again. */
static void bch_piece_copy_failed(struct bch_piece *p)
{
	struct bio *bio = p->bio.bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	/* p->ptr + p->front: where the piece's key starts, also for a bounce */
	bch_copy_failed(io->bt, io, p->sector, p->sectors, p->ptr + p->front,
			p->gen);
	WRITE_ONCE(io->stale, 1);
}

/* A dirty hit's copy failed: its other, looked up again. */
static void bch_hit_copy_failed(struct bch_io *io)
{
	bch_copy_failed(io->bt, io, io->iter.bi_sector,
			io->iter.bi_size >> SECTOR_SHIFT, io->ptr, io->gen);
	bch_read_again(io->bt, dm_bio_from_per_bio_data(io, sizeof(*io)), io);
}

/*
 * The checksummed range of cached data at @ptr (origin @sector, @sectors
 * long) failed its checksum: count it, log it, and drop its clean keys
 * still in the index, so that it is read from the origin from now on.
 * Dirty data is kept: the origin is older, and a read of it fails
 * instead. Process context.
 */
static void bch_csum_bad(struct bch_target *bt, u32 inode, u64 sector,
			 u32 sectors, u64 ptr, u8 gen, bool dirty)
{
	bch_csum_error(bt, sector, sectors, ptr);
	if (!dirty)
		bch_index_drop_bad(bt->set, inode, sector, sectors, ptr, gen);
}

/*
 * Read the checksummed range at @ptr (@bytes long, at most
 * BCH_CSUM_MAX_SECTORS) again, into memory of the module's own, after its
 * check failed in a reader's pages: 0, the good data copied into @bio's
 * data at @iter; -ESTALE if the bucket was reused meanwhile; -EBADMSG if
 * the data is bad; else the read's error. Its buffer comes from a pool,
 * so that no memory shortage can keep a dirty read from ever completing
 * (it would be looked up and read again and again).
 */
static int bch_csum_reread(struct bch_cache_set *set, u64 ptr, u8 gen,
			   u32 csum, struct bio *bio, struct bvec_iter iter,
			   u32 bytes)
{
	void *buf = mempool_alloc(set->reread_pool, GFP_NOIO);
	int r;

	r = bch_loc_io(set, REQ_OP_READ, ptr, buf, bytes);
	if (!r && bch_ptr_reused(set, ptr, gen))
		r = -ESTALE;
	else if (!r && bch_crc32c(buf, bytes) != csum)
		r = -EBADMSG;
	else if (!r)
		bch_buf_to_bio(bio, iter, buf, bytes);
	mempool_free(buf, set->reread_pool);
	return r;
}

/*
 * A piece whose data failed its checksum. A clone's pages are the
 * reader's, which it may change under the read: the range is read again
 * into memory of the module's own first, and only a mismatch there is
 * bad data; good data is copied into the piece then.
 */
static void bch_piece_bad_work(struct work_struct *work)
{
	struct bch_piece *p = container_of(work, struct bch_piece, work);
	struct bio *bio = p->bio.bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
	struct bch_target *bt = io->bt;
	struct bch_cache_set *set = bt->set;
	int r = -EBADMSG;	/* a bounce's pages are the module's own */

	if (!p->bounced)
		r = bch_csum_reread(set, p->ptr, p->gen, p->csum, &p->bio,
				    p->iter, p->range << SECTOR_SHIFT);
	if (r == -EBADMSG)
		/* p->ptr: the range's start, also for a clone (no front). */
		bch_csum_bad(bt, io->inode, p->sector - p->front, p->range,
			     p->ptr, p->gen, p->dirty);
	/* Reused: dirty data looked up again, clean from the origin */
	if (r == -ESTALE) {
		WRITE_ONCE(io->stale, 1);
	} else if (r && p->dirty && (p->read_copy & BCH_COPY_OTHER)) {
		bch_piece_copy_failed(p);
	} else if (r && r != -EBADMSG) {	/* as a failed read of the piece */
		WRITE_ONCE(io->cache_error, 1);
	} else if (r) {
		/* Dirty: an error, never the origin's older data. */
		if (p->dirty)
			WRITE_ONCE(io->cache_error, 1);
		else
			WRITE_ONCE(io->stale, 1);
	}
	bch_piece_put(p);
}

/* A dirty piece's copy could not be read: its other, looked up again. */
static void bch_piece_copy_work(struct work_struct *work)
{
	struct bch_piece *p = container_of(work, struct bch_piece, work);

	bch_piece_copy_failed(p);
	bch_piece_put(p);
}

static void bch_piece_endio(struct bio *clone)
{
	struct bch_piece *p = container_of(clone, struct bch_piece, bio);
	struct bio *bio = clone->bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
	struct bch_target *bt = io->bt;

	if (p->ptr == BCH_PIECE_ORIGIN) {
		/* Read again whole, or failed if dirty: as a cache error. */
		if (clone->bi_status)
			WRITE_ONCE(io->cache_error, 1);
	} else if (clone->bi_status) {
		atomic64_inc(&bt->stats.cache_errors);
		bch_member_io_error(bt->set, p->ptr, false);
		if (p->dirty && (p->read_copy & BCH_COPY_OTHER)) {
			INIT_WORK(&p->work, bch_piece_copy_work);
			queue_work(bt->set->wq, &p->work);
			return;
		}
		WRITE_ONCE(io->cache_error, 1);
	} else if (bch_ptr_reused(bt->set, p->ptr, p->gen)) {
		WRITE_ONCE(io->stale, 1);
	} else if (p->verify && !bch_piece_good(p)) {
		INIT_WORK(&p->work, bch_piece_bad_work);
		queue_work(bt->set->wq, &p->work);
		return;
	} else if (p->bounced) {
		bch_pages_to_bio(bio, io->iter, p->off << SECTOR_SHIFT,
				 container_of(p, struct bch_bounce, p)->pages,
				 p->front << SECTOR_SHIFT,
				 p->sectors << SECTOR_SHIFT);
	}
	bch_piece_put(p);
}

/*
 * A bounce reading the whole checksummed range of @k (the key at @off
 * sectors into @bio, of which the piece takes @k->size sectors) from the
 * cache: its data is verified in pages of the module's own, then copied.
 */
static struct bio *bch_bounce_alloc(struct bch_target *bt, struct bio *bio,
				    u32 off, const struct bch_bkey *k, gfp_t gfp)
{
	u32 bytes = k->csum_sectors << SECTOR_SHIFT, i;
	struct bch_bounce *b;
	struct bch_piece *p;

	b = kzalloc(sizeof(*b), gfp);
	if (!b)
		return NULL;
	p = &b->p;
	p->bounced = 1;
	bio_init(&p->bio, bch_ptr_bdev(bt->set, k->ptr[0]), b->bvecs,
		 BCH_CSUM_PAGES, REQ_OP_READ);
	for (i = 0; i * PAGE_SIZE < bytes; i++) {
		b->pages[i] = alloc_page(gfp);
		if (!b->pages[i]) {
			bch_piece_free(p);
			return NULL;
		}
		__bio_add_page(&p->bio, b->pages[i],
			       min_t(u32, PAGE_SIZE, bytes - i * PAGE_SIZE), 0);
	}
	p->bio.bi_iter.bi_sector = bch_key_sector(k) - k->csum_front;
	p->front = k->csum_front;
	return &p->bio;
}

/*
 * Whether a verified read of @k needs a bounce: it is a part of its
 * checksummed range, whose whole must be read to verify it. One at most
 * per bio gathered from many keys (its first): a bounce takes up to 64 KiB.
 */
static bool bch_piece_bounces(const struct bch_bkey *k, bool verify)
{
	return verify && (k->flags & BCH_KEY_CSUM) &&
	       (k->csum_front || k->size != k->csum_sectors);
}

/*
 * A piece of @bio reading the @k->size sectors at @off sectors into it
 * from the cache: a clone, or a bounce if the key is a part of its
 * checksummed range and reads are verified (@verify: bch_verify(), read
 * once per bio, as the tunable may change meanwhile). GFP_NOWAIT from
 * map(): the caller holds the btree lock, and several clones from one
 * bioset must not wait on each other's return.
 */
static struct bio *bch_piece_alloc(struct bch_target *bt, struct bio *bio,
				   u32 off, const struct bch_bkey *key,
				   bool verify, gfp_t gfp)
{
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
	struct bch_bkey one = *key, *k = &one;
	struct bio *clone;
	struct bch_piece *p;
	u8 copy;

	/* Its copies lost: read as a lone hit (bch_map_read()). */
	if (bch_key_lost(bt->set, k))
		return NULL;
	copy = bch_copy_choose(bt->set, k, io->avoid);
	verify = verify && (k->flags & BCH_KEY_CSUM);
	if (bch_piece_bounces(k, verify)) {
		clone = bch_bounce_alloc(bt, bio, off, k, gfp);
	} else {
		clone = bio_alloc_clone(bch_ptr_bdev(bt->set, k->ptr[0]), bio,
					gfp, &bt->bs);
		if (clone) {
			bio_trim(clone, off, k->size);
			clone->bi_iter.bi_sector = bch_key_sector(k);
			/* The bioset's front pad is not zeroed. */
			container_of(clone, struct bch_piece, bio)->bounced = 0;
		}
	}
	if (!clone) {
		if (copy & BCH_COPY_COUNTED)
			bch_copy_read_done(bt->set, bch_key_loc(k));
		return NULL;
	}
	clone->bi_end_io = bch_piece_endio;
	clone->bi_private = bio;
	p = container_of(clone, struct bch_piece, bio);
	p->read_copy = copy;
	p->ptr = bch_key_loc(k);
	p->gen = bch_key_gen(k);
	p->sector = bch_key_start(k);
	p->off = off;
	p->sectors = k->size;
	p->verify = verify;
	p->csum = k->csum;
	p->range = k->csum_sectors;
	p->dirty = !!(k->flags & BCH_KEY_DIRTY);
	p->front = p->bounced ? k->csum_front : 0;
	p->iter = clone->bi_iter;
	if (p->bounced)
		p->ptr -= k->csum_front;	/* where the range is read from */
	return clone;
}

/* A clone of @bio reading @sectors at @off sectors into it from the origin. */
static struct bio *bch_piece_alloc_origin(struct bch_target *bt, struct bio *bio,
					  u32 off, u32 sectors)
{
	struct bio *clone;
	struct bch_piece *p;

	clone = bio_alloc_clone(bt->origin_dev->bdev, bio,
				GFP_NOWAIT | __GFP_NOWARN, &bt->bs);
	if (!clone)
		return NULL;
	bio_trim(clone, off, sectors);
	bch_remap_origin(bt, clone);
	clone->bi_end_io = bch_piece_endio;
	clone->bi_private = bio;
	p = container_of(clone, struct bch_piece, bio);
	p->ptr = BCH_PIECE_ORIGIN;
	p->bounced = 0;
	p->verify = 0;
	p->read_copy = 0;
	return clone;
}

/*
 * A deferred read that is not one extent: no dm_accept_partial_bio() out
 * of map(), so every extent of it is a piece, without a fill. Dirty data
 * is read from the cache (the only copy), everything else from the
 * origin, which has what clean keys hold: then the read fails only if
 * the dirty data cannot be read, as a dirty hit does, and not because a
 * clean piece's bucket was reused meanwhile. Called under the btree read
 * lock with every leaf of the range resident; releases it.
 */
static int bch_read_mixed(struct bch_target *bt, struct bio *bio,
			  struct bch_io *io)
{
	struct bch_cache_set *set = bt->set;
	u64 start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	bool dirty = false, verify = bch_verify(bt);
	struct bio_list clones;
	struct bio *clone;
	struct bch_bkey k;
	u64 pos;
	int r;

	bio_list_init(&clones);
	for (pos = start; pos < end; pos += k.size) {
		r = bch_btree_lookup(&set->btree, io->inode, pos, end, &k);
		if (r < 0)
			break;
		if (r && (k.flags & BCH_KEY_DIRTY) && bch_key_lost(set, &k)) {
			r = -EIO;	/* lost with a member of the set */
			break;
		} else if (r && (k.flags & BCH_KEY_DIRTY)) {
			dirty = true;
			clone = bch_piece_alloc(bt, bio, pos - start, &k,
						verify, GFP_NOWAIT | __GFP_NOWARN);
		} else {
			clone = bch_piece_alloc_origin(bt, bio, pos - start, k.size);
		}
		if (!clone) {
			r = -ENOMEM;
			break;
		}
		bio_list_add(&clones, clone);
	}
	up_read(&set->btree_lock);
	if (pos < end) {
		while ((clone = bio_list_pop(&clones)))
			bch_piece_free(container_of(clone, struct bch_piece,
						    bio));
		return r == -ENOMEM ? BCH_MAPIO_DEFER : DM_MAPIO_KILL;
	}
	io->iter = bio->bi_iter;
	io->kind = BCH_IO_PIECES;
	io->dirty = dirty;
	io->rewrite = 0;
	atomic_set(&io->pieces, bio_list_size(&clones));
	atomic64_inc(dirty ? &bt->stats.read_hits : &bt->stats.read_misses);
	while ((clone = bio_list_pop(&clones))) {
		u64 ptr = container_of(clone, struct bch_piece, bio)->ptr;

		if (ptr != BCH_PIECE_ORIGIN)
			bch_bucket_hit(set, ptr, bio_sectors(clone));
		submit_bio_noacct(clone);
	}
	return DM_MAPIO_SUBMITTED;
}

/*
 * @bio starts with the hit @k but is not wholly in it: gather the hits
 * that follow, of the same kind (clean or dirty, so that a failed piece
 * is handled for all as for a lone hit), as one clone each, so that data
 * cached by small IOs is read back in one pass through dm instead of one
 * per key. Returns the sectors gathered into @clones; 0 (and nothing in
 * @clones) if that is just @k. Called under the btree read lock.
 */
static u32 bch_gather_hits(struct bch_target *bt, struct bio *bio, u32 inode,
			   const struct bch_bkey *k, bool verify,
			   struct bio_list *clones)
{
	struct bch_cache_set *set = bt->set;
	u64 start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u8 dirty = k->flags & BCH_KEY_DIRTY;
	struct bch_bkey next = *k;
	unsigned int nr = 0;
	u64 sector = start;
	struct bio *clone;

	do {
		clone = bch_piece_alloc(bt, bio, sector - start, &next, verify,
					GFP_NOWAIT | __GFP_NOWARN);
		if (!clone)
			break;
		bio_list_add(clones, clone);
		sector += next.size;
	} while (++nr < BCH_PIECES_MAX && sector < end &&
		 bch_btree_lookup(&set->btree, inode, sector, end, &next) == 1 &&
		 (next.flags & BCH_KEY_DIRTY) == dirty &&
		 !bch_piece_bounces(&next, verify));

	if (nr > 1)
		return sector - start;
	while ((clone = bio_list_pop(clones)))
		bch_piece_free(container_of(clone, struct bch_piece, bio));
	return 0;
}

/*
 * Whether @nr pieces are many for @sectors: a rewrite is split where it
 * crosses buckets (and, with data checksums, into keys of 64 KiB), and
 * must leave markedly fewer pieces than it found,
 * or a range read again and again would be rewritten every time.
 */
static bool bch_fragmented(struct bch_cache_set *set, u32 sectors,
			   unsigned int nr)
{
	/* With data checksums a key is at most BCH_CSUM_MAX_SECTORS. */
	u32 unit = bch_csums(set) ? min_t(u32, set->bucket_size,
					  BCH_CSUM_MAX_SECTORS) :
		   set->bucket_size;
	u32 after = DIV_ROUND_UP(sectors, unit) + 1;

	return nr >= BCH_REWRITE_PIECES && nr >= 2 * after;
}

/*
 * Whether every piece of @clones is verified: none is from a key without
 * a checksum (a version 2 cache upgraded) or read with verify_csums 0.
 */
static bool bch_pieces_verified(struct bio_list *clones)
{
	struct bio *clone;

	bio_list_for_each(clone, clones)
		if (!container_of(clone, struct bch_piece, bio)->verify)
			return false;
	return true;
}

/*
 * Send the gathered pieces; @bio completes when the last one does. If
 * @snapped (a track.c snapshot taken before the lookup), a clean read of
 * enough pieces is rewritten as one extent.
 */
static int bch_read_pieces(struct bch_target *bt, struct bio *bio,
			   struct bch_io *io, struct bio_list *clones,
			   u32 sectors, bool dirty, bool snapped)
{
	struct bch_cache_set *set = bt->set;
	unsigned int nr = bio_list_size(clones);
	struct bio *clone;

	if (sectors < bio_sectors(bio))
		dm_accept_partial_bio(bio, sectors);
	io->iter = bio->bi_iter;
	io->kind = BCH_IO_PIECES;
	io->dirty = dirty;
	atomic_set(&io->pieces, nr);
	bch_seq_bypass(&bt->seq, io->iter.bi_sector, sectors);
	/*
	 * Streams too: the data is in the cache already, and re-reading
	 * cached data in large IOs is what makes its fragments costly.
	 */
	io->rewrite = snapped && !dirty && bch_fragmented(set, sectors, nr) &&
		      bch_fillable(bt, io->iter.bi_sector, sectors) &&
		      /* a fresh checksum must not certify unchecked data */
		      (!bch_csums(set) || bch_pieces_verified(clones));
	atomic64_inc(&bt->stats.read_hits);
	while ((clone = bio_list_pop(clones))) {
		bch_bucket_hit(set, container_of(clone, struct bch_piece, bio)->ptr,
			       bio_sectors(clone));
		submit_bio_noacct(clone);
	}
	return DM_MAPIO_SUBMITTED;
}

/*
 * A hit on a part of its key's checksummed range: a bounce reads all of
 * it, verified, as the read's one piece. Without memory clean data is
 * read from the origin, and dirty data waits (a worker may sleep).
 */
static int bch_read_bounce(struct bch_target *bt, struct bio *bio,
			   struct bch_io *io, const struct bch_bkey *k)
{
	bool dirty = k->flags & BCH_KEY_DIRTY;
	struct bio *clone;

	clone = bch_piece_alloc(bt, bio, 0, k, true, io->deferred ? GFP_NOIO :
				GFP_NOWAIT | __GFP_NOWARN);
	if (!clone && dirty)
		return BCH_MAPIO_DEFER;
	if (!clone) {
		atomic64_inc(&bt->stats.bypassed);
		bch_remap_origin(bt, bio);
		return DM_MAPIO_REMAPPED;
	}
	io->kind = BCH_IO_PIECES;
	io->dirty = dirty;
	io->rewrite = 0;
	atomic_set(&io->pieces, 1);
	atomic64_inc(&bt->stats.read_hits);
	bch_bucket_hit(bt->set, container_of(clone, struct bch_piece, bio)->ptr,
		       k->size);
	submit_bio_noacct(clone);
	return DM_MAPIO_SUBMITTED;
}

/* Whether [sector, +sectors) is no longer a hole (or is not resident). */
static bool bch_miss_changed(struct bch_cache_set *set, u32 inode, u64 sector,
			     u32 sectors)
{
	struct bch_bkey k;

	return bch_btree_lookup(&set->btree, inode, sector, sector + sectors,
				&k) || k.size != sectors;
}

static int bch_map_read(struct bch_target *bt, struct bio *bio,
			struct bch_io *io)
{
	struct bch_cache_set *set = bt->set;
	u64 sector = bio->bi_iter.bi_sector;
	u32 sectors = bio_sectors(bio), gathered = 0;
	enum bch_cache_mode mode = READ_ONCE(bt->mode);
	bool bypass, snapped = false, failed = bch_cache_failed(set);
	bool fill = false, verify = bch_verify(bt);
	struct bio_list clones;
	u64 miss_snap = 0;
	struct bch_bkey k;
	int hit;

	io->inode = bch_slot_inode(set, bt->slot);
	/* Dirty data is read from the cache whatever the mode says. */
	if (io->inode == BCH_INODE_NONE ||
	    ((failed || mode == BCH_MODE_NONE) && !bch_slot_dirty(bt))) {
		atomic64_inc(&bt->stats.bypassed);
		bch_remap_origin(bt, bio);
		return DM_MAPIO_REMAPPED;
	}
	/*
	 * Pieces rewritten as one extent carry the data the lookup found:
	 * unlike a miss's, whose origin read comes after the snapshot, their
	 * snapshot must come before the lookup.
	 */
	if (sectors > set->block_size && READ_ONCE(bt->rewrite) &&
	    mode != BCH_MODE_NONE && !failed) {
		snapped = bch_track_read(bch_track_of(bt), sector, sectors,
					 &io->snap);
		io->snap_sectors = sectors;
	}
	bio_list_init(&clones);
	if (io->deferred) {
		/*
		 * Read what the lookups need, with the lock let go, then
		 * what is still missing under it: nothing is evicted under
		 * read.
		 */
		bch_index_read_ahead(set, io->inode, sector, sector + sectors,
				     true);
		down_write(&set->btree_lock);
		hit = bch_btree_load_range(&set->btree, io->inode, sector,
					   sector + sectors);
		downgrade_write(&set->btree_lock);
		if (hit) {
			up_read(&set->btree_lock);
			DMERR_LIMIT("%s: cannot read the index (%d): read failed",
				    set->name, hit);
			return hit == -ENOMEM ? BCH_MAPIO_DEFER : DM_MAPIO_KILL;
		}
	} else {
		down_read(&set->btree_lock);
	}
	hit = bch_btree_lookup(&set->btree, io->inode, sector,
			       sector + sectors, &k);
	if (hit < 0) {
		up_read(&set->btree_lock);
		return BCH_MAPIO_DEFER;
	}
	if (io->deferred && k.size < sectors)
		return bch_read_mixed(bt, bio, io);
	if (hit && k.size < sectors && !failed &&
	    ((k.flags & BCH_KEY_DIRTY) || mode != BCH_MODE_NONE))
		gathered = bch_gather_hits(bt, bio, io->inode, &k, verify,
					   &clones);
	if (!hit && bch_fault_wait_ms(BCH_WAIT_MISS_PAUSE))
		msleep(bch_fault_wait_ms(BCH_WAIT_MISS_PAUSE));
	/*
	 * A miss's snapshot, under the same lock as the lookup: a write that
	 * was indexed before it is in the lookup's answer, one that is not
	 * yet is in flight or starts later, and either fails the fill. Taken
	 * after the lock, a dirty write could be indexed and complete in
	 * between, and the fill would index the origin's older data over it.
	 */
	if (!hit && !failed && mode != BCH_MODE_NONE &&
	    bch_fillable(bt, sector, k.size))
		fill = bch_track_read(bch_track_of(bt), sector, k.size,
				      &miss_snap);
	/*
	 * Shared inserts go on under the read lock: a dirty write indexed
	 * after the lookup may have completed before the snapshot, and be
	 * in neither. A lookup after the snapshot sees it.
	 */
	if (fill && bch_miss_changed(set, io->inode, sector, k.size))
		fill = false;
	up_read(&set->btree_lock);
	if (gathered)
		return bch_read_pieces(bt, bio, io, &clones, gathered,
				       k.flags & BCH_KEY_DIRTY, snapped);
	if (k.size < sectors) {
		dm_accept_partial_bio(bio, k.size);
		sectors = k.size;
	}
	io->iter = bio->bi_iter;
	/* After the split: the rest comes back as a bio of its own. */
	bypass = bch_seq_bypass(&bt->seq, sector, sectors);

	if (!(hit && (k.flags & BCH_KEY_DIRTY)) &&
	    (failed || mode == BCH_MODE_NONE)) {
		atomic64_inc(&bt->stats.bypassed);
		bch_remap_origin(bt, bio);
		return DM_MAPIO_REMAPPED;
	}
	/*
	 * Dirty data is read from a failed device too: it is the only copy,
	 * and if it cannot be read the read fails, never with older data.
	 * Dirty data lost with a member of the set fails at once.
	 */
	if (hit && bch_key_lost(set, &k)) {
		if (k.flags & BCH_KEY_DIRTY) {
			atomic64_inc(&bt->stats.cache_errors);
			return DM_MAPIO_KILL;
		}
		atomic64_inc(&bt->stats.bypassed);
		bch_remap_origin(bt, bio);
		return DM_MAPIO_REMAPPED;
	}
	if (hit && (k.flags & BCH_KEY_CSUM) && verify) {
		/* The bio's part of the key: the rest is another bio's. */
		k.size = sectors;
		k.end = sector + sectors;
		if (bch_piece_bounces(&k, true))
			return bch_read_bounce(bt, bio, io, &k);
		io->csummed = 1;
		io->csum = k.csum;
	}
	if (hit) {
		io->kind = BCH_IO_HIT;
		io->dirty = !!(k.flags & BCH_KEY_DIRTY);
		io->read_copy = bch_copy_choose(set, &k, io->avoid);
		io->ptr = bch_key_loc(&k);
		io->gen = bch_key_gen(&k);
		bio_set_dev(bio, bch_ptr_bdev(set, io->ptr));
		bio->bi_iter.bi_sector = bch_key_sector(&k);
		bch_bucket_hit(set, io->ptr, sectors);
		atomic64_inc(&bt->stats.read_hits);
		return DM_MAPIO_REMAPPED;
	}

	if (bypass) {
		atomic64_inc(&bt->stats.bypassed);
	} else {
		atomic64_inc(&bt->stats.read_misses);
		if (fill) {
			io->snap = miss_snap;
			io->snap_sectors = sectors;
			io->kind = BCH_IO_MISS;
		}
	}
	bch_remap_origin(bt, bio);
	return DM_MAPIO_REMAPPED;
}

/* What bch_punch() did with a write bound for the origin. */
enum {
	BCH_PUNCH_NONE,		/* nothing cached: the write may go */
	BCH_PUNCH_QUEUED,	/* the write waits for the hole's journal entry */
	BCH_PUNCH_DIRTY,	/* dirty data there: nothing done */
	BCH_PUNCH_RETRY,	/* no memory or room for the hole: try later */
	BCH_PUNCH_DEFER,	/* a leaf must be read: from a worker */
	BCH_PUNCH_ERROR,	/* the index cannot be read */
};

/*
 * Whether the index holds dirty data in [start, end): 1 or 0, or an error
 * (-EAGAIN from map(): a leaf must be read). Btree lock held for write.
 */
static int bch_range_dirty(struct bch_cache_set *set, u32 inode, u64 start,
			   u64 end)
{
	struct bch_bkey k;
	int r;

	while (start < end) {
		r = bch_index_lookup(set, inode, start, end, &k);
		if (r < 0)
			return r;
		/* Lost with its members: a write replaces it (member.c). */
		if (r && (k.flags & BCH_KEY_DIRTY) && !bch_key_lost(set, &k))
			return 1;
		if (WARN_ON_ONCE(!k.size))
			break;
		start += k.size;
	}
	return 0;
}

/* A punch that needs a leaf read, or whose index cannot be read. */
static int bch_punch_error(struct bch_cache_set *set, int r)
{
	if (r == -EAGAIN)
		return BCH_PUNCH_DEFER;
	if (r == -ENOMEM)
		return BCH_PUNCH_RETRY;
	DMERR_LIMIT("%s: cannot read the index (%d): write failed", set->name, r);
	return BCH_PUNCH_ERROR;
}

/*
 * Punch [sector, +sectors) out of the index. Called after the write was
 * counted in by track.c: a fill that has not inserted yet will fail its
 * check, and one that has is seen by the lookup, so nothing cached is
 * missed by looking under the read lock.
 *
 * Dirty data is never punched: until the origin has the write, a read
 * of the range would find the origin's older data, and a crash after the
 * hole is durable would lose both. The caller has it written back first;
 * the check is under the write lock, so that no dirty write indexed
 * before the hole can be dropped by it.
 */
static int bch_punch(struct bch_target *bt, struct bio *bio, u32 inode,
		     u64 sector, u32 sectors)
{
	struct bch_cache_set *set = bt->set;
	struct bch_bkey hole = {
		.inode	= inode,
		.size	= sectors,
		.end	= sector + sectors,
		.flags	= BCH_KEY_HOLE,
	};
	struct bch_bkey k;
	bool cached;
	int r;

	if (inode == BCH_INODE_NONE)
		return BCH_PUNCH_NONE;
	down_read(&set->btree_lock);
	/* A leaf that is not resident may hold something: look closer. */
	r = bch_btree_lookup(&set->btree, inode, sector, sector + sectors, &k);
	cached = r || k.size < sectors;
	up_read(&set->btree_lock);
	if (!cached)
		return BCH_PUNCH_NONE;
	if (r < 0)
		bch_index_read_ahead(set, inode, sector, sector + sectors, false);

	bch_index_lock(set);
	/* Unless it cannot be: a failed device whose batches fail. */
	if (bch_slot_dirty(bt) &&
	    !(bch_cache_failed(set) && READ_ONCE(bt->wb.error))) {
		r = bch_range_dirty(set, inode, sector, sector + sectors);
		if (r) {
			up_write(&set->btree_lock);
			if (r == 1)
				return BCH_PUNCH_DIRTY;
			return bch_punch_error(set, r);
		}
	}
	r = bch_index_insert(set, &hole);
	if (!r)
		bch_journal_add(set, &hole, bio);
	up_write(&set->btree_lock);
	if (r == -EAGAIN || r == -EIO || r == -EUCLEAN)
		return bch_punch_error(set, r);
	if (r) {
		/*
		 * A node split found no memory or no bucket: the write waits
		 * and tries again, as GC, reclaim and writeback make room.
		 * Dropping the slot instead would drop its dirty data.
		 */
		DMWARN_LIMIT("%s: index insert failed (%d): write held",
			     set->name, r);
		return BCH_PUNCH_RETRY;
	}
	return BCH_PUNCH_QUEUED;
}

static void bch_cache_write_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	if (clone->bi_status)
		io->cache_error = 1;
	bio_put(clone);
	bio_endio(bio);
}

/*
 * Also write the data to the cache, if it fits in the open bucket: a
 * clone of the bio, or with data checksums a copy of its data (indexed
 * from that copy in bch_write_done()).
 */
static void bch_write_to_cache(struct bch_target *bt, struct bio *bio,
			       struct bch_io *io)
{
	struct bch_cache_set *set = bt->set;
	u32 sectors = bio_sectors(bio), got;
	struct bio *clone = NULL;

	if (bch_alloc_data(set, sectors, &io->ptr, &io->gen, &got))
		return;
	/* Not in one piece: give the space back, cache nothing. */
	if (got == sectors && bch_csums(set)) {
		io->copy = bch_copy_bio(bt, bio, true);
		if (io->copy)
			clone = bch_pages_bio(set, io->copy, 0, sectors, io->ptr,
					      GFP_NOWAIT | __GFP_NOWARN);
		if (!clone && io->copy) {
			bch_fill_free(io->copy);
			io->copy = NULL;
		}
	} else if (got == sectors) {
		clone = bio_alloc_clone(bch_ptr_bdev(set, io->ptr), bio,
					GFP_NOIO, &bt->bs);
		if (clone) {
			clone->bi_opf &= ~(REQ_FUA | REQ_PREFLUSH);
			clone->bi_iter.bi_sector = bch_ptr_sector(io->ptr);
		}
	}
	if (!clone) {
		bch_alloc_abort(set, io->ptr);
		return;
	}
	clone->bi_end_io = bch_cache_write_endio;
	clone->bi_private = bio;
	io->kind = BCH_IO_WRITE_CACHED;
	bio_inc_remaining(bio);
	submit_bio_noacct(clone);
}

/*
 * The origin's part of a write: wait for a writeback batch over the
 * range (and, over the fingerprint, for BCH_UUID_FP_WRITING), have dirty
 * data in the range written back, punch the range out of the index, send
 * the write on. Each wait ends in bch_write_resume(), which comes back
 * here. Returns a DM_MAPIO_* code: REMAPPED means the caller sends the
 * bio.
 *
 * The write counts itself in as bound for the origin before it checks
 * for a batch, and out while it waits: see writeback.c.
 */
static int bch_write_origin(struct bch_target *bt, struct bio *bio,
			    struct bch_io *io)
{
	struct bch_track *origin = bch_origin_track_of(bt);
	u64 sector = io->iter.bi_sector, snap;
	u32 sectors = io->iter.bi_size >> SECTOR_SHIFT;
	int r;

	bch_track_write_start(origin, sector, sectors, &snap);
	if (bch_writeback_park(bt, bio, sector, sector + sectors))
		goto parked;
	/* Dirty data on a failed device is still written back, and punched. */
	if (bch_cache_failed(bt->set) && !bch_slot_dirty(bt)) {
		atomic64_inc(&bt->stats.bypassed);
		goto go;
	}
	if (sector < BCH_FINGERPRINT_SECTORS && !io->fp) {
		if (!bch_slot_fp_begin(bt->set, bt->slot, bio))
			goto parked;
		io->fp = 1;
	}
	/* Before the punch: once queued, the bio may complete at any time. */
	io->origin = 1;
	r = bch_punch(bt, bio, io->inode, sector, sectors);
	if (r == BCH_PUNCH_DEFER || r == BCH_PUNCH_ERROR) {
		io->origin = 0;
		bch_track_write_end(origin, sector, sectors);
		/*
		 * Failed by the worker, whose bio_io_error() runs end_io:
		 * map() may have sent a cached copy, begun the fingerprint.
		 */
		if (r == BCH_PUNCH_ERROR && io->deferred)
			return DM_MAPIO_KILL;
		bch_defer(bt, bio);
		return DM_MAPIO_SUBMITTED;
	}
	if (r == BCH_PUNCH_DIRTY || r == BCH_PUNCH_RETRY) {
		int error = READ_ONCE(bt->wb.error);
		bool later = r == BCH_PUNCH_RETRY || io->held;

		io->origin = 0;
		bch_track_write_end(origin, sector, sectors);
		if (r == BCH_PUNCH_DIRTY && io->held && error) {
			/* Its batch failed: the write fails as the copy did. */
			bio->bi_status = errno_to_blk_status(error);
			bio_endio(bio);
			return DM_MAPIO_SUBMITTED;
		}
		/* Once at once; again only after a while, or it would spin. */
		io->held = 1;
		bch_writeback_hold(bt, bio, later);
		return DM_MAPIO_SUBMITTED;
	}
	if (r == BCH_PUNCH_QUEUED) {
		atomic64_inc(&bt->stats.write_hits);
		return DM_MAPIO_SUBMITTED;
	}
	atomic64_inc(&bt->stats.write_misses);
	return DM_MAPIO_REMAPPED;
go:
	io->origin = 1;
	return DM_MAPIO_REMAPPED;
parked:
	bch_track_write_end(origin, sector, sectors);
	return DM_MAPIO_SUBMITTED;
}

static void bch_dirty_written(struct bch_target *bt, struct bch_io *io,
			      blk_status_t error);

/*
 * A dirty write's copy at @loc is on the cache (or failed): once every
 * copy is, index it. If one failed, none is indexed: dirty data on a set
 * of several has two copies or goes to the origin.
 */
static void bch_dirty_copy_done(struct bio *wbio, u64 loc)
{
	struct bio *bio = wbio->bi_private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	if (wbio->bi_status) {
		WRITE_ONCE(io->cache_error, 1);
		bch_member_io_error(io->bt->set, loc, true);
	}
	bio_put(wbio);
	/* Orders each copy's error before the last one reads them. */
	if (!atomic_dec_and_test(&io->pieces))
		return;
	bch_pages_free(io->copy);
	io->copy = NULL;
	bch_dirty_written(io->bt, io,
			  io->cache_error ? BLK_STS_IOERR : BLK_STS_OK);
}

static void bch_dirty_copy_endio(struct bio *wbio)
{
	struct bch_io *io = dm_per_bio_data(wbio->bi_private, sizeof(*io));

	bch_dirty_copy_done(wbio, io->ptr);
}

static void bch_dirty_copy2_endio(struct bio *wbio)
{
	struct bch_io *io = dm_per_bio_data(wbio->bi_private, sizeof(*io));

	bch_dirty_copy_done(wbio, io->ptr2);
}

/* Room for a dirty write: two copies on a set of several, else one. */
static int bch_alloc_dirty(struct bch_cache_set *set, struct bch_io *io,
			   u32 sectors, u32 *got)
{
	u64 ptr[2];
	u8 gen[2];

	if (!bch_copies_mirrored(set))
		return bch_alloc_data(set, sectors, &io->ptr, &io->gen, got);
	if (bch_alloc_mirrored(set, sectors, ptr, gen, got))
		return -ENOSPC;
	io->mirrored = 1;
	io->ptr = ptr[0];
	io->gen = gen[0];
	io->ptr2 = ptr[1];
	io->gen2 = gen[1];
	return 0;
}

/* A dirty write's room will not be indexed. */
static void bch_abort_dirty(struct bch_cache_set *set, struct bch_io *io)
{
	bch_alloc_abort(set, io->ptr);
	if (io->mirrored)
		bch_alloc_abort(set, io->ptr2);
}

/*
 * Writeback: write @bio to the cache only; it is indexed dirty when done.
 * What does not fit in the open bucket (with data checksums, in one key)
 * comes back as a bio of its own. With data checksums the cache gets a
 * copy, and the bio waits unsent for its index entry. -ENOSPC if there is
 * no room or no memory for the copy: it goes to the origin then. Else a
 * DM_MAPIO_* code.
 */
static int bch_write_dirty(struct bch_target *bt, struct bio *bio,
			   struct bch_io *io)
{
	struct bch_cache_set *set = bt->set;
	u32 sectors = bio_sectors(bio), got;
	struct bio *wbio = NULL, *wbio2 = NULL;

	if (bch_csums(set))
		sectors = min_t(u32, sectors, BCH_CSUM_MAX_SECTORS);
	if (bch_alloc_dirty(set, io, sectors, &got)) {
		/* Full of dirty data: the origin's pace until writeback frees some. */
		bch_writeback_kick(bt);
		return -ENOSPC;
	}
	if (got < bio_sectors(bio))
		dm_accept_partial_bio(bio, got);
	/* Two copies are written from pages of the module's own. */
	if (bch_csums(set) || WARN_ON_ONCE(io->mirrored)) {
		gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;

		io->copy = bch_copy_bio(bt, bio, false);
		if (io->copy)
			wbio = bch_pages_bio(set, io->copy, 0, got, io->ptr, gfp);
		if (wbio && io->mirrored) {
			wbio2 = bch_pages_bio(set, io->copy, 0, got, io->ptr2,
					      gfp);
			if (!wbio2) {
				bio_put(wbio);
				wbio = NULL;
			}
		}
		if (!wbio) {
			if (io->copy)
				bch_pages_free(io->copy);
			io->copy = NULL;
			bch_abort_dirty(set, io);
			return -ENOSPC;
		}
		io->csum = bch_csum_pages(io->copy->pages, 0,
					  got << SECTOR_SHIFT);
		io->csummed = 1;
	}
	io->iter = bio->bi_iter;
	bch_track_write_start(bch_track_of(bt), io->iter.bi_sector, got,
			      &io->snap);
	io->kind = BCH_IO_WRITE_DIRTY;
	/* Durability comes from the journal entry, written with FUA. */
	io->fua = !!(bio->bi_opf & REQ_FUA);
	bio->bi_opf &= ~REQ_FUA;
	atomic64_inc(&bt->stats.write_misses);
	if (wbio) {
		io->cache_error = 0;
		atomic_set(&io->pieces, wbio2 ? 2 : 1);
		wbio->bi_end_io = bch_dirty_copy_endio;
		wbio->bi_private = bio;
		if (wbio2) {
			wbio2->bi_end_io = bch_dirty_copy2_endio;
			wbio2->bi_private = bio;
		}
		submit_bio_noacct(wbio);
		if (wbio2)
			submit_bio_noacct(wbio2);
		return DM_MAPIO_SUBMITTED;
	}
	bio_set_dev(bio, bch_ptr_bdev(set, io->ptr));
	bio->bi_iter.bi_sector = bch_ptr_sector(io->ptr);
	return DM_MAPIO_REMAPPED;
}

/* Writes, discards and write-zeroes. */
static int bch_map_write(struct bch_target *bt, struct bio *bio,
			 struct bch_io *io)
{
	enum bch_cache_mode mode = READ_ONCE(bt->mode);
	struct bch_cache_set *set = bt->set;
	u64 sector = bio->bi_iter.bi_sector;
	u32 sectors = bio_sectors(bio);
	bool alone, cache, bypass;

	io->inode = bch_slot_inode(set, bt->slot);
	bypass = bch_seq_bypass(&bt->seq, sector, sectors);
	cache = bio_op(bio) == REQ_OP_WRITE && !bch_cache_failed(set) &&
		io->inode != BCH_INODE_NONE &&
		bch_fillable(bt, sector, sectors);
	if (cache && bypass) {
		atomic64_inc(&bt->stats.bypassed);
		cache = false;
	}
	/* Counted in by track.c there, once the bio has its final size. */
	if (cache && mode == BCH_MODE_WRITEBACK) {
		int r = bch_write_dirty(bt, bio, io);

		if (r != -ENOSPC)
			return r;
		/* Maybe cut to one key before its copy failed. */
		sectors = bio_sectors(bio);
	}

	io->iter = bio->bi_iter;
	io->kind = BCH_IO_WRITE;
	alone = bch_track_write_start(bch_track_of(bt), sector, sectors,
				      &io->snap);
	cache = cache && alone;
	/* The bio must be ready to go before the punch may send it on. */
	if (cache && mode == BCH_MODE_WRITETHROUGH)
		bch_write_to_cache(bt, bio, io);
	bch_remap_origin(bt, bio);
	return bch_write_origin(bt, bio, io);
}

/*
 * A bio parked by the journal or the UUID table may go on: a dirty write
 * is acknowledged, an origin write or a flush sent. If what it waited
 * for did not become durable (@status), a dirty write and a flush fail:
 * they promised durability; an origin write still goes (writethrough
 * loses nothing: the failed cache is not trusted again).
 */
void bch_release_bio(struct bio *bio, blk_status_t status)
{
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	if (io->kind == BCH_IO_ACK || (status && !bio_sectors(bio))) {
		bio->bi_status = status;
		bio_endio(bio);
	} else {
		submit_bio_noacct(bio);
	}
}

/* The origin range of a write waiting in writeback.c. */
void bch_write_range(struct bio *bio, u64 *start, u64 *end)
{
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	*start = io->iter.bi_sector;
	*end = *start + (io->iter.bi_size >> SECTOR_SHIFT);
}

/* Send on, end or defer @bio as map() would have told dm to. */
static void bch_mapped(struct bch_target *bt, struct bio *bio, int r)
{
	switch (r) {
	case DM_MAPIO_REMAPPED:
		submit_bio_noacct(bio);
		break;
	case DM_MAPIO_KILL:
		bio_io_error(bio);
		break;
	case BCH_MAPIO_DEFER:
		bch_defer(bt, bio);
		break;
	}
}

/* A write that waited for a writeback batch: it may punch now. */
void bch_write_resume(struct bio *bio)
{
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	bch_mapped(io->bt, bio, bch_write_origin(io->bt, bio, io));
}

/*
 * Bios whose lookup needs an index node that is not in memory: mapped
 * again here, where the node may be read. A worker's own attempt that
 * fails for want of memory comes back after a pause.
 */
static void bch_defer_work(struct work_struct *work)
{
	struct bch_target *bt = container_of(to_delayed_work(work),
					     struct bch_target, defer_work);
	struct bio_list bios;
	struct bio *bio;

	spin_lock_irq(&bt->defer_lock);
	bios = bt->deferred;
	bio_list_init(&bt->deferred);
	spin_unlock_irq(&bt->defer_lock);

	while ((bio = bio_list_pop(&bios))) {
		struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
		int r;

		io->deferred = 1;
		if (bio_op(bio) == REQ_OP_READ)
			r = bch_map_read(bt, bio, io);
		else
			r = bch_write_origin(bt, bio, io);
		bch_mapped(bt, bio, r);
	}
}

/* Map @bio again from bch_defer_work(): at once from map(), else later. */
void bch_defer(struct bch_target *bt, struct bio *bio)
{
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
	unsigned long flags;

	spin_lock_irqsave(&bt->defer_lock, flags);
	bio_list_add(&bt->deferred, bio);
	spin_unlock_irqrestore(&bt->defer_lock, flags);
	atomic64_inc(&bt->stats.deferred);
	mod_delayed_work(bt->set->wq, &bt->defer_work,
			 io->deferred ? HZ / 50 : 0);
}

void bch_defer_init(struct bch_target *bt)
{
	spin_lock_init(&bt->defer_lock);
	bio_list_init(&bt->deferred);
	INIT_DELAYED_WORK(&bt->defer_work, bch_defer_work);
}

int bch_map(struct dm_target *ti, struct bio *bio)
{
	struct bch_target *bt = ti->private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));
	int r;

	io->bt = bt;
	bch_io_reset(io);
	io->avoid = 0;
	if (!bio_sectors(bio)) {
		/*
		 * Flushes: writethrough data is on the origin, dirty data is
		 * durable once its keys are: the flush waits for the journal
		 * entries in flight, then goes to the origin.
		 */
		bch_remap_origin(bt, bio);
		if ((READ_ONCE(bt->mode) == BCH_MODE_WRITEBACK ||
		     bch_slot_dirty(bt)) && bch_journal_barrier(bt->set, bio))
			return DM_MAPIO_SUBMITTED;
		bch_journal_kick(bt->set);
		return DM_MAPIO_REMAPPED;
	}
	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);

	io->deferred = 0;
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		r = bch_map_read(bt, bio, io);
		if (r == BCH_MAPIO_DEFER) {
			bch_defer(bt, bio);
			return DM_MAPIO_SUBMITTED;
		}
		return r;
	case REQ_OP_WRITE:
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:
	case REQ_OP_WRITE_ZEROES:
		return bch_map_write(bt, bio, io);
	default:
		bch_remap_origin(bt, bio);
		return DM_MAPIO_REMAPPED;
	}
}

static void bch_write_done(struct bch_target *bt, struct bch_io *io,
			   blk_status_t error)
{
	u32 sectors = io->iter.bi_size >> SECTOR_SHIFT;
	struct bch_cache_set *set = bt->set;
	struct bch_fill *f = NULL;

	bch_track_write_end(bch_track_of(bt), io->iter.bi_sector, sectors);
	if (io->origin)
		bch_track_write_end(bch_origin_track_of(bt),
				    io->iter.bi_sector, sectors);
	if (io->fp)
		bch_slot_fp_end(set, bt->slot);
	if (io->kind != BCH_IO_WRITE_CACHED)
		return;
	if (io->cache_error) {
		atomic64_inc(&bt->stats.cache_errors);
		bch_member_io_error(set, io->ptr, true);
	}
	if (io->copy && !error && !io->cache_error) {
		/* The copy the cache was written from: indexed from there. */
		f = io->copy;
	} else if (io->copy) {
		bch_fill_free(io->copy);
	} else if (!error && !io->cache_error) {
		f = bch_fill_alloc(bt, 0, GFP_ATOMIC | __GFP_NOWARN);
	}
	io->copy = NULL;
	if (!f) {
		/* The space is lost until its bucket is reclaimed. */
		bch_alloc_abort(set, io->ptr);
		return;
	}
	f->sector = io->iter.bi_sector;
	f->sectors = sectors;
	f->inode = io->inode;
	f->snap = io->snap;
	f->snap_sectors = sectors;
	f->ptr = io->ptr;
	f->gen = io->gen;
	f->written = true;
	queue_work(set->wq, &f->work);
}

/* Send a dirty write that could not be indexed to the origin instead. */
static void bch_dirty_to_origin(struct bch_target *bt, struct bio *bio,
				struct bch_io *io)
{
	bio->bi_iter = io->iter;
	bio->bi_status = BLK_STS_OK;
	bio->bi_next = NULL;	/* as in bch_retry_from_origin() */
	if (io->fua)
		bio->bi_opf |= REQ_FUA;
	io->kind = BCH_IO_WRITE;
	bch_remap_origin(bt, bio);
	bch_write_resume(bio);
}

/* A dirty write to index (bch_index_update()). */
struct bch_dirty_op {
	struct bch_index_op	op;
	struct bch_io		*io;
};

static int bch_dirty_check(struct bch_index_op *op)
{
	struct bch_io *io = container_of(op, struct bch_dirty_op, op)->io;

	/* A copy on a member lost since the allocation: to the origin. */
	return io->inode == bch_slot_inode(io->bt->set, io->bt->slot) &&
	       !bch_key_on_lost(io->bt->set, &op->k) ? 0 : -EAGAIN;
}

static void bch_dirty_done(struct bch_index_op *op, int r)
{
	struct bch_io *io = container_of(op, struct bch_dirty_op, op)->io;
	struct bio *bio = dm_bio_from_per_bio_data(io, sizeof(*io));
	struct bch_target *bt = io->bt;
	struct bch_cache_set *set = bt->set;
	u32 sectors = op->k.size;

	if (r) {
		bch_alloc_done(set, io->ptr, 0);
		if (io->mirrored)
			bch_alloc_done(set, io->ptr2, 0);
		return;
	}
	bch_alloc_done_dirty(set, io->ptr, sectors);
	if (io->mirrored)
		bch_alloc_done_dirty(set, io->ptr2, sectors);
	atomic64_add(sectors, &set->slots[bt->slot].dirty);
	atomic64_inc(&set->slots[bt->slot].dirty_inserts);
	atomic64_add(sectors, &bt->stats.filled);
	io->kind = BCH_IO_ACK;
	/* Last: once the journal holds the bio, it may complete and be freed. */
	bch_journal_add(set, &op->k, io->fua ? bio : NULL);
}

/*
 * A dirty write is on the cache: index it. The write is acknowledged now,
 * or with REQ_FUA once the key is durable; a flush waits for that too.
 */
static void bch_dirty_index_work(struct work_struct *work)
{
	struct bch_io *io = container_of(work, struct bch_io, work);
	struct bio *bio = dm_bio_from_per_bio_data(io, sizeof(*io));
	struct bch_target *bt = io->bt;
	struct bch_cache_set *set = bt->set;
	u32 sectors = io->iter.bi_size >> SECTOR_SHIFT;
	struct bch_dirty_op d = {
		.op = {
			.k = {
				.inode	= io->inode,
				.size	= sectors,
				.end	= io->iter.bi_sector + sectors,
				.ptr	= { bch_loc_ptr(io->ptr, io->gen),
					    io->mirrored ?
					    bch_loc_ptr(io->ptr2, io->gen2) : 0 },
				.nptrs	= 1 + io->mirrored,
				.flags	= BCH_KEY_DIRTY,
			},
			.check	= bch_dirty_check,
			.done	= bch_dirty_done,
		},
		.io = io,
	};
	/* Once the journal holds the bio, it may complete and be freed. */
	bool fua = io->fua;
	int r;

	if (io->csummed)
		bch_key_set_csum(&d.op.k, io->csum);

	bch_index_read_ahead(set, io->inode, bch_key_start(&d.op.k), d.op.k.end,
			     false);
	r = bch_index_update(set, &d.op);

	if (r) {
		if (r != -EAGAIN)
			DMWARN_LIMIT("%s: dirty write not indexed (%d): sent to the origin",
				     set->name, r);
		bch_dirty_to_origin(bt, bio, io);
		return;
	}
	/* Before the bio ends: a suspend waits for it, then stops the worker. */
	if (bch_slot_dirty(bt) > bch_wb_target_of(bt))
		bch_writeback_kick(bt);
	else
		bch_writeback_soon(bt);
	if (!fua)
		bio_endio(bio);
}

static void bch_dirty_error_work(struct work_struct *work)
{
	struct bch_io *io = container_of(work, struct bch_io, work);

	bch_dirty_to_origin(io->bt, dm_bio_from_per_bio_data(io, sizeof(*io)),
			    io);
}

/*
 * A hit whose data failed its checksum, in the reader's pages: read again
 * into memory of the module's own (the reader may have changed its pages
 * under the read). Good data is copied into the bio; bad data is an
 * error: clean, dropped and read from the origin; dirty, the read fails.
 */
static void bch_hit_bad_work(struct work_struct *work)
{
	struct bch_io *io = container_of(work, struct bch_io, work);
	struct bio *bio = dm_bio_from_per_bio_data(io, sizeof(*io));
	struct bch_target *bt = io->bt;
	struct bch_cache_set *set = bt->set;
	int r;

	r = bch_csum_reread(set, io->ptr, io->gen, io->csum, bio, io->iter,
			    io->iter.bi_size);
	if (r == -EBADMSG)
		bch_csum_bad(bt, io->inode, io->iter.bi_sector,
			     io->iter.bi_size >> SECTOR_SHIFT, io->ptr, io->gen,
			     io->dirty);
	if (!r) {
		io->kind = BCH_IO_ORIGIN;
		bio_endio(bio);
	} else if (io->dirty && r == -ESTALE) {
		/* Overwritten meanwhile: look again. */
		bch_read_again(bt, bio, io);
	} else if (io->dirty && (io->read_copy & BCH_COPY_OTHER)) {
		bch_hit_copy_failed(io);
	} else if (io->dirty) {
		/* Bad or unreadable: an error, never the origin's older data. */
		io->kind = BCH_IO_ORIGIN;
		bio->bi_status = BLK_STS_IOERR;
		bio_endio(bio);
	} else {
		atomic64_inc(&bt->stats.retries);
		bch_retry_from_origin(bt, bio, io);
	}
}

/* A dirty hit's copy could not be read: its other, looked up again. */
static void bch_hit_copy_work(struct work_struct *work)
{
	bch_hit_copy_failed(container_of(work, struct bch_io, work));
}

/* A dirty write's data is on the cache (or failed): index it, from a worker. */
static void bch_dirty_written(struct bch_target *bt, struct bch_io *io,
			      blk_status_t error)
{
	if (error) {
		/* Not on the cache: the origin takes it. */
		atomic64_inc(&bt->stats.cache_errors);
		bch_abort_dirty(bt->set, io);
		INIT_WORK(&io->work, bch_dirty_error_work);
	} else {
		INIT_WORK(&io->work, bch_dirty_index_work);
	}
	queue_work(bt->set->wq, &io->work);
}

int bch_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct bch_target *bt = ti->private;
	struct bch_io *io = dm_per_bio_data(bio, sizeof(*io));

	switch (io->kind) {
	case BCH_IO_HIT:
		if (io->read_copy & BCH_COPY_COUNTED)
			bch_copy_read_done(bt->set, io->ptr);
		if (*error) {
			atomic64_inc(&bt->stats.cache_errors);
			bch_member_io_error(bt->set, io->ptr, false);
		}
		if (io->dirty && *error && (io->read_copy & BCH_COPY_OTHER)) {
			INIT_WORK(&io->work, bch_hit_copy_work);
			queue_work(bt->set->wq, &io->work);
			return DM_ENDIO_INCOMPLETE;
		}
		if (io->dirty && *error)
			break;	/* the origin is behind: an error, never its data */
		if (io->dirty && bch_ptr_reused(bt->set, io->ptr, io->gen)) {
			bch_read_again(bt, bio, io);
			return DM_ENDIO_INCOMPLETE;
		}
		if (*error || bch_ptr_reused(bt->set, io->ptr, io->gen)) {
			atomic64_inc(&bt->stats.retries);
			bch_retry_from_origin(bt, bio, io);
			return DM_ENDIO_INCOMPLETE;
		}
		if (io->csummed && (bch_fault(BCH_FAULT_CSUM) ||
				    bch_csum_bio(bio, io->iter, io->iter.bi_size) !=
				    io->csum)) {
			INIT_WORK(&io->work, bch_hit_bad_work);
			queue_work(bt->set->wq, &io->work);
			return DM_ENDIO_INCOMPLETE;
		}
		break;
	case BCH_IO_PIECES:
		break;	/* bch_pieces_done() saw to it */
	case BCH_IO_MISS:
		if (!*error)
			bch_fill_from_bio(bt, bio, io);
		break;
	case BCH_IO_WRITE:
	case BCH_IO_WRITE_CACHED:
		bch_write_done(bt, io, *error);
		break;
	case BCH_IO_WRITE_DIRTY:
		/* Written as is: to one member, at io->ptr. */
		if (*error)
			bch_member_io_error(bt->set, io->ptr, true);
		bch_dirty_written(bt, io, *error);
		return DM_ENDIO_INCOMPLETE;
	case BCH_IO_ACK:
		bch_track_write_end(bch_track_of(bt), io->iter.bi_sector,
				    io->iter.bi_size >> SECTOR_SHIFT);
		break;
	}
	return DM_ENDIO_DONE;
}

/*
 * No fill of @bt may be left when its table is suspended or destroyed:
 * all its IO has completed by then, so no new fill can be queued.
 */
void bch_wait_fills(struct bch_target *bt)
{
	flush_workqueue(bt->set->wq);
}
