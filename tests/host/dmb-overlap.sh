#!/bin/bash
# Host: the overlapping stale-read hunter (tests/tools/dmb-overlap.c) is
# quiet on a plain file, notices stale data when every 50th write is
# dropped (-X), lets a read see a sector torn between two writes of its
# block (-Y) and not one torn with another block's data or an older write
# of its own (-Y -y other, -Y -y older).
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
out=$("$bin" -d "$f" -s 32 -T 4 -t 3 -r 2 -S 7 -Y 20)
rc=$?
echo "$out"
torn=$(echo "$out" | sed -n 's/.* \([0-9]*\) sectors torn between writes.*/\1/p')
if [ "$rc" = 0 ] && [ "${torn:-0}" -gt 0 ]; then
	pass=$((pass + 1)); echo "ok   dmb-overlap allows a sector torn between two writes"
else
	fail=$((fail + 1)); echo "FAIL dmb-overlap allows a sector torn between two writes (rc $rc, ${torn:-no} torn)"
fi
# a tear with another block's data, or with the block's own write from
# before the read's snapshot, is a violation (exit 1, not a usage error)
for kind in other older; do
	"$bin" -d "$f" -s 32 -T 4 -t 3 -r 2 -S 7 -Y 20 -y $kind -v 3
	rc=$?
	if [ "$rc" = 1 ]; then
		pass=$((pass + 1)); echo "ok   dmb-overlap detects a sector torn with $kind data"
	else
		fail=$((fail + 1)); echo "FAIL dmb-overlap detects a sector torn with $kind data (rc $rc)"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
