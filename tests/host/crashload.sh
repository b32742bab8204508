#!/bin/bash
# Host: the crash-consistency checker (dmb-crashload) on plain files. It
# must pass on what its workload wrote, and catch a lost acknowledged
# write, a block of foreign data, a device that differs from its origin,
# writes newer than a replay point allows; it must accept a batch left in
# flight, and finish it on the next run.
set -u
bin=${BUILD:-build}/tools/dmb-crashload
t=$(mktemp -d -p "${TMPDIR:-/var/tmp}") # O_DIRECT: not on tmpfs
trap 'rm -rf "$t"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# grep_ok DESC PATTERN: the last output has PATTERN
grep_ok() { if grep -q "$2" "$t/out"; then ok "$1"; else bad "$1: $(cat "$t/out")"; fi; }
# t_rc DESC WANT-EXIT [FIELD=VALUE] -- CMD...
t_rc() {
	local d=$1 want=$2 f='' rc; shift 2
	[ "$1" != -- ] && { f=$1; shift; }
	shift
	"$@" >"$t/out" 2>"$t/err"; rc=$?
	if [ "$rc" != "$want" ]; then
		bad "$d (exit $rc, want $want: $(tail -n 1 "$t/out") $(head -n 2 "$t/err"))"
	elif [ -n "$f" ] && ! grep -q " ${f}\( \|$\)" "$t/out"; then
		bad "$d (want $f: $(tail -n 1 "$t/out"))"
	else
		ok "$d${f:+ ($f)}"
	fi
}
[ -x "$bin" ] || { echo "FAIL $bin is not built (make tools)"; exit 1; }
dev=$t/dev model=$t/model
truncate -s 8M "$dev" "$t/origin"
truncate -s 1M "$model"
blk() { # BLOCK FILE: write the 4 KiB block BLOCK of FILE from stdin
	dd of="$2" bs=4096 seek="$1" count=1 conv=notrunc 2>/dev/null
}

t_rc "init" 0 -- "$bin" init -m "$model" -s 8 -S 5
t_rc "verify a fresh (zero) device" 0 lost=0 -- "$bin" verify -d "$dev" -m "$model"
t_rc "run 40 batches" 0 -- "$bin" run -d "$dev" -m "$model" -n 40 -q
t_rc "verify after the run" 0 lost=0 -- "$bin" verify -d "$dev" -m "$model"
cp "$dev" "$t/origin"
t_rc "verify against an identical origin" 0 stale=0 -- "$bin" verify -d "$dev" -o "$t/origin" -m "$model"
t_rc "an earlier point is refused (newer writes)" 1 -- "$bin" verify -d "$dev" -m "$model" -K 10
t_rc "the point before the last ack: batch 40 in flight, landed" 0 corrupt=0 -- "$bin" verify -d "$dev" -m "$model" -K 39
t_rc "...but not with -x (nothing in flight)" 1 -- "$bin" verify -d "$dev" -m "$model" -K 39 -x
t_rc "pick" 0 -- "$bin" pick -m "$model"
b=$(cat "$t/out")

cp "$dev" "$t/saved"
head -c 4096 /dev/zero | blk "$b" "$dev"
t_rc "a lost write (block $b zeroed)" 1 lost=1 -- "$bin" verify -d "$dev" -m "$model"
cp "$t/saved" "$dev"
head -c 4096 /dev/urandom | blk "$b" "$dev"
t_rc "foreign data in block $b" 1 corrupt=1 -- "$bin" verify -d "$dev" -m "$model"
cp "$t/saved" "$dev"
dd if="$dev" bs=4096 skip=$((b + 1)) count=1 2>/dev/null | blk "$b" "$dev"
t_rc "another block's data in block $b" 1 corrupt=1 -- "$bin" verify -d "$dev" -m "$model"
cp "$t/saved" "$dev"
head -c 4096 /dev/zero | blk "$b" "$t/origin"
t_rc "origin lost a write: stale and lost" 1 stale=1 -- "$bin" verify -d "$dev" -o "$t/origin" -m "$model"
cp "$t/saved" "$t/origin"

# An old copy of the device: every block newer than batch 20 must be lost.
"$bin" run -d "$dev" -m "$model" -n 5 -q >/dev/null
t_rc "an old copy of the device loses writes" 1 -- "$bin" verify -d "$t/saved" -m "$model"
grep_ok "...counted as lost" 'lost=[1-9]' 

# A crash mid-batch: the last batch has an intent but no ack.
n=$("$bin" verify -d "$dev" -m "$model" | sed -n 's/.*batches 1\.\.\([0-9]*\) .*/\1/p')
head -c 4096 /dev/zero | blk $((2 * n + 1)) "$model"
t_rc "an unacknowledged batch is in flight" 0 -- "$bin" verify -d "$dev" -m "$model"
grep_ok "...and not acknowledged" "batches 1..$((n - 1)) acknowledged"
"$bin" run -d "$dev" -m "$model" -n 1 >"$t/out" 2>&1
grep_ok "run finishes the batch left in flight" "ack $n (finished after a crash)"
t_rc "verify after finishing it" 0 lost=0 -- "$bin" verify -d "$dev" -m "$model"
grep_ok "...both acknowledged" "batches 1..$((n + 1)) acknowledged"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
