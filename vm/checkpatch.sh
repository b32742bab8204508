#!/bin/bash
# Run the kernel's checkpatch.pl (from Debian's linux-source) over the
# module and the tools. Extracts only scripts/ from the source tarball.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
src=$BUILD/src/linux-source-6.1
if [ ! -x "$src/scripts/checkpatch.pl" ]; then
	mkdir -p "$BUILD/src"
	tar -C "$BUILD/src" -xJf /usr/src/linux-source-6.1.tar.xz \
		linux-source-6.1/scripts linux-source-6.1/include/linux/kernel.h
fi
files=$(git ls-files 'dm-bcache/*.[ch]' 'bcache-tools/*.[ch]' 'bcache-tools/**/*.[ch]' 2>/dev/null || true)
[ -n "$files" ] || files=$(ls dm-bcache/*.[ch] bcache-tools/*.[ch])
# shellcheck disable=SC2086
# Ignored besides: LONG_LINE_STRING (user-visible strings are never split,
# for grep: coding-style.rst), PREFER_DEFINED_ATTRIBUTE_MACRO (userspace has
# no __packed or __printf: the lines flagged are the ones defining them).
"$src/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES,LINUX_VERSION_CODE \
	--ignore LONG_LINE_STRING,PREFER_DEFINED_ATTRIBUTE_MACRO \
	-f $files
