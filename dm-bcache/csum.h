/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: data checksums (format version 3, Documentation/format-v3.rst).
 * Every key written to a version 3 cache carries the crc32c of its data,
 * computed over the module's own copy of the bytes the device was given.
 */
#ifndef _DM_BCACHE_CSUM_H
#define _DM_BCACHE_CSUM_H

#include <linux/types.h>

#include <linux/bvec.h>

struct bch_cache_set;
struct bch_target;
struct bch_bkey;
struct page;
struct bio;

/* Whether keys of @set carry data checksums (version 3). */
bool bch_csums(const struct bch_cache_set *set);

/* Standard crc32c of @bytes of @pages from byte @off (each a whole page). */
u32 bch_csum_pages(struct page **pages, u32 off, u32 bytes);

/* @k's whole data is its checksummed range, of checksum @csum. */
void bch_key_set_csum(struct bch_bkey *k, u32 csum);

/* Whether reads of @bt's cached data are verified (verify_csums). */
bool bch_verify(const struct bch_target *bt);

/* Standard crc32c of the @bytes of @bio's data that @iter starts. */
u32 bch_csum_bio(struct bio *bio, struct bvec_iter iter, u32 bytes);

/* Copy @bytes of @pages from byte @off into @bio's data @skip bytes into @iter. */
void bch_pages_to_bio(struct bio *bio, struct bvec_iter iter, u32 skip,
		      struct page **pages, u32 off, u32 bytes);

/* Copy @bytes of @buf into @bio's data that @iter starts. */
void bch_buf_to_bio(struct bio *bio, struct bvec_iter iter, const void *buf,
		    u32 bytes);

/* Count and log a checksummed range of @bt (origin @sector, at location @ptr) that failed. */
void bch_csum_error(struct bch_target *bt, u64 sector, u32 sectors, u64 ptr);

#endif
