/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the dm-bcache userspace tools.
 *
 * Functions returning int give 0 on success and -1 on failure; the reason
 * is then available as a one-line message from bch_strerror().
 */
#ifndef _BCACHE_TOOLS_LIB_H
#define _BCACHE_TOOLS_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bcache_ondisk.h"

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)		__attribute__((format(printf, a, b)))

#define BCH_UUID_STR_LEN	37	/* 36 characters and the NUL */
#define BCH_SIZE_STR_LEN	32

/* Byte offset of the superblock. */
#define BCH_SB_OFFSET		((uint64_t)BCH_SB_SECTOR << BCH_SECTOR_SHIFT)

/* util.c */
__printf(1, 2) int bch_err(const char *fmt, ...);
const char *bch_strerror(void);
int bch_parse_size(const char *str, uint64_t *bytes);
void bch_format_size(uint64_t bytes, char *buf);
bool bch_is_power_of_2(uint64_t n);

/* uuid.c */
int bch_uuid_generate(uint8_t uuid[16]);
int bch_uuid_parse(const char *str, uint8_t uuid[16]);
void bch_uuid_format(const uint8_t uuid[16], char *buf);
bool bch_uuid_is_nil(const uint8_t uuid[16]);
/* A slot's BCH_UUID_* flags as "valid,attached,...", unknown bits in hex. */
void bch_uuid_print_flags(uint32_t flags);

/* crc32c.c: crc32c() has the kernel's semantics (no inversion). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t bch_csum(const void *buf, size_t len);

/* dev.c: a block device or a regular file standing in for one. */
struct bch_dev {
	int		fd;
	const char	*path;
	uint64_t	size;		/* bytes */
	unsigned int	lbs;		/* logical block size in bytes */
	bool		blk;
};

int bch_dev_open(struct bch_dev *dev, const char *path, bool rw);
void bch_dev_close(struct bch_dev *dev);
int bch_pread_all(struct bch_dev *dev, void *buf, size_t len, uint64_t off);
int bch_pwrite_all(struct bch_dev *dev, const void *buf, size_t len,
		   uint64_t off);
int bch_dev_sync(struct bch_dev *dev);

/* super.c */
bool bch_sb_has_magic(const struct bch_sb_disk *sb);
uint32_t bch_sb_csum(const struct bch_sb_disk *sb);
int bch_sb_read(struct bch_dev *dev, struct bch_sb_disk *sb);
int bch_sb_validate(const struct bch_sb_disk *sb, uint64_t dev_sectors);
int bch_sb_load(struct bch_dev *dev, struct bch_sb_disk *sb);
int bch_region_csum(struct bch_dev *dev, uint64_t sector, uint64_t sectors,
		    uint32_t *csum);

#endif /* _BCACHE_TOOLS_LIB_H */
