// SPDX-License-Identifier: GPL-2.0
/* Error reporting and size parsing/printing for the dm-bcache tools. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib.h"

static char bch_errbuf[512];

int bch_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(bch_errbuf, sizeof(bch_errbuf), fmt, ap);
	va_end(ap);
	return -1;
}

const char *bch_strerror(void)
{
	return bch_errbuf;
}

bool bch_is_power_of_2(uint64_t n)
{
	return n && !(n & (n - 1));
}

/* A decimal number of bytes with an optional binary suffix: 4k, 1M, 2G. */
int bch_parse_size(const char *str, uint64_t *bytes)
{
	unsigned int shift = 0;
	unsigned long long n;
	char *end;

	/* strtoull would accept a sign, spaces and hex */
	if (!isdigit((unsigned char)str[0]))
		goto bad;
	errno = 0;
	n = strtoull(str, &end, 10);
	if (errno)
		goto bad;

	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		goto bad;
	}
	if (shift && *++end)
		goto bad;
	if (n > (UINT64_MAX >> shift))
		goto bad;

	*bytes = (uint64_t)n << shift;
	return 0;
bad:
	return bch_err("invalid size '%s' (expected e.g. 4096, 4k, 512k, 1M)",
		       str);
}

/* Exact when the size is a whole number of units, else one decimal. */
void bch_format_size(uint64_t bytes, char *buf)
{
	static const char * const units[] = { "KiB", "MiB", "GiB", "TiB",
					      "PiB" };
	unsigned int i = 0;
	double v;

	if (bytes < 1024) {
		snprintf(buf, BCH_SIZE_STR_LEN, "%llu B",
			 (unsigned long long)bytes);
		return;
	}
	v = bytes / 1024.0;
	while (v >= 1024 && i + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		i++;
	}
	if (v == (uint64_t)v)
		snprintf(buf, BCH_SIZE_STR_LEN, "%llu %s",
			 (unsigned long long)v, units[i]);
	else
		snprintf(buf, BCH_SIZE_STR_LEN, "%.1f %s", v, units[i]);
}
