// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: data checksums. The crc32c of a key's data is computed over
 * pages of the module's own: a block device does not promise stable pages,
 * so a checksum of the bio's pages could be of bytes the device never got.
 */
#include <linux/bio.h>
#include <linux/crc32c.h>
#include <linux/highmem.h>

#include "dm-bcache.h"

bool bch_csums(const struct bch_cache_set *set)
{
	return set->version >= 3;
}

u32 bch_csum_pages(struct page **pages, u32 off, u32 bytes)
{
	u32 crc = ~0U, n;

	while (bytes) {
		struct page *p = pages[off >> PAGE_SHIFT];
		u32 in = offset_in_page(off);
		void *a;

		n = min_t(u32, bytes, PAGE_SIZE - in);
		a = kmap_local_page(p);
		crc = crc32c(crc, a + in, n);
		kunmap_local(a);
		off += n;
		bytes -= n;
	}
	return ~crc;
}

void bch_key_set_csum(struct bch_bkey *k, u32 csum)
{
	k->flags |= BCH_KEY_CSUM;
	k->csum = csum;
	k->csum_front = 0;
	k->csum_sectors = k->size;
}

bool bch_verify(const struct bch_target *bt)
{
	return READ_ONCE(bt->verify) && bch_csums(bt->set);
}

u32 bch_csum_bio(struct bio *bio, struct bvec_iter iter, u32 bytes)
{
	struct bvec_iter it;
	struct bio_vec bv;
	u32 crc = ~0U;

	iter.bi_size = bytes;
	__bio_for_each_segment(bv, bio, it, iter) {
		void *a = bvec_kmap_local(&bv);

		crc = crc32c(crc, a, bv.bv_len);
		kunmap_local(a);
	}
	return ~crc;
}

void bch_pages_to_bio(struct bio *bio, struct bvec_iter iter, u32 skip,
		      struct page **pages, u32 off, u32 bytes)
{
	struct bvec_iter it;
	struct bio_vec bv;

	bio_advance_iter(bio, &iter, skip);
	iter.bi_size = bytes;
	__bio_for_each_segment(bv, bio, it, iter) {
		u32 done = 0, n;
		char *dst = bvec_kmap_local(&bv);

		while (done < bv.bv_len) {
			char *src = kmap_local_page(pages[off >> PAGE_SHIFT]);

			n = min_t(u32, bv.bv_len - done,
				  PAGE_SIZE - offset_in_page(off));
			memcpy(dst + done, src + offset_in_page(off), n);
			kunmap_local(src);
			done += n;
			off += n;
		}
		kunmap_local(dst);
	}
}

void bch_buf_to_bio(struct bio *bio, struct bvec_iter iter, const void *buf,
		    u32 bytes)
{
	struct bvec_iter it;
	struct bio_vec bv;

	iter.bi_size = bytes;
	__bio_for_each_segment(bv, bio, it, iter) {
		memcpy_to_bvec(&bv, buf);
		buf += bv.bv_len;
	}
}

void bch_csum_error(struct bch_target *bt, u64 sector, u32 sectors, u64 ptr)
{
	struct bch_cache_set *set = bt->set;

	atomic64_inc(&bt->stats.csum_errors);
	DMERR_LIMIT("%s: checksum error: slot %u sectors %llu+%u member %u bucket %llu",
		    set->name, bt->slot, sector, sectors, bch_ptr_dev(ptr),
		    bch_ptr_bucket_nr(set, ptr));
}
