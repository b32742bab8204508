// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: data checksums. The crc32c of a key's data is computed over
 * pages of the module's own: a block device does not promise stable pages,
 * so a checksum of the bio's pages could be of bytes the device never got.
 */
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
