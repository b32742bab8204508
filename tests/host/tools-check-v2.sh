#!/bin/bash
# tools-check.sh on caches of on-disk format version 2: the tools read and
# repair both versions.
FORMAT_VERSION=2 . "$(dirname "$0")/tools-check.sh"
