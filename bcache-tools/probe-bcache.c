// SPDX-License-Identifier: GPL-2.0
/*
 * probe-bcache: is this a dm-bcache cache device? For udev
 * (69-dm-bcache.rules imports the --export output) and for scripts.
 *
 * Only the superblock is read (4 KiB at 4 KiB) and fully validated; a
 * device without a valid one prints nothing and exits 1.
 */
#include <endian.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "lib.h"

#define PROG "probe-bcache"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-e] [-q] <device>\n"
		"Tell whether <device> holds a valid dm-bcache superblock.\n\n"
		"  -e, --export  print udev properties (KEY=VALUE lines)\n"
		"  -q, --quiet   print nothing, only the exit status\n"
		"  -h, --help    show this help\n\n"
		"Exit status: 0 a dm-bcache cache device, 1 not one (or unreadable),\n"
		"2 bad arguments.\n");
}

/* As udev's own encoding: anything but [0-9A-Za-z#+-.:=@_] as \xNN. */
static void encode(const uint8_t *s, size_t len, char *out, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < len && s[i] && n + 5 < size; i++) {
		if ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') || strchr("#+-.:=@_", s[i]))
			out[n++] = s[i];
		else
			n += snprintf(out + n, size - n, "\\x%02x", s[i]);
	}
	out[n] = '\0';
}

/* ID_FS_LABEL: the label with anything unsafe replaced by '_'. */
static void safe(const uint8_t *s, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len && s[i]; i++)
		out[i] = (s[i] > ' ' && s[i] < 0x7f && !strchr("\"'`$\\/", s[i])) ? s[i] : '_';
	out[i] = '\0';
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "export",	no_argument, NULL, 'e' },
		{ "quiet",	no_argument, NULL, 'q' },
		{ "help",	no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char uuid[BCH_UUID_STR_LEN], set[BCH_UUID_STR_LEN];
	char label[sizeof(((struct bch_sb_disk *)0)->label) * 4 + 1];
	bool export = false, quiet = false;
	struct bch_sb_disk sb;
	struct bch_dev dev;
	int c, ret;

	while ((c = getopt_long(argc, argv, "eqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			export = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": %s\n", optind == argc ? "no device given" : "too many arguments");
		usage(stderr);
		return 2;
	}

	if (bch_dev_open(&dev, argv[optind], false)) {
		if (!quiet && !export)
			fprintf(stderr, PROG ": %s\n", bch_strerror());
		return 1;
	}
	ret = bch_sb_load(&dev, &sb);
	bch_dev_close(&dev);
	if (ret) {
		/* udev probes every block device: silence is the normal "no" */
		if (!quiet && !export)
			fprintf(stderr, PROG ": %s: %s\n", argv[optind], bch_strerror());
		return 1;
	}

	bch_uuid_format(sb.uuid, uuid);
	bch_uuid_format(sb.set_uuid, set);
	if (quiet)
		return 0;
	if (!export) {
		printf("%s: dm-bcache cache device %s, cache set %s\n", argv[optind], uuid, set);
		return 0;
	}
	printf("ID_FS_TYPE=dm_bcache\n");
	printf("ID_FS_USAGE=other\n");
	printf("ID_FS_VERSION=%u\n", le32toh(sb.version));
	printf("ID_FS_UUID=%s\n", uuid);
	printf("ID_FS_UUID_ENC=%s\n", uuid);
	if (sb.label[0]) {
		safe(sb.label, sizeof(sb.label), label);
		printf("ID_FS_LABEL=%s\n", label);
		encode(sb.label, sizeof(sb.label), label, sizeof(label));
		printf("ID_FS_LABEL_ENC=%s\n", label);
	}
	printf("DM_BCACHE_SET_UUID=%s\n", set);
	return 0;
}
