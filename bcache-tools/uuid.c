// SPDX-License-Identifier: GPL-2.0
/* RFC 4122 version 4 UUIDs from /dev/urandom, without libuuid; UUID slots. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

int bch_uuid_generate(uint8_t uuid[16])
{
	size_t done = 0;
	ssize_t n;
	int fd;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bch_err("cannot open /dev/urandom: %s", strerror(errno));
	while (done < 16) {
		n = read(fd, uuid + done, 16 - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return bch_err("cannot read /dev/urandom: %s",
				       n ? strerror(errno) : "end of file");
		}
		done += n;
	}
	close(fd);

	uuid[6] = (uuid[6] & 0x0f) | 0x40;	/* version 4 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Only the canonical 8-4-4-4-12 form, either case. */
int bch_uuid_parse(const char *str, uint8_t uuid[16])
{
	unsigned int i, b = 0;
	int hi, lo;

	if (strlen(str) != 36)
		goto bad;
	for (i = 0; i < 36; ) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (str[i++] != '-')
				goto bad;
			continue;
		}
		hi = hexval(str[i]);
		lo = hexval(str[i + 1]);
		if (hi < 0 || lo < 0)
			goto bad;
		uuid[b++] = hi << 4 | lo;
		i += 2;
	}
	return 0;
bad:
	return bch_err("invalid UUID '%s' (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
		       str);
}

void bch_uuid_format(const uint8_t u[16], char *buf)
{
	snprintf(buf, BCH_UUID_STR_LEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

bool bch_uuid_is_nil(const uint8_t uuid[16])
{
	static const uint8_t nil[16];

	return !memcmp(uuid, nil, 16);
}

void bch_uuid_print_flags(uint32_t flags)
{
	static const struct { uint32_t bit; const char *name; } bits[] = {
		{ BCH_UUID_VALID,	"valid" },
		{ BCH_UUID_EPHEMERAL,	"ephemeral" },
		{ BCH_UUID_ATTACHED,	"attached" },
		{ BCH_UUID_FINGERPRINT,	"fingerprint" },
		{ BCH_UUID_FP_WRITING,	"fp-writing" },
	};
	const char *sep = "";
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		if (flags & bits[i].bit) {
			printf("%s%s", sep, bits[i].name);
			sep = ",";
			flags &= ~bits[i].bit;
		}
	}
	if (flags)
		printf("%s0x%x", sep, flags);
}

bool bch_slot_bump_epoch(struct bch_uuid_disk *u)
{
	uint32_t epoch = le32toh(u->epoch);

	/* the last epoch is never used: a free slot's inode matches no key */
	if (epoch + 1 >= BCH_INODE_EPOCH_MAX)
		return false;
	u->epoch = htole32(epoch + 1);
	u->flags &= ~htole32(BCH_UUID_FINGERPRINT);
	u->dirty = 0;		/* the new epoch has none */
	return true;
}

void bch_slot_free(struct bch_uuid_disk *u)
{
	uint32_t epoch = le32toh(u->epoch);

	memset(u, 0, sizeof(*u));
	u->epoch = htole32(epoch);
}
