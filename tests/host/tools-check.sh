#!/bin/bash
# Host: bcache-check, bcache-dump and probe-bcache on sparse files, with
# indexes built by the kernel's btree code (bcache-tools/tests/fixture).
set -u
T=${DMB_TOP:?}/bcache-tools
# serialised with the other suites of ours that build here (tools-install)
flock /tmp/dm-bcache-tools-build.lock make -s -C "$T" all tests/fixture || exit 1
PATH=$T:$T/tests:$PATH
dir=$(mktemp -d /tmp/tools-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
npass=0 nfail=0

ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

# run RC DESC CMD...: CMD must exit RC; its output is kept in ./out
run() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >out 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "$desc (exit $rc)"
	else
		bad "$desc: exit $rc, expected $want: $*"
		sed 's/^/     | /' out
	fi
}

# has DESC PATTERN: the last run's output matches the extended regexp
has() {
	if grep -Eq -- "$2" out; then
		ok "$1"
	else
		bad "$1: no /$2/ in the output"
		sed 's/^/     | /' out
	fi
}

hasnt() {
	if grep -Eq -- "$2" out; then
		bad "$1: /$2/ in the output"
		sed 's/^/     | /' out
	else
		ok "$1"
	fi
}

count() { # count PATTERN: lines of ./out matching
	grep -Ec -- "$1" out
}

eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}

BUCKET=$((512 * 1024))		# make-bcache's default bucket, bytes

fresh() { # fresh NAME [make-bcache options]: a formatted 64 MiB sparse file
	local f=$1
	shift
	rm -f "$f"
	if ! truncate -s 64M "$f" || ! make-bcache -q "$@" "$f"; then
		bad "make-bcache $f"
		exit 1
	fi
}

# --- usage and unusable devices ----------------------------------------
fresh c
run 2 "no device: usage error" bcache-check
has "usage printed" "^Usage: bcache-check"
run 2 "unknown option" bcache-check --frobnicate c
run 2 "two devices" bcache-check c c
run 0 "--help" bcache-check --help
has "--help names the exit codes" "3 unreadable"
run 3 "missing device" bcache-check nonexistent
has "missing: clean error" "^bcache-check: cannot open nonexistent: No such file"
truncate -s 64M zero
run 3 "unformatted device" bcache-check zero
has "unformatted: bad magic" "^bcache-check: zero: no dm-bcache superblock \(bad magic\)$"
truncate -s 100 tiny
run 3 "100-byte device" bcache-check tiny
has "tiny: too small" "device is only 100 bytes"
cp --sparse=always c shrunk && truncate -s 32M shrunk
run 3 "device shrunk after formatting" bcache-check shrunk
has "shrunk: says so" "device smaller than the superblock says"
run 2 "dump: usage" bcache-dump
run 3 "dump: missing device" bcache-dump nonexistent
run 3 "dump: unformatted device" bcache-dump zero
run 0 "dump --help" bcache-dump --help

# --- a freshly formatted cache -------------------------------------------
run 0 "fresh cache is consistent" bcache-check c
has "fresh: says consistent" "^c: consistent$"
has "fresh: no index" "^index: none"
run 0 "fresh, quiet" bcache-check -q c
eq "quiet prints nothing" "" "$(cat out)"
run 0 "fresh, verbose" bcache-check -v c
has "verbose: the previous bucket array copy" "^bucket array: copy 1 \(previous\) ok$"
has "verbose: the previous UUID table copy" "^UUID table: copy 1 \(previous\) ok$"
run 0 "dump of a fresh cache" bcache-dump c
has "dump: no index" "^# index: none"
has "dump: all data buckets free" "^state free 127$"
has "dump: gen histogram" "^gen 0 128$"

# --- superblock ------------------------------------------------------------
cp --sparse=always c sb && fixture flip sb $((4096 + 100))
run 3 "corrupted superblock" bcache-check sb
has "corrupted superblock: checksum mismatch" "superblock checksum mismatch"
run 3 "corrupted superblock, --repair too" bcache-check -r sb

cp --sparse=always c dirty && fixture sb dirty dirty
run 0 "dirty superblock alone is no inconsistency" bcache-check dirty
has "dirty: the documented note" "^note: not shut down cleanly: the kernel will invalidate the cached data at the next attach$"

# --- bucket array ----------------------------------------------------------
cp --sparse=always c prio && fixture flip prio $((16 * 512 + 10))
run 1 "current bucket array copy corrupted" bcache-check prio
has "prio: checksum mismatch of copy 0" "^error: bucket array copy 0 \(current\): checksum mismatch"
has "prio: the kernel's fallback explained" "^note: bucket array copy 1 \(previous\) is good: the kernel falls back to it"
run 1 "--repair of the bucket array: exit 1 (repaired)" bcache-check -r prio
has "prio: switched copies" "^repair: switched to bucket array copy 1$"
run 0 "after the repair: consistent" bcache-check prio
run 0 "super-show agrees" bcache-super-show prio
has "super-show: copy 1 current" "^prio.current	1$"

cp --sparse=always c prio2 && fixture flip prio2 $((16 * 512 + 10)) &&
	fixture flip prio2 $(((16 + 8) * 512 + 11))
run 1 "both bucket array copies corrupted" bcache-check prio2
run 1 "--repair: a fresh array" bcache-check -r prio2
has "prio2: fresh copy written" "wrote a fresh one as copy 1"
run 0 "after the repair: consistent" bcache-check prio2

# --- UUID table ------------------------------------------------------------
A=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa
B=bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb
cp --sparse=always c uuids && fixture slots uuids $A $B
run 0 "two distinct slots" bcache-check uuids
has "two slots counted" "2 of 256 slots in use"
cp --sparse=always c dup && fixture slots dup $A $B $A
run 1 "duplicate origin_uuid" bcache-check dup
has "dup: names both slots" "^error: UUID slots 0 and 2 both hold origin_uuid $A$"
sum=$(md5sum <dup)
run 1 "--repair refuses a bad UUID table" bcache-check -r dup
has "dup: refusal says why" "^repair: refused: the UUID table is damaged"
eq "dup: nothing written" "$sum" "$(md5sum <dup)"
run 0 "dump lists the three slots" bcache-dump --uuids dup
eq "dump: three slot lines" 3 "$(count "^slot [0-9]+ ")"
cp --sparse=always uuids ucsum && fixture uuidcsum ucsum
run 1 "UUID table checksum mismatch, the previous copy good" bcache-check ucsum
has "ucsum: reported" "^error: UUID table copy 0 \(current\): checksum mismatch"
has "ucsum: the kernel's fallback explained" "^note: UUID table copy 1 \(previous\) is good: the kernel falls back to it"
run 1 "dump: bad checksum is exit 1" bcache-dump --uuids ucsum
has "dump: says BAD" "checksum BAD"
run 1 "--repair goes back to the previous copy" bcache-check -r ucsum
has "ucsum: went back" "^repair: went back to the previous UUID table \(copy 1\)$"
run 0 "then consistent" bcache-check ucsum
has "ucsum: the previous copy's (empty) slots" "0 of 256 slots in use"
cp --sparse=always c ucsum2 && fixture uuidcsum ucsum2 both
run 1 "both UUID table copies bad" bcache-check ucsum2
sum=$(md5sum <ucsum2)
run 1 "--repair refuses" bcache-check -r ucsum2
has "ucsum2: refusal says why" "^repair: refused: the UUID table is damaged and no good copy is left"
eq "ucsum2: nothing written" "$sum" "$(md5sum <ucsum2)"

# --- an index ----------------------------------------------------------------
cp --sparse=always c idx && fixture index idx keys=500 >/dev/null
run 0 "index of 500 keys is consistent" bcache-check idx
has "idx: counts" "^index: 1 level, 1 node, 500 live keys \(2.0 MiB in 4 buckets\), 0 dead keys$"
run 0 "dump --btree" bcache-dump --btree idx
eq "dump: 500 live keys" 500 "$(count '^key .* live$')"
has "dump: the first key" "^key 0/1 0 8 1\+0 0 - live$"
has "dump: the root node" "^node 0 127 0 255/16777215:18446744073709551615$"
run 0 "dump --buckets" bcache-dump --buckets idx
has "buckets: one btree bucket" "^state btree 1$"
has "buckets: four data buckets" "^state data 4$"
has "buckets: live sectors" "^live_sectors 4000$"

fresh s8 -b 8k
fixture index s8 keys=3000 flushes=3 stale=2 >/dev/null
run 0 "two-level index with appended sets and dead keys" bcache-check s8
has "s8: two levels, 17 nodes" "^index: 2 levels, 17 nodes, 2996 live keys"
has "s8: dead keys counted by reason" "4 dead keys \(4 stale-gen\)$"
run 0 "dump of the two-level index" bcache-dump --btree s8
eq "dump: 17 nodes" 17 "$(count '^node ')"
eq "dump: 4 stale keys" 4 "$(count ' dead:stale-gen$')"
eq "dump: one level-1 node" 1 "$(count '^node 1 ')"

# a byte of the root node's first set
cp --sparse=always idx root && fixture flip root $((127 * BUCKET + 1000))
run 1 "corrupt root node" bcache-check root
has "root: cannot be loaded" "^error: index: cannot be loaded: bad node at level 0 in bucket 127"
run 1 "dump: corrupt root is exit 1" bcache-dump --btree root
run 1 "--repair of the index: exit 1 (repaired)" bcache-check -r root
has "root: index dropped, slot invalidated" "^repair: dropped the index and invalidated the data of 1 UUID slot"
run 0 "after the repair: consistent" bcache-check root
has "after the repair: no index" "^index: none"
run 0 "super-show after the repair" bcache-super-show -u root
has "root: epoch bumped" "^slot.0.epoch	2$"
has "root: no root" "^btree.root	none$"
has "root: new UUID copy current" "^uuid.current	1$"

# a byte of the second set: the kernel would take it for torn
cp --sparse=always c set1 && fixture index set1 keys=100 flushes=2 >/dev/null &&
	fixture flip set1 $((127 * BUCKET + 4096 + 200))
run 1 "corrupt second set" bcache-check set1
has "set1: named" "^error: index node in bucket 127 \(level 0\): set 1 is corrupt"

for bad in alias outside cross future; do
	cp --sparse=always c "$bad" && fixture index "$bad" keys=100 "$bad" >/dev/null
done
run 1 "live key inside the root node's bucket" bcache-check alias
has "alias: named" "^error: bucket 127 holds an index node and 8 sectors of live data$"
run 1 "key pointing at the metadata" bcache-check outside
has "outside: named" "points at cache sector 8, outside the data buckets$"
run 1 "key crossing its bucket's end" bcache-check cross
has "cross: named" "crosses the end of bucket 2$"
run 1 "key from a future epoch" bcache-check future
has "future: named" "is newer than its UUID slot \(epoch 1\)"
run 1 "--repair drops the bad index" bcache-check -r alias
run 0 "then consistent" bcache-check alias

# a bad bucket array under an index: the index goes too
cp --sparse=always idx pidx && fixture flip pidx $((16 * 512 + 10))
run 1 "bad bucket array under an index" bcache-check pidx
has "pidx: index not checked" "^index: not checked: the bucket array it depends on cannot be trusted$"
run 1 "--repair" bcache-check -r pidx
has "pidx: switched" "^repair: switched to bucket array copy 1$"
has "pidx: index dropped" "^repair: dropped the index"
run 0 "then consistent" bcache-check pidx

# a bad UUID table under an index: back to the previous table, index dropped
cp --sparse=always idx uidx && fixture uuidcsum uidx
run 1 "bad UUID table under an index" bcache-check uidx
has "uidx: index not checked" "^index: not checked: the UUID table it depends on cannot be trusted$"
run 1 "--repair" bcache-check -r uidx
has "uidx: index dropped" "^repair: dropped the index"
run 0 "then consistent" bcache-check uidx
run 0 "super-show agrees" bcache-super-show uidx
has "uidx: no root" "^btree.root	none$"

# a root that is not bucket aligned: an index problem, not an unusable device
cp --sparse=always idx ralign && fixture sb ralign rootptr=$((127 * 1024 + 8))
run 1 "misaligned root" bcache-check ralign
has "ralign: named" "btree root at sector .* is not bucket aligned"
run 1 "--repair" bcache-check -r ralign
run 0 "then consistent" bcache-check ralign

# --- seeded damage: 1-4 random bytes in the superblock, the metadata copies or
# the node buckets of a two-level index. bcache-check never crashes, exits 0, 1
# or 3, and after --repair the device is consistent unless the repair refused.
fresh fz -b 8k
fixture index fz keys=1500 flushes=3 stale=3 >/dev/null
meta_end=$(($(bcache-super-show fz | sed -n 's/^first_bucket	//p') * 8192))
RANDOM=42
codes=() crashed=0 unrepaired=0
for i in $(seq 1 60); do
	cp --sparse=always fz f
	n=$((RANDOM % 4 + 1))	# here: a subshell would reseed RANDOM
	for _ in $(seq "$n"); do
		case $((RANDOM % 4)) in
		0) off=$((4096 + RANDOM % 4096)) ;;
		1) off=$((8192 + (RANDOM * 32768 + RANDOM) % (meta_end - 8192))) ;;
		*) off=$(((8191 - RANDOM % 16) * 8192 + RANDOM % 8192)) ;;
		esac
		fixture flip f "$off"
	done
	bcache-check f >out 2>&1
	rc=$?
	codes+=("$rc")
	bcache-dump f >/dev/null 2>&1
	drc=$?
	if [ "$rc" -gt 3 ] || [ "$drc" -gt 3 ]; then
		crashed=$((crashed + 1))
		bad "damage $i: bcache-check exit $rc, bcache-dump exit $drc"
		continue
	fi
	[ "$rc" -eq 1 ] || continue
	bcache-check -r f >out 2>&1
	grep -q '^repair: refused' out && continue
	bcache-check f >out 2>&1 || {
		unrepaired=$((unrepaired + 1))
		bad "damage $i: still inconsistent after --repair"
		sed 's/^/     | /' out
	}
done
eq "seeded damage: no crash" 0 "$crashed"
eq "seeded damage: every repair leaves a consistent device" 0 "$unrepaired"
echo "note: seeded damage exit codes: $(printf '%s\n' "${codes[@]}" | sort | uniq -c | tr -s ' \n' ' ')"

# --- probe-bcache ------------------------------------------------------------
fresh lab -l "my cache 1" --cset-uuid 0123abcd-4567-89ab-cdef-0123456789ab
dev_uuid=$(bcache-super-show lab | sed -n 's/^dev.uuid	//p')
run 0 "probe --export" probe-bcache --export lab
has "probe: ID_FS_TYPE" "^ID_FS_TYPE=dm_bcache$"
has "probe: ID_FS_UUID is the device uuid" "^ID_FS_UUID=$dev_uuid$"
has "probe: ID_FS_UUID_ENC" "^ID_FS_UUID_ENC=$dev_uuid$"
has "probe: set uuid" "^DM_BCACHE_SET_UUID=0123abcd-4567-89ab-cdef-0123456789ab$"
has "probe: label made safe" "^ID_FS_LABEL=my_cache_1$"
has "probe: label encoded" '^ID_FS_LABEL_ENC=my\\x20cache\\x201$'
eq "probe: only KEY=VALUE lines" 0 "$(grep -cv '^[A-Z_]*=[^ ]*$' out)"
run 1 "probe --export of an unformatted device" probe-bcache --export zero
eq "probe: prints nothing for udev" "" "$(cat out)"
run 1 "probe --export of a corrupted superblock" probe-bcache --export sb
eq "probe: silent" "" "$(cat out)"
run 1 "probe of a missing device" probe-bcache nonexistent
has "probe: clean error" "cannot open nonexistent"
run 0 "probe, human form" probe-bcache lab
has "probe: one line" "^lab: dm-bcache cache device $dev_uuid, cache set "
run 2 "probe: usage" probe-bcache

# --- the udev rule: syntax only (no udev here) -----------------------------
rules=$DMB_TOP/udev/69-dm-bcache.rules
bad_lines=$(grep -Ev '^[[:space:]]*(#|$)' "$rules" |
	grep -Evx '([A-Z_]+(\{[A-Za-z_]+\})?(==|!=|=|\+=|:=)"[^"]*")(, *[A-Z_]+(\{[A-Za-z_]+\})?(==|!=|=|\+=|:=)"[^"]*")*')
eq "udev rule: every line is KEY op \"value\", ..." "" "$bad_lines"
eq "udev rule: every GOTO has its LABEL" "" "$(comm -23 \
	<(grep -o 'GOTO="[^"]*"' "$rules" | cut -d'"' -f2 | sort -u) \
	<(grep -o 'LABEL="[^"]*"' "$rules" | cut -d'"' -f2 | sort -u))"
# shellcheck disable=SC2016 # udev's $ syntax, literally
if grep -qF 'IMPORT{program}="/usr/sbin/probe-bcache --export $devnode"' "$rules"; then
	ok "udev rule: imports probe-bcache --export"
else
	bad "udev rule: no probe import"
fi
# shellcheck disable=SC2016
if grep -qF 'SYMLINK+="disk/by-dm-bcache/$env{ID_FS_UUID_ENC}"' "$rules"; then
	ok "udev rule: by-dm-bcache link"
else
	bad "udev rule: no by-dm-bcache link"
fi

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
