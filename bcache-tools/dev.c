// SPDX-License-Identifier: GPL-2.0
/* Opening a cache device (block device or regular file) and whole I/O. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "lib.h"

int bch_dev_open(struct bch_dev *dev, const char *path, bool rw)
{
	int flags = (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	struct stat st;
	uint64_t size;
	int lbs;

	memset(dev, 0, sizeof(*dev));
	dev->fd = -1;
	dev->path = path;

	if (stat(path, &st))
		return bch_err("cannot open %s: %s", path, strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return bch_err("%s: not a block device or regular file", path);
	/* Exclusive open fails if the device is mounted or claimed by dm. */
	if (S_ISBLK(st.st_mode) && rw)
		flags |= O_EXCL;

	dev->fd = open(path, flags);
	if (dev->fd < 0) {
		if (errno == EBUSY)
			return bch_err("cannot open %s: device is in use", path);
		return bch_err("cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(dev->fd, &st)) {
		bch_err("cannot stat %s: %s", path, strerror(errno));
		goto fail;
	}

	if (S_ISBLK(st.st_mode)) {
		if (ioctl(dev->fd, BLKGETSIZE64, &size) ||
		    ioctl(dev->fd, BLKSSZGET, &lbs)) {
			bch_err("cannot get the size of %s: %s", path,
				strerror(errno));
			goto fail;
		}
		dev->blk = true;
		dev->size = size;
		dev->lbs = lbs;
		/* Drop cached pages so reads see what the kernel wrote. */
		posix_fadvise(dev->fd, 0, 0, POSIX_FADV_DONTNEED);
	} else if (S_ISREG(st.st_mode)) {
		dev->size = st.st_size;
		dev->lbs = BCH_SECTOR_SIZE;
	} else {
		bch_err("%s: not a block device or regular file", path);
		goto fail;
	}
	return 0;
fail:
	close(dev->fd);
	dev->fd = -1;
	return -1;
}

void bch_dev_close(struct bch_dev *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
}

int bch_pread_all(struct bch_dev *dev, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = pread(dev->fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return bch_err("%s: read at byte %llu failed: %s",
				       dev->path, (unsigned long long)off,
				       strerror(errno));
		if (!n)
			return bch_err("%s: unexpected end of device at byte %llu",
				       dev->path, (unsigned long long)off);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int bch_pwrite_all(struct bch_dev *dev, const void *buf, size_t len,
		   uint64_t off)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = pwrite(dev->fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return bch_err("%s: write at byte %llu failed: %s",
				       dev->path, (unsigned long long)off,
				       n ? strerror(errno) : "no progress");
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int bch_dev_sync(struct bch_dev *dev)
{
	if (fsync(dev->fd))
		return bch_err("%s: fsync failed: %s", dev->path,
			       strerror(errno));
	return 0;
}

bool bch_dev_in_use(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return false;
	/* An exclusive open fails while a dm table or a mount holds it. */
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EBUSY;
}
