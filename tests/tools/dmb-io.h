/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test tools share: whole transfers at a byte offset, which
 * pread and pwrite may split, block-range locks over stripes of a mutex
 * array, and the xorshift generator of their patterns and choices.
 */
#ifndef DMB_IO_H
#define DMB_IO_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/* All @len bytes at @off; 0, or -1 with errno set (0 for a short end). */
static inline int dmb_io_all(int fd, void *buf, size_t len, uint64_t off,
			     int write)
{
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		if (write)
			r = pwrite(fd, (char *)buf + done, len - done, off + done);
		else
			r = pread(fd, (char *)buf + done, len - done, off + done);
		if (r <= 0) {
			if (!r)
				errno = 0;
			return -1;
		}
		done += r;
	}
	return 0;
}

/* Lock or unlock the stripes of @stripe blocks that [b, b + n) touches. */
static inline void dmb_lock_range(pthread_mutex_t *locks, uint64_t stripe,
				  uint64_t b, uint64_t n, int lock)
{
	uint64_t s;

	for (s = b / stripe; s <= (b + n - 1) / stripe; s++) {
		if (lock)
			pthread_mutex_lock(&locks[s]);
		else
			pthread_mutex_unlock(&locks[s]);
	}
}

/* xorshift64: fast, and the same sequence for the same seed everywhere. */
static inline uint64_t dmb_xs(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

#endif /* DMB_IO_H */
