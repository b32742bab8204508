#!/bin/bash
# Host: bcache-check --upgrade on sparse files. Version 2 caches built by
# the fixture (the kernel's index code): clean and dirty keys, dead keys,
# a journal replayed over the checkpoint; the upgraded cache checks clean
# and holds the same live keys, in a version 3 index that the version 2
# cache did not use. An upgrade stopped before its superblock write leaves
# the version 2 cache as it was; the refusals write nothing.
set -u
LIB_NAME=tools-check-upgrade
# shellcheck source=tests/host/lib/tools.sh
. "$(dirname "$0")/lib/tools.sh"

# same DESC FILE1 FILE2: identical files
same() {
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		bad "$1: $2 and $3 differ"
		diff "$2" "$3" | head -20 | sed 's/^/     | /'
	fi
}

fresh() { # fresh NAME SIZE [make-bcache options]: a formatted sparse file
	local f=$1 size=$2
	shift 2
	rm -f "$f"
	if ! truncate -s "$size" "$f" || ! make-bcache -q "$@" "$f"; then
		bad "make-bcache $f"
		exit 1
	fi
}

sbf() { # sbf FILE FIELD: a bcache-super-show field
	bcache-super-show "$1" | awk -F'\t' -v f="$2" '$1 == f { print $2 }'
}

# live FILE: the live keys of its index, sorted: slot/epoch start end
# bucket+offset gen flags
live() {
	bcache-dump --btree "$1" | awk '$1 == "key" && $NF == "live" { print $2, $3, $4, $5, $6, $7 }' |
		sort
}

# A version 2 cache of 64 MiB (bucket 0 metadata, 1-4 the journal, data
# from bucket 5 up, the fixture's index nodes from 127 down): 200 keys of
# 8 sectors, 50 dirty, written in two flushes, bucket 5's gen bumped (its
# 128 keys dead); then journal entries (dirty keys, a key over a checkpoint
# key, a hole) replayed over it, and the cache not shut down cleanly.
v2cache() {
	fresh "$1" 64M --format-version 2
	fixture index "$1" keys=200 dirty=150 flushes=2 stale=1 >/dev/null &&
		fixture journal "$1" "r:4000+20@30,dirty" "d:1208+8@40,dirty,h:1300+8" \
			"r:5000+10@31" >/dev/null &&
		fixture sb "$1" dirty || bad "fixture $1"
}

# --- usage ------------------------------------------------------------
fresh u 64M --format-version 2
run 2 "--dry-run alone" bcache-check --dry-run u
has "... says so" "--dry-run only goes with --upgrade"
run 2 "--upgrade with --repair" bcache-check --upgrade --repair u
run 2 "--upgrade with --data" bcache-check --upgrade --data u
run 2 "--upgrade of two devices" bcache-check --upgrade u u
has "... says so" "--upgrade takes one device"
run 0 "--help names --upgrade" bcache-check --help
has "... and --dry-run" "--dry-run"
run 3 "--upgrade of a missing device" bcache-check --upgrade nonexistent

# --- a version 2 cache with dirty data and a journal ------------------
v2cache c
run 0 "the version 2 cache checks clean" bcache-check c
has "... version 2" "^superblock: ok: version 2"
has "... with journal keys to replay" "^journal: 3 entries"
has "... and dead keys" "^index: .* [1-9][0-9]* dead keys"
has "... and dirty data" "^dirty: slot 0 .*: [1-9][0-9]* sectors"
dirty2=$(sed -n 's/^dirty: \([0-9]*\) sectors.*in total.*/\1/p' out)
live c >live.before
# its index, but the first line (the file's name)
bcache-dump --btree c | tail -n +2 >btree.before
eq "the fixture's cache has live keys" 1 "$([ -s live.before ] && echo 1)"
cp --sparse=always c c.orig
cp --sparse=always c stop
cp --sparse=always c again

run 0 "--upgrade --dry-run" bcache-check --upgrade --dry-run c
has "... says what it would write" "^upgrade: would write a version 3 index of 1 level, 1 node, into free buckets"
has "... what it copies" "^upgrade: the index as the next attach builds it: [0-9]+ live keys .* checkpoint \+ 32 journal keys replayed"
has "... and that it wrote nothing" "^upgrade: --dry-run: nothing was written$"
same "... nothing changed" c c.orig

run 0 "--upgrade" bcache-check --upgrade c
has "... the check first" "^c: consistent$"
has "... then the index" "^upgrade: wrote a version 3 index of 1 level, 1 node"
has "... the superblock: the journal empty past the ring's entries" \
	"^upgrade: wrote the bucket array \(copy 1\) and the superblock: version 3, member 0 of a set of one, the journal empty from ring sector 24 \(seq 4\)"
has "... done" "^c: upgraded to format version 3$"
eq "super-show: version 3" 3 "$(sbf c sb.version)"
eq "super-show: member 0" 0 "$(sbf c sb.dev_idx)"
eq "super-show: member 0 is this device, active" "$(sbf c dev.uuid) active" \
	"$(sbf c member.0.uuid) $(sbf c member.0.state)"
eq "super-show: the set's uuid kept" "$(sbf c.orig cset.uuid)" "$(sbf c cset.uuid)"
eq "super-show: the clean flag as it was (not shut down cleanly)" "$(sbf c.orig sb.flags)" "$(sbf c sb.flags)"
eq "super-show: the journal starts past its entries" "4 24" "$(sbf c sb.journal_seq) $(sbf c sb.journal_pos)"
eq "super-show: the other bucket array copy" 1 "$(sbf c prio.current)"
eq "super-show: the UUID table as it was" "$(sbf c.orig uuid.current) $(sbf c.orig uuid.csum)" \
	"$(sbf c uuid.current) $(sbf c uuid.csum)"
eq "super-show: one write on" "$(($(sbf c.orig sb.seq) + 1))" "$(sbf c sb.seq)"
run 0 "the upgraded cache checks clean" bcache-check -v c
has "... version 3" "^superblock: ok: version 3"
has "... the journal empty" "^journal: empty: 4 buckets from bucket 1, nothing to replay at ring sector 24 \(seq 4\)"
has "... the index" "^index: 1 level, 1 node, [0-9]+ live keys .*, 0 dead keys$"
has "... the same dirty data" "^dirty: $dirty2 sectors .* in total"
hasnt "... no note of reserved bytes" "reserved bytes"
live c >live.after
same "bcache-dump: the same live keys (extents, pointers, gens, dirty flags)" live.before live.after
run 0 "bcache-dump of the upgraded cache" bcache-dump c
hasnt "... no journal entry" "^jset "
has "... one index node" "^state btree 1$"
run 3 "--upgrade again: refused" bcache-check --upgrade c
has "... already version 3" "^upgrade: refused: c is already format version 3: nothing to upgrade, nothing was written$"
cp --sparse=always c c.v3
run 3 "--upgrade --dry-run of version 3: refused" bcache-check --upgrade --dry-run c
same "... nothing changed" c c.v3

# The node's sets say 48-byte keys (bch_bset_disk key_bytes, at byte 24).
root=$(bcache-super-show c | sed -n 's/^btree\.root	bucket \([0-9]*\) .*/\1/p')
kb=$(od -An -tu2 -j $((root * 512 * 1024 + 24)) -N2 c | tr -d ' ')
eq "the root's set header: key_bytes 48" 48 "$kb"

# --- interrupted before the superblock write ---------------------------
# fixture upgrade ... stop: the index and the bucket array copy written,
# not the superblock. What it wrote: the new index's buckets (free in the
# version 2 cache) and the bucket array copy that is not current.
fixture upgrade stop stop >up.out || bad "fixture upgrade stop"
nodes=$(sed -n 's/^upgrade nodes [0-9]* buckets //p' up.out)
copy=$(sed -n 's/^copy //p' up.out)
eq "the stopped upgrade wrote one node" 1 "$(echo "$nodes" | wc -w)"
run 0 "a stopped upgrade: the version 2 cache checks clean" bcache-check stop
has "... still version 2" "^superblock: ok: version 2"
has "... the journal still to replay" "^journal: 3 entries"
has "... a note: the previous bucket array copy was overwritten" \
	"^note: bucket array copy $copy \(previous\): checksum mismatch"
bcache-dump --btree stop | tail -n +2 >btree.stop
same "... bcache-dump --btree: the same" btree.before btree.stop
# the bytes that changed: sectors of the new node's bucket or of the
# other bucket array copy, nothing else
poff=$(bcache-super-show stop | sed -n 's/^prio\.offset	//p' | awk -v c="$copy" '{ print $(c + 1) }')
psec=$(sbf stop prio.sectors)
cmp -l c.orig stop | awk '{ print int(($1 - 1) / 512) }' | uniq >changed
outside=$(awk -v p="$poff" -v n="$psec" -v nodes="$nodes" '
	BEGIN { k = split(nodes, b, " "); for (i = 1; i <= k; i++) ok[b[i]] = 1 }
	!(($1 >= p && $1 < p + n) || (int($1 / 1024) in ok)) { bad++ }
	END { print bad + 0 }' changed)
eq "... every byte written is in the new node's bucket or the other bucket array copy" 0 "$outside"
eq "... and some were" 1 "$([ -s changed ] && echo 1)"
# the new node's bucket: neither the journal, nor a node or live data of the index
used=$(awk '$1 == "node" { print $3 } $1 == "key" && $NF == "live" { split($5, a, "+"); print a[1] }' \
	btree.before | sort -nu)
for b in $nodes; do
	if [ "$b" -le 4 ] || echo "$used" | grep -qx "$b"; then
		bad "the new node's bucket $b is used by the version 2 cache"
	else
		ok "the new node's bucket $b was free in the version 2 cache"
	fi
done
run 0 "the upgrade run again after the stopped one" bcache-check --upgrade stop
has "... done" "^stop: upgraded to format version 3$"
live stop >live.stop
same "... the same live keys" live.before live.stop
run 0 "... checks clean" bcache-check stop

# A copy upgraded by the library, run whole: the same as bcache-check's.
fixture upgrade again >/dev/null || bad "fixture upgrade again"
run 0 "fixture upgrade (whole): checks clean" bcache-check again
has "... version 3" "^superblock: ok: version 3"
live again >live.again
same "... the same live keys" live.before live.again

# --- a clean cache, and one with no index --------------------------------
fresh e 64M --format-version 2
run 0 "an empty version 2 cache: upgraded" bcache-check --upgrade e
has "... no index to write" "^upgrade: no live key: no index to write"
run 0 "... checks clean" bcache-check e
has "... version 3, no index" "^index: none"
eq "... super-show: version 3" 3 "$(sbf e sb.version)"

fresh k 64M --format-version 2
fixture index k keys=300 dirty=20 >/dev/null || bad "fixture index k"
live k >live.k
run 0 "a cleanly closed cache with dirty data: upgraded" bcache-check --upgrade k
eq "... the clean flag kept" clean "$(sbf k sb.flags)"
eq "... the journal starts where it did" "1 0" "$(sbf k sb.journal_seq) $(sbf k sb.journal_pos)"
run 0 "... checks clean" bcache-check k
has "... 20 keys dirty" "^dirty: 160 sectors"
live k >live.k2
same "... the same live keys" live.k live.k2

# Two levels: more leaves of version 3 keys than of version 2 ones.
fresh big 512M --format-version 2
fixture index big keys=40000 dirty=7000 flushes=3 >/dev/null &&
	fixture journal big "r:400000+30@900,dirty" "r:8+8@901" >/dev/null || bad "fixture big"
live big >live.big
run 0 "a two-level index: upgraded" bcache-check --upgrade big
has "... into a two-level version 3 index" "^upgrade: wrote a version 3 index of 2 levels"
run 0 "... checks clean" bcache-check big
has "... two levels, no dead key" "^index: 2 levels, [0-9]+ nodes, 40030 live keys .*, 0 dead keys$"
live big >live.big2
same "... the same live keys" live.big live.big2

# --- refusals: nothing written ---------------------------------------------
# An index the check does not trust: a key across its bucket's end.
fresh x 64M --format-version 2
fixture index x keys=64 cross >/dev/null || bad "fixture index x"
cp --sparse=always x x.orig
run 3 "a corrupt index: refused" bcache-check --upgrade x
has "... the check's error" "^error: index: cannot be loaded"
has "... refused, saying why" "^upgrade: refused: the index cannot be trusted \(see above\): nothing was written$"
same "... nothing changed" x x.orig

# A journal damaged in the middle (a torn entry, a good one after it):
# the kernel would drop the index.
fresh jd 64M --format-version 2
fixture index jd keys=64 >/dev/null &&
	fixture journal jd 'd:0+8@20,dirty' 'd:8+8@20+8,torn' 'd:16+8@20+16,dirty' >/dev/null &&
	fixture sb jd dirty || bad "fixture jd"
cp --sparse=always jd jd.orig
run 3 "a damaged journal: refused" bcache-check --upgrade jd
has "... refused" "^upgrade: refused: the index cannot be trusted"
same "... nothing changed" jd jd.orig

# A bad current bucket array copy.
fresh p 64M --format-version 2
fixture index p keys=64 >/dev/null || bad "fixture index p"
fixture flip p $((16 * 512 + 20)) || bad "fixture flip p"
cp --sparse=always p p.orig
run 3 "a bad bucket array: refused" bcache-check --upgrade p
has "... refused" "^upgrade: refused: the bucket array cannot be trusted"
same "... nothing changed" p p.orig

# Not enough free buckets: 15232 keys fill buckets 5 to 123 (one node in
# 127): 124 to 126 are free, and the version 3 index needs 4.
fresh f 64M --format-version 2
fixture index f keys=15232 >/dev/null || bad "fixture index f"
cp --sparse=always f f.orig
run 3 "not enough free buckets: refused" bcache-check --upgrade f
has "... saying how many it needs" "^upgrade: refused: the version 3 index needs 4 free buckets \(3 nodes, and 1 more while it is built\), and only 3 hold no data, no index node and no journal: nothing was written$"
same "... nothing changed" f f.orig
run 3 "... --dry-run says the same" bcache-check --upgrade --dry-run f
has "... refused" "^upgrade: refused: the version 3 index needs 4"

# Version 3, and a member of a set.
fresh v3 64M
run 3 "a version 3 cache: refused" bcache-check --upgrade v3
has "... already version 3" "already format version 3"
rm -f m0 m1
truncate -s 64M m0 m1
make-bcache -q m0 m1 || bad "make-bcache m0 m1"
run 3 "a member of a set: refused" bcache-check --upgrade m0

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
