// SPDX-License-Identifier: GPL-2.0
/* Error reporting and size parsing/printing for the dm-bcache tools. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

/*
 * Progress of long passes (the index of a big cache) on stderr. It goes
 * to a copy of fd 2 taken at set-up: loading the index captures fd 2 for
 * btree.c's messages. On a terminal a line overwrites the last; else
 * (--progress into a file) each is a line of its own.
 */
static FILE *bch_progress_out;
static bool bch_progress_tty;
static struct timespec bch_progress_last;

void bch_progress_setup(bool force)
{
	int fd;

	if (bch_progress_out || (!force && !isatty(STDERR_FILENO)))
		return;
	fd = dup(STDERR_FILENO);
	if (fd < 0)
		return;
	bch_progress_out = fdopen(fd, "w");
	if (!bch_progress_out) {
		close(fd);
		return;
	}
	bch_progress_tty = isatty(fd);
}

/* At most twice a second, but always when @last (which ends the line). */
void bch_progress(bool last, const char *fmt, ...)
{
	struct timespec now;
	va_list ap;

	if (!bch_progress_out)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!last && bch_progress_last.tv_sec &&
	    (now.tv_sec - bch_progress_last.tv_sec) * 1000000000L +
	    now.tv_nsec - bch_progress_last.tv_nsec < 500000000L)
		return;
	bch_progress_last = now;
	if (bch_progress_tty)
		fputs("\r\033[K", bch_progress_out);
	va_start(ap, fmt);
	vfprintf(bch_progress_out, fmt, ap);
	va_end(ap);
	if (last || !bch_progress_tty)
		fputc('\n', bch_progress_out);
	fflush(bch_progress_out);
	if (last)
		bch_progress_last.tv_sec = 0;
}
