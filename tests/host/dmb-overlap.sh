#!/bin/bash
# Host: the overlapping stale-read hunter (tests/tools/dmb-overlap.c) is
# quiet on a plain file, and notices stale data when every 50th write is
# dropped (-X).
set -u
bin=${BUILD:-build}/tools/dmb-overlap
f=$(mktemp)
trap 'rm -f "$f"' EXIT
truncate -s 32M "$f"
pass=0 fail=0
if "$bin" -d "$f" -o "$f" -F true -s 32 -T 4 -t 3 -r 2 -S 7; then
	pass=$((pass + 1)); echo "ok   dmb-overlap passes on a plain file"
else
	fail=$((fail + 1)); echo "FAIL dmb-overlap passes on a plain file"
fi
if "$bin" -d "$f" -s 32 -T 4 -t 3 -r 2 -S 7 -X 50 -v 3; then
	fail=$((fail + 1)); echo "FAIL dmb-overlap detects dropped writes"
else
	pass=$((pass + 1)); echo "ok   dmb-overlap detects dropped writes"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
