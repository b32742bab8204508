#!/bin/bash
# The stale-read hunter must notice stale data: with every 50th write
# dropped (-X) it has to fail; without, on a plain file, it has to pass.
set -u
bin=${BUILD:-build}/tools/dmb-stress
f=$(mktemp)
trap 'rm -f "$f"' EXIT
truncate -s 16M "$f"
pass=0 fail=0
if "$bin" -d "$f" -s 16 -n 2000 -S 7 >/dev/null; then
	pass=$((pass + 1)); echo "ok   dmb-stress passes on a plain file"
else
	fail=$((fail + 1)); echo "FAIL dmb-stress passes on a plain file"
fi
if "$bin" -d "$f" -s 16 -n 2000 -S 7 -X 50 >/dev/null 2>&1; then
	fail=$((fail + 1)); echo "FAIL dmb-stress detects dropped writes"
else
	pass=$((pass + 1)); echo "ok   dmb-stress detects dropped writes"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
