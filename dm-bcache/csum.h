/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: data checksums (format version 3, Documentation/format-v3.rst).
 * Every key written to a version 3 cache carries the crc32c of its data,
 * computed over the module's own copy of the bytes the device was given.
 */
#ifndef _DM_BCACHE_CSUM_H
#define _DM_BCACHE_CSUM_H

#include <linux/types.h>

struct bch_cache_set;
struct bch_bkey;
struct page;

/* Whether keys of @set carry data checksums (version 3). */
bool bch_csums(const struct bch_cache_set *set);

/* Standard crc32c of @bytes of @pages from byte @off (each a whole page). */
u32 bch_csum_pages(struct page **pages, u32 off, u32 bytes);

/* @k's whole data is its checksummed range, of checksum @csum. */
void bch_key_set_csum(struct bch_bkey *k, u32 csum);

#endif
