// SPDX-License-Identifier: GPL-2.0
/*
 * CRC-32C (Castagnoli), reflected, polynomial 0x82F63B78. Byte-at-a-time:
 * the tools checksum at most a few MiB of metadata, so speed is moot.
 */
#include "lib.h"

static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78 : c >> 1;
		crc32c_table[i] = c;
	}
}

/* Like the kernel's crc32c(): the caller seeds and inverts. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc32c_table[1])
		crc32c_init();
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The on-disk checksum: ~crc32c(~0, buf, len), i.e. standard CRC-32C. */
uint32_t bch_csum(const void *buf, size_t len)
{
	return ~crc32c(~0U, buf, len);
}
