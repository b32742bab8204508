#!/bin/bash
# Host: bcache-check, bcache-dump and probe-bcache on sparse files, with
# indexes built by the kernel's btree code (bcache-tools/tests/fixture).
set -u
LIB_NAME=tools-check
# shellcheck source=tests/host/lib/tools.sh
. "$(dirname "$0")/lib/tools.sh"

BUCKET=$((512 * 1024))		# make-bcache's default bucket, bytes
# A 64 MiB cache of those: bucket 0 metadata, 1-4 the journal (ring sectors
# 0-4095), the fixture's data from bucket 5 up, its index nodes from 127 down.

# The on-disk format the caches get (tools-check-v2.sh: 2). Version 3's
# 48-byte keys take more nodes than version 2's 32-byte ones.
V=${FORMAT_VERSION:-3}
if [ "$V" = 2 ]; then
	S8_NODES=17 S8J_NODES=4 S8K_NODES=18
	CSUM_WHY="has unknown flags"
else
	S8_NODES=25 S8J_NODES=6 S8K_NODES=26
	CSUM_WHY="has a checksummed range that does not hold it"
fi

fresh() { # fresh NAME [make-bcache options]: a formatted 64 MiB sparse file
	local f=$1
	shift
	rm -f "$f"
	if ! truncate -s 64M "$f" || ! make-bcache -q --format-version "$V" "$@" "$f"; then
		bad "make-bcache $f"
		exit 1
	fi
}

# --- usage and unusable devices ----------------------------------------
fresh c
run 2 "no device: usage error" bcache-check
has "usage printed" "^Usage: bcache-check"
run 2 "unknown option" bcache-check --frobnicate c
run 3 "a device named twice" bcache-check c c
has "named twice: refused" "both member 0 of the set \\(a device named twice\\?\\)"
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
has "dump: all data buckets free" "^state free 123$"
has "dump: the journal buckets" "^state journal 4$"
has "dump: an empty journal" "^# journal: 0 entries, 0 keys; ends where seq 1 would be: at ring sector 0 no entry"
eq "dump: no journal entries" 0 "$(count '^j(set|key) ')"
has "dump: gen histogram" "^gen 0 128$"

# --- superblock ------------------------------------------------------------
cp --sparse=always c sb && fixture flip sb $((4096 + 100))
run 3 "corrupted superblock" bcache-check sb
has "corrupted superblock: checksum mismatch" "superblock checksum mismatch"
run 3 "corrupted superblock, --repair too" bcache-check -r sb

cp --sparse=always c dirty && fixture sb dirty dirty
run 0 "dirty superblock alone is no inconsistency" bcache-check dirty
has "dirty: said, as information" "^superblock: not shut down cleanly: the next attach replays the journal over the index checkpoint$"
hasnt "dirty: neither an error nor a note" "^(error|note):"

# the journal's geometry is the superblock's: a bad one makes it unusable
for e in jbuckets=1 jbuckets=300 jbuckets=112 jfirst=0 jfirst=125 jpos=4096 jpos=4 jseq=0; do
	cp --sparse=always c jgeo && fixture sb jgeo "$e"
	run 3 "superblock journal edit $e: not usable" bcache-check jgeo
done
has "jgeo: the reason" "journal seq 0 \(seqs start at 1\)"
cp --sparse=always c jgeo && fixture sb jgeo jbuckets=1
run 3 "dump refuses it too" bcache-dump jgeo
has "dump: the reason" "journal of 1 buckets \(must be 2 to 256\)"

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

# the journal's flags in the bucket array
cp --sparse=always c jflag && fixture bucket jflag 2 0
run 1 "a journal bucket not flagged" bcache-check jflag
has "jflag: named" "^error: bucket array copy 0: bucket 2 is not marked as a journal bucket \(the ring is buckets 1 to 4\)$"
run 1 "--repair: back to the previous copy" bcache-check -r jflag
has "jflag: switched" "^repair: switched to bucket array copy 1$"
run 0 "then consistent" bcache-check jflag
cp --sparse=always c jflag2 && fixture bucket jflag2 10 2
run 1 "a data bucket flagged as journal" bcache-check jflag2
has "jflag2: named" "^error: bucket array copy 0: bucket 10 is marked as a journal bucket"
cp --sparse=always c jflag3 && fixture bucket jflag3 0 3 && fixture bucket jflag3 5 1
run 1 "metadata flagged journal, a data bucket flagged metadata" bcache-check jflag3
has "jflag3: the metadata bucket" "^error: bucket array copy 0: bucket 0 is marked as a journal bucket"
has "jflag3: the data bucket" "^error: bucket array copy 0: bucket 5 is marked as a metadata bucket"
cp --sparse=always c jflag4 && fixture bucket jflag4 7 128
run 1 "unknown bucket flag" bcache-check jflag4
has "jflag4: named" "^error: bucket array copy 0: bucket 7 has unknown flags 0x80$"
# both copies bad: the fresh copy flags the ring
cp --sparse=always c jflag5 && fixture bucket jflag5 3 0 && fixture flip jflag5 $(((16 + 8) * 512 + 11))
run 1 "--repair with both copies bad" bcache-check -r jflag5
has "jflag5: fresh copy written" "wrote a fresh one as copy 1"
run 0 "then consistent: the fresh copy flags the journal" bcache-check jflag5
run 0 "dump agrees" bcache-dump --buckets jflag5
has "jflag5: four journal buckets" "^state journal 4$"

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
has "dump: the first key" "^key 0/1 0 8 5\+0 0 - live$"
has "dump: the root node" "^node 0 127 0 255/16777215:18446744073709551615$"
run 0 "dump --buckets" bcache-dump --buckets idx
has "buckets: one btree bucket" "^state btree 1$"
has "buckets: four data buckets" "^state data 4$"
has "buckets: live sectors" "^live_sectors 4000$"

fresh s8 -b 8k
fixture index s8 keys=3000 flushes=3 stale=2 >/dev/null
run 0 "two-level index with appended sets and dead keys" bcache-check s8
has "s8: two levels, $S8_NODES nodes" "^index: 2 levels, $S8_NODES nodes, 2996 live keys"
has "s8: dead keys counted by reason" "4 dead keys \(4 stale-gen\)$"
run 0 "dump of the two-level index" bcache-dump --btree s8
eq "dump: $S8_NODES nodes" "$S8_NODES" "$(count '^node ')"
eq "dump: 4 stale keys" 4 "$(count ' dead:stale-gen$')"
eq "dump: one level-1 node" 1 "$(count '^node 1 ')"

# progress: on stderr with -P (here not a terminal), never on stdout
bcache-check -P s8 >out 2>err
eq "check -P: the last progress line counts every node" \
	"index nodes read: $S8_NODES" "$(tail -n 1 err)"
eq "check -P: no progress on stdout" 0 "$(grep -c 'nodes read' out)"
bcache-check s8 >out 2>err
eq "check: no progress when stderr is not a terminal" 0 "$(grep -c 'nodes read' err)"
bcache-check -q -P s8 >out 2>err
eq "check -q -P: quiet wins" 0 "$(cat out err | wc -c)"
if command -v script >/dev/null; then	# a terminal on stderr: shown anyway
	script -qec "bcache-check s8 >/dev/null" /dev/null >out 2>&1
	eq "check on a terminal: progress, rewritten in place" 1 \
		"$(grep -c "$(printf '\r\033\\[Kindex nodes read: %s' "$S8_NODES")" out)"
fi
bcache-dump -P --btree s8 >out 2>err
eq "dump -P: progress" "index nodes read: $S8_NODES" "$(tail -n 1 err)"

# a byte of the root node's first set
cp --sparse=always idx root && fixture flip root $((127 * BUCKET + 1000))
run 1 "corrupt root node" bcache-check root
has "root: cannot be loaded" "^error: index: cannot be loaded: bad node at level 0 in bucket 127"
run 1 "dump: corrupt root is exit 1" bcache-dump --btree root
# nothing tells whether the unreadable index held dirty data: ask for --force
run 1 "check of it" bcache-check root
has "root: its dirty data cannot be counted" "^dirty: unknown: the index cannot be loaded, so the dirty data it may hold .* cannot be counted$"
sum=$(md5sum <root)
run 1 "--repair of an unreadable index refuses without --force" bcache-check -r root
has "root: the refusal says why" "^repair: refused: the index cannot be loaded, so its dirty data .* cannot be counted; --repair would lose all of it, and so would the next attach \(the kernel cannot use this index either, so no table can write it back\): keep a copy of the device if that data matters, then pass --force$"
has "root: and that nothing was written" "^repair: refused: nothing was written$"
eq "root: nothing written" "$sum" "$(md5sum <root)"
run 1 "--repair --force of the index: exit 1 (repaired)" bcache-check -r --force root
has "root: index dropped, slot invalidated" "^repair: dropped the index and invalidated the data of 1 UUID slot"
has "root: the possible loss said" "^repair: --force: lost whatever dirty data the index held: the index cannot be loaded$"
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

for bad in alias outside cross future injournal csum; do
	cp --sparse=always c "$bad" && fixture index "$bad" keys=100 "$bad" >/dev/null
done
run 1 "live key inside the root node's bucket" bcache-check alias
has "alias: named" "^error: bucket 127 holds an index node and 8 sectors of live data$"
# a leaf key the journal's rule refuses: the kernel refuses the node (btree.c)
run 1 "key pointing at the metadata" bcache-check outside
has "outside: named" "^error: index: cannot be loaded: node in bucket 127: leaf key \(inode 256, end 1800, cache sector 8, 8 sectors\) points into the metadata \(Structure needs cleaning\)$"
run 1 "key crossing its bucket's end" bcache-check cross
has "cross: named" "^error: index: cannot be loaded: node in bucket 127: leaf key .*, cache sector 7164, 8 sectors\) crosses the end of its bucket "
run 1 "live key pointing into a journal bucket" bcache-check injournal
has "injournal: named" "^error: index: cannot be loaded: node in bucket 127: leaf key .*, cache sector 1024, 8 sectors\) points into a journal bucket "
run 1 "key flagged csum" bcache-check csum
has "csum: named" "^error: index: cannot be loaded: node in bucket 127: leaf key .* $CSUM_WHY"
has "csum: the index is lost to the kernel" "^dirty: unknown: the index cannot be loaded"
run 1 "--repair --force drops it" bcache-check -r -f csum
run 0 "then consistent" bcache-check csum
run 1 "key from a future epoch" bcache-check future
has "future: named" "is newer than its UUID slot \(epoch 1\)"
# clean data only: the repair needs no --force, as before
has "alias: no dirty data" "^dirty: none: no data exists only on this cache$"
run 1 "--repair drops the bad index" bcache-check -r alias
has "alias: dropped, nothing dirty lost" "^repair: dropped the index and invalidated the data of 1 UUID slot \(written as UUID table copy 1\); it held no dirty data: the origins hold all the data$"
hasnt "alias: no refusal" "^repair: (refused|--force)"
run 0 "then consistent" bcache-check alias

# a bad bucket array under an index: the index goes too
cp --sparse=always idx pidx && fixture flip pidx $((16 * 512 + 10))
run 1 "bad bucket array under an index" bcache-check pidx
has "pidx: index not checked" "^index: not checked: the bucket array it depends on cannot be trusted$"
has "pidx: dirty data unknown" "^dirty: unknown: the index cannot be judged: the bucket array it depends on cannot be trusted, so"
run 1 "--repair refuses: the dirty data cannot be counted" bcache-check -r pidx
has "pidx: refused" "^repair: refused: the index cannot be judged: the bucket array it depends on cannot be trusted, so its dirty data"
run 1 "--repair --force" bcache-check -r -f pidx
has "pidx: switched" "^repair: switched to bucket array copy 1$"
has "pidx: index dropped" "^repair: dropped the index"
run 0 "then consistent" bcache-check pidx

# a bad UUID table under an index: back to the previous table, index dropped
cp --sparse=always idx uidx && fixture uuidcsum uidx
run 1 "bad UUID table under an index" bcache-check uidx
has "uidx: index not checked" "^index: not checked: the UUID table it depends on cannot be trusted$"
run 1 "--repair refuses: the dirty data cannot be counted" bcache-check -r uidx
has "uidx: refused" "^repair: refused: the index cannot be judged: the UUID table it depends on cannot be trusted, so its dirty data"
run 1 "--repair --force" bcache-check -r --force uidx
has "uidx: index dropped" "^repair: dropped the index"
run 0 "then consistent" bcache-check uidx
run 0 "super-show agrees" bcache-super-show uidx
has "uidx: no root" "^btree.root	none$"

# a root that is not bucket aligned: an index problem, not an unusable device
cp --sparse=always idx ralign && fixture sb ralign rootptr=$((127 * 1024 + 8))
run 1 "misaligned root" bcache-check ralign
has "ralign: named" "btree root at sector .* is not bucket aligned"
run 1 "--repair refuses: the index cannot be read" bcache-check -r ralign
has "ralign: refused" "^repair: refused: the index cannot be read: its root is invalid, so its dirty data"
run 1 "--repair --force" bcache-check -r --force ralign
run 0 "then consistent" bcache-check ralign

# a torn set after a crash is what the kernel was appending: not corrupt
cp --sparse=always set1 set1d && fixture sb set1d dirty
run 0 "torn second set, not shut down cleanly" bcache-check set1d
has "set1d: a note" "^note: index node in bucket 127 \(level 0\): set 1 fails its checksum: a torn write"
run 0 "dump: not bad either" bcache-dump --btree set1d
has "dump: says torn" "set 1 is torn \(not shut down cleanly\)"

# a slot left attached (held at a crash): its data stands
cp --sparse=always idx att && fixture attach att && fixture sb att dirty
run 0 "attached slot after a crash: the journal recovers it" bcache-dump --btree att
eq "att: every key live" 500 "$(count '^key .* live$')"
run 0 "check agrees" bcache-check att
has "att: 500 live keys" "^index: 1 level, 1 node, 500 live keys"
hasnt "att: no note after a crash" "^note:"
cp --sparse=always idx att2 && fixture attach att2
run 0 "attached slot after a clean shutdown: odd, but its data stands" bcache-check att2
has "att2: a note" "^note: UUID slot 0 \(.*\) is still marked attached after a clean shutdown"
has "att2: 500 live keys" "^index: 1 level, 1 node, 500 live keys"

# --- the journal ---------------------------------------------------------------
run 0 "fresh, verbose: the journal" bcache-check -v c
has "fresh: an empty journal" "^journal: empty: 4 buckets from bucket 1, nothing to replay at ring sector 0 \(seq 1\)$"
has "fresh, -v: where it ends" "^journal: ends where seq 1 would be: at ring sector 0 no entry \(bad magic\)$"

# over the checkpoint, after a crash: a key overridden, a new one, a hole,
# and a key splitting an older one
cp --sparse=always idx j1 && fixture journal j1 'd:0+8@20,d:4000+16@20+8' 'h:8+8' \
	'd:16+4@21' >/dev/null && fixture sb j1 dirty
run 0 "journal over the checkpoint, after a crash" bcache-check j1
has "j1: the entries" "^journal: 3 entries \(seq 1 to 3\) from ring sector 0, 4 keys to replay over the index checkpoint$"
has "j1: the index replayed" "^index: 1 level, 1 node, 501 live keys \(2.0 MiB in 6 buckets\), 0 dead keys; checkpoint \+ 4 journal keys$"
run 0 "dump of it" bcache-dump j1
has "j1: key 0 overridden" "^key 0/1 0 8 20\+0 0 - live$"
hasnt "j1: the hole hides key 1" "^key 0/1 8 "
has "j1: key 2 split: its new front" "^key 0/1 16 20 21\+0 0 - live$"
has "j1: ... and its old tail" "^key 0/1 20 24 5\+20 0 - live$"
has "j1: the new key" "^key 0/1 4000 4016 20\+8 0 - live$"
has "j1: live sectors" "^live_sectors 4008$"
has "j1: the first entry" "^jset 1 0 1\+0 8 2$"
has "j1: its first key" "^jkey 0/1 0 8 20\+0 0 - live$"
has "j1: the hole" "^jkey 0/1 8 16 0\+0 0 hole hole$"
has "j1: the third entry" "^jset 3 16 1\+16 8 1$"
eq "j1: journal key lines" 4 "$(count '^jkey ')"
eq "j1: key lines are the replayed index" 501 "$(count '^key ')"
run 0 "dump --journal alone" bcache-dump --journal j1
eq "j1: only the journal" 0 "$(count '^(key|node|slot|state) ')"
has "j1: the summary" "^# journal: 3 entries, 4 keys; ends where seq 4 would be"

# a torn last entry ends the journal: what a crash leaves, not replayed
cp --sparse=always idx j2 && fixture journal j2 'd:0+8@20' 'd:8+8@20+8,torn' \
	>/dev/null && fixture sb j2 dirty
run 0 "a torn last entry ends the journal: no inconsistency" bcache-check j2
has "j2: one entry" "^journal: 1 entry \(seq 1 to 1\)"
has "j2: the torn one named, as normal" "^journal: ends where seq 2 would be: at ring sector 8 a checksum mismatch \(a torn write\); .* \(normal after a crash\)$"
hasnt "j2: no error" "^error:"
hasnt "j2: not damaged" "damaged"
run 0 "dump of it" bcache-dump j2
has "j2: key 0 from the journal" "^key 0/1 0 8 20\+0 0 - live$"
has "j2: key 1 from the checkpoint" "^key 0/1 8 16 5\+8 0 - live$"
hasnt "j2: dump: not damaged" "damaged"

# ... but a torn entry with a good one after it is damage in the middle: the
# keys after it are lost (holes of writes the origin has), and the kernel
# drops the whole index ("journal damaged before entry 2")
cp --sparse=always idx jdm && fixture journal jdm 'd:0+8@20,dirty' 'd:8+8@20+8,torn' \
	'd:16+8@20+16,dirty' >/dev/null && fixture sb jdm dirty
run 1 "a torn entry before a good one: the journal is damaged" bcache-check jdm
has "jdm: the error" "^error: journal: damaged before entry 2: a later entry \(seq 3 at ring sector 16\) is good; the kernel will drop the index$"
has "jdm: where the walk ended" "^journal: ends where seq 2 would be: at ring sector 8 a checksum mismatch \(a torn write\); the next bucket \(ring sector 1024\) no entry \(bad magic\)$"
hasnt "jdm: not called normal" "normal after a crash"
has "jdm: the dirty data a lower bound" "^dirty: slot 0 \(uuid f1f1f1f1-0000-4000-8000-000000000001\): at least 8 sectors "
has "jdm: and why" "^dirty: at least 8 sectors \(4 KiB\) in total, in 1 slot: the journal is damaged before entry 2: the keys of the entries from there on cannot be counted$"
run 1 "dump: a damaged journal is exit 1" bcache-dump jdm
has "jdm dump: the journal says so" "^# journal: damaged before entry 2: a later entry \(seq 3 at ring sector 16\) is good; the kernel drops the whole index$"
has "jdm dump: the index too" "^# index: the journal is damaged before entry 2 \(see the journal\): the kernel drops the whole index; replayed here up to there$"
eq "jdm dump: one entry replayed" 1 "$(count '^jset ')"
has "jdm dump: key 2 from the checkpoint" "^key 0/1 16 24 5\+16 0 - live$"
sum=$(md5sum <jdm)
run 1 "--repair refuses: the keys after the damage may be dirty" bcache-check -r jdm
has "jdm: refused: the counted dirty data, and no table can write it back" "^repair: refused: at least 8 dirty sectors of slot 0 \(uuid f1f1f1f1-0000-4000-8000-000000000001\) exist only on this cache; --repair would lose them, and so would the next attach \(the kernel cannot use this index either, so no table can write them back\): keep a copy of the device if that data matters, then pass --force$"
has "jdm: refused: the keys after the damage" "^repair: refused: the journal is damaged before entry 2: the keys of the entries from there on cannot be counted; --repair would lose whatever dirty data is among them too$"
eq "jdm: nothing written" "$sum" "$(md5sum <jdm)"
run 1 "--repair --force" bcache-check -r --force jdm
has "jdm: index dropped" "^repair: dropped the index and invalidated the data of 1 UUID slot "
has "jdm: journal past the good later entry" "^repair: emptied the journal: the next entry goes to ring sector 8 with seq 4$"
has "jdm: the loss" "^repair: --force: lost whatever dirty data was among the keys not counted: the journal is damaged before entry 2"
run 0 "then consistent" bcache-check -v jdm
has "jdm: nothing to replay" "^journal: empty: 4 buckets from bucket 1, nothing to replay at ring sector 8 \(seq 4\)$"
has "jdm: every good entry older" "^journal: no good entry in the ring has seq 4 or later \(the largest is 3\)$"
run 0 "super-show agrees" bcache-super-show jdm
has "jdm: journal_seq" "^sb.journal_seq	4$"

# ... and so is one lost (zeros) before good ones, the next in another bucket;
# the good later entry named is the first after the damage
cp --sparse=always idx jdl && fixture journal jdl 'd:0+8@20' 'd:8+8@20+8,lost' \
	'd:16+8@20+16,skip' 'd:24+8@20+24' >/dev/null
run 1 "a lost entry before good ones" bcache-check jdl
has "jdl: named" "^error: journal: damaged before entry 2: a later entry \(seq 3 at ring sector 1024\) is good; the kernel will drop the index$"
has "jdl: no dirty counted" "^dirty: none among the keys counted, but not all could be: the journal is damaged before entry 2: "
run 1 "--repair: the damage makes the dirty data uncountable" bcache-check -r jdl
has "jdl: refused" "^repair: refused: nothing was written$"
run 1 "--repair --force" bcache-check -r -f jdl
has "jdl: above every seq" "^repair: emptied the journal: the next entry goes to ring sector 8 with seq 5$"
run 0 "then consistent" bcache-check jdl

# an older lap's entries after the end are what the ring holds: information;
# one with the seq expected next (or later) anywhere is damage
cp --sparse=always idx jlap && fixture journal jlap start=0 seq=10 'd:0+8@20' 'd:8+8@20+8' \
	'setseq=5,d:100+8@21' 'd:108+8@21+8' 'at=2048,setseq=9,d:116+8@21+16' >/dev/null &&
	fixture sb jlap dirty
run 0 "older-lap entries after the end: no inconsistency" bcache-check -v jlap
has "jlap: two entries" "^journal: 2 entries \(seq 10 to 11\) from ring sector 0, 2 keys"
has "jlap: ends at the older one" "^journal: ends where seq 12 would be: at ring sector 16 an entry with seq 5; the next bucket \(ring sector 1024\) no entry \(bad magic\) \(normal after a crash\)$"
has "jlap: every good entry older" "^journal: no good entry in the ring has seq 12 or later \(the largest is 11\)$"
hasnt "jlap: no error" "^error:"
run 0 "dump of it" bcache-dump jlap
hasnt "jlap dump: not damaged" "damaged"
hasnt "jlap dump: the older lap's keys not replayed" "^key 0/1 (100|108|116) "
has "jlap dump: the checkpoint's key there" "^key 0/1 96 104 5\+96 0 - live$"
cp --sparse=always jlap jeq && fixture journal jeq 'at=3072,setseq=12,d:124+8@21+24' >/dev/null &&
	fixture sb jeq jpos=0 jseq=10
run 1 "an entry with the seq expected next, elsewhere: damage" bcache-check jeq
has "jeq: named" "^error: journal: damaged before entry 12: a later entry \(seq 12 at ring sector 3072\) is good; the kernel will drop the index$"

# a wrong seq, another cache set's entry: the journal ends there too
# (a seq above the one expected there: the one expected is missing, damage)
cp --sparse=always idx j3 && fixture journal j3 'd:0+8@20' 'd:8+8@20+8,badseq' >/dev/null
run 1 "an entry with a later seq ends the journal: damage" bcache-check j3
has "j3: named" "^journal: ends where seq 2 would be: at ring sector 8 an entry with seq 3;"
has "j3: the damage" "^error: journal: damaged before entry 2: a later entry \(seq 3 at ring sector 8\) is good"
run 1 "dump" bcache-dump j3
has "j3: key 1 from the checkpoint" "^key 0/1 8 16 5\+8 0 - live$"
cp --sparse=always idx j4 && fixture journal j4 'd:0+8@20' 'd:8+8@20+8,baduuid' >/dev/null
run 0 "another cache set's entry ends the journal" bcache-check j4
has "j4: named" "^journal: ends where seq 2 would be: at ring sector 8 an entry of another cache set;"
run 0 "dump" bcache-dump j4
has "j4: key 1 from the checkpoint" "^key 0/1 8 16 5\+8 0 - live$"

# an entry too big for the rest of its bucket goes to the next one; the
# replay looks there, and only there (the fourth is two buckets on: not
# replayed, and damage, since the kernel finds it in the ring)
cp --sparse=always c j5 && fixture journal j5 start=1016 'd:0+8@20,sectors=16' 'd:8+8@20+8' \
	'd:16+8@20+16,skip' 'at=0,d:24+8@20+24' >/dev/null
run 1 "entries at the start of the next bucket" bcache-check -v j5
has "j5: the fourth is damage" "^error: journal: damaged before entry 4: a later entry \(seq 4 at ring sector 0\) is good"
has "j5: the first, skipped" "^journal: entry seq 1 at ring sector 1024 \(bucket 2\+0\), 16 sectors, 1 key, at the start of the next bucket$"
has "j5: right behind it" "^journal: entry seq 2 at ring sector 1040 \(bucket 2\+16\), 8 sectors, 1 key$"
has "j5: skipped though it fit" "^journal: entry seq 3 at ring sector 2048 \(bucket 3\+0\), 8 sectors, 1 key, at the start of the next bucket$"
has "j5: not two buckets on" "^journal: 3 entries \(seq 1 to 3\) from ring sector 1016, 3 keys to replay over the empty index$"
has "j5: the index from the journal alone" "^index: 1 level, 1 node, 3 live keys \(12 KiB in 1 bucket\), 0 dead keys; no checkpoint \+ 3 journal keys$"
run 1 "dump" bcache-dump j5
has "j5: the skipped entry" "^jset 1 1024 2\+0 16 1$"
eq "j5: three entries" 3 "$(count '^jset ')"

# around the end of the ring: seq 7 in its last block, then ring sector 0;
# and an entry that does not fit before the end goes to ring sector 0
cp --sparse=always idx j6 && fixture journal j6 start=4088 seq=7 'd:0+8@20' 'd:8+8@20+8' \
	'd:16+8@20+16' >/dev/null && fixture sb j6 dirty
run 0 "a journal wrapping around the ring's end" bcache-check j6
has "j6: all three" "^journal: 3 entries \(seq 7 to 9\) from ring sector 4088, 3 keys"
run 0 "dump" bcache-dump j6
has "j6: the last block of the ring" "^jset 7 4088 4\+1016 8 1$"
has "j6: then ring sector 0" "^jset 8 0 1\+0 8 1$"
has "j6: replayed" "^key 0/1 16 24 20\+16 0 - live$"
cp --sparse=always c j7 && fixture journal j7 start=4088 'd:0+8@20,sectors=16' 'd:8+8@20+8' >/dev/null
run 0 "an entry too big for the ring's end" bcache-check -v j7
has "j7: at ring sector 0" "^journal: entry seq 1 at ring sector 0 \(bucket 1\+0\), 16 sectors, 1 key, at the start of the next bucket$"
has "j7: then right behind" "^journal: entry seq 2 at ring sector 16 "

# a stale journal key is dead, as a stale checkpoint key
cp --sparse=always idx j8 && fixture journal j8 'd:5000+8@20,stale' >/dev/null
run 0 "a stale journal key" bcache-check j8
has "j8: counted dead" ", 1 dead keys \(1 stale-gen\); checkpoint \+ 1 journal key$"
run 0 "dump" bcache-dump --journal j8
has "j8: its state" "^jkey 0/1 5000 5008 20\+0 255 - dead:stale-gen$"

# a replay that splits nodes: they stay in memory (the kernel writes them
# at its next checkpoint), and a checkpoint node's bucket stays reserved
fresh s8j -b 8k
fixture journal s8j 'r:0+100@200' 'r:800+100@250' 'r:1600+100@300' 'r:2400+100@350' \
	'r:3200+100@400' >/dev/null
run 0 "500 journal keys and no checkpoint: the replay splits the root" bcache-check s8j
has "s8j: in memory" "^index: 2 levels, $S8J_NODES nodes, 500 live keys \(2.0 MiB in 250 buckets\), 0 dead keys; no checkpoint \+ 500 journal keys$"
run 0 "dump" bcache-dump --btree s8j
eq "s8j: nodes made by the replay" "$S8J_NODES" "$(count '^node [01] - - ')"
has "s8j: the new root" "^node 1 - - 255/16777215:18446744073709551615$"
leaf=$(bcache-dump --btree s8 | awk '$1 == "node" && $2 == 0 { print $3; exit }')
holes=$(for i in $(seq 0 99); do printf 'h:%d+2,' $((i * 8 + 2)); done)
cp --sparse=always s8 s8k && fixture journal s8k "$holes" "d:100000+8@$leaf" >/dev/null
run 1 "a journal key in the bucket of a checkpoint leaf the replay split" bcache-check s8k
has "s8k: named" "^error: bucket $leaf holds an index node and 8 sectors of live data$"
has "s8k: one node more" "^index: 2 levels, $S8K_NODES nodes, "
run 0 "dump of it" bcache-dump --btree s8k
eq "s8k: the two halves in memory" 2 "$(count '^node 0 - - ')"
hasnt "s8k: the split leaf is gone" "^node 0 $leaf "

# journal keys the kernel refuses: the whole index is lost
cp --sparse=always idx jbad && fixture journal jbad 'd:0+8@20' \
	'd:8+8@0+8,d:16+8@2,d:24+8@128,d:32+8@30+1020,d:40+0@30' 'd:48+8@21' >/dev/null
# ... and a torn entry further on with a higher seq than any replayed: not
# good, so no damage to the kernel, but the new journal starts above it
fixture journal jbad start=2048 seq=50 'd:56+8@22,torn' >/dev/null && fixture sb jbad jpos=0 jseq=1
run 1 "journal keys pointing at bad places" bcache-check jbad
has "jbad: into the metadata" "^error: journal entry seq 2 \(ring sector 8\), key 0 \(slot 0 epoch 1, sectors 8-16\): points into the metadata \(cache sector 8, 8 sectors\): the kernel drops the whole index$"
has "jbad: into a journal bucket" "key 1 .*: points into a journal bucket \(cache sector 2048, 8 sectors\)"
has "jbad: past the last bucket" "key 2 .*: points past the last bucket \(cache sector 131072, 8 sectors\)"
has "jbad: across a bucket's end" "key 3 .*: crosses the end of its bucket \(cache sector 31740, 8 sectors\)"
has "jbad: size 0" "key 4 .*: size 0 "
has "jbad: the journal still walked" "^journal: 3 entries \(seq 1 to 3\)"
hasnt "jbad: a torn entry is no damage" "damaged"
run 1 "dump: refused keys are exit 1" bcache-dump jbad
has "dump: refused, said so" "^# index: the journal holds a key the kernel refuses \(see the journal\): it drops the whole index; 6 key\(s\) from that one on not replayed here$"
eq "dump: only the first key replayed" 1 "$(count '^key 0/1 0 8 20\+0 0 - live$')"
has "dump: not the last entry's either" "^key 0/1 48 56 5\+48 0 - live$"
has "dump: the refusal as a state" "^jkey 0/1 16 24 2\+0 0 - bad:points-into-a-journal-bucket$"
run 1 "check of it" bcache-check jbad
has "jbad: no dirty data, the keys after the refused one included" "^dirty: none: no data exists only on this cache$"
run 1 "--repair: the index and the journal dropped" bcache-check -r jbad
has "jbad: index dropped, no --force needed" "^repair: dropped the index and invalidated the data of 1 UUID slot .*; it held no dirty data: the origins hold all the data$"
has "jbad: journal emptied past every seq on disk" "^repair: emptied the journal: the next entry goes to ring sector 24 with seq 51$"
run 0 "then consistent" bcache-check jbad
has "jbad: nothing to replay" "^journal: empty: 4 buckets from bucket 1, nothing to replay at ring sector 24 \(seq 51\)$"
has "jbad: no index" "^index: none"
run 0 "super-show agrees" bcache-super-show -u jbad
has "jbad: journal_seq" "^sb.journal_seq	51$"
has "jbad: journal_pos" "^sb.journal_pos	24$"
has "jbad: epoch bumped" "^slot.0.epoch	2$"

# a dirty key (writeback) is fine; a flag the journal never holds is not
cp --sparse=always idx jdirty && fixture journal jdirty 'd:0+8@20,dirty' >/dev/null
run 0 "a dirty journal key" bcache-check jdirty
run 0 "dump" bcache-dump jdirty
has "jdirty: the journal key" "^jkey 0/1 0 8 20\+0 0 dirty live$"
has "jdirty: replayed" "^key 0/1 0 8 20\+0 0 dirty live$"
cp --sparse=always idx jbad3 && fixture journal jbad3 'd:0+8@20,csum' >/dev/null
run 1 "a journal key with the csum flag" bcache-check jbad3
has "jbad3: named" "key 0 .*: $CSUM_WHY"
run 1 "dump" bcache-dump --journal jbad3
has "jbad3: its state" "^jkey 0/1 0 8 20\+0 0 csum bad:$(echo "$CSUM_WHY" | tr ' ' -)$"

# bad keys in a journal with no checkpoint: dropped just the same
cp --sparse=always c jbad2 && fixture journal jbad2 'd:0+8@3' >/dev/null
run 1 "a journal key into the journal, no checkpoint" bcache-check jbad2
run 1 "--repair" bcache-check -r jbad2
has "jbad2: journal emptied" "^repair: emptied the journal: the next entry goes to ring sector 8 with seq 2$"
run 0 "then consistent" bcache-check jbad2

# a checkpoint key into a journal bucket is a bad pointer as well
cp --sparse=always idx jroot && fixture journal jroot 'd:0+8@127' >/dev/null
run 1 "a journal key into the checkpoint's root node" bcache-check jroot
has "jroot: named" "^error: bucket 127 holds an index node and 8 sectors of live data$"

# a bad bucket array under a journal alone: the index (the journal) goes too
cp --sparse=always j5 jprio && fixture flip jprio $((16 * 512 + 10))
run 1 "bad bucket array under a journal" bcache-check jprio
has "jprio: index not checked" "^index: not checked: the bucket array it depends on cannot be trusted$"
run 1 "--repair refuses: the dirty data cannot be counted" bcache-check -r jprio
has "jprio: refused" "^repair: refused: nothing was written$"
run 1 "--repair --force" bcache-check -r --force jprio
has "jprio: index dropped" "^repair: dropped the index"
has "jprio: journal emptied" "^repair: emptied the journal: the next entry goes to ring sector 2056 with seq 5$"
run 0 "then consistent" bcache-check jprio

# --- dirty data (writeback) -------------------------------------------------
# Live dirty keys, per slot: 10 dirty checkpoint keys of slot 0, the first
# overridden by a clean journal key, another dirty one from the journal; a
# dirty key of slot 1 half hidden by a hole; a stale and an old-epoch dirty
# key, dead: not counted.
U0=f1f1f1f1-0000-4000-8000-000000000001
U1=f1f1f1f1-0000-4000-8000-000000000002
cp --sparse=always c wb && fixture index wb keys=100 dirty=10 >/dev/null &&
	fixture journal wb 'slot=1,d:0+16@20,dirty' 'd:100+8@21,dirty' 'slot=1,h:8+8' \
	'd:0+8@22' 'd:200+8@23,dirty,stale' 'd:300+8@24,dirty,epoch=0' >/dev/null
run 0 "dirty data is no inconsistency" bcache-check wb
has "wb: slot 0" "^dirty: slot 0 \(uuid $U0\): 80 sectors \(40 KiB\) exist only on this cache: not yet written back to the origin$"
has "wb: slot 1, less what the hole hides" "^dirty: slot 1 \(uuid $U1\): 8 sectors \(4 KiB\) exist only on this cache"
has "wb: the total" "^dirty: 88 sectors \(44 KiB\) in total, in 2 slots$"
eq "wb: a line per slot holding dirty data" 2 "$(count '^dirty: slot ')"
has "wb: the dead dirty keys counted dead" ", 2 dead keys \(1 stale-gen, 1 old-epoch\);"
hasnt "wb: neither an error nor a note" "^(error|note):"
run 0 "dump of it" bcache-dump wb
has "wb dump: dirty sectors" "^dirty_sectors 88$"
eq "wb dump: live dirty keys" 11 "$(count '^key .* dirty live$')"
has "wb dump: key 0 clean now" "^key 0/1 0 8 22\+0 0 - live$"
has "wb dump: slot 1's key, cut by the hole" "^key 1/1 0 8 20\+0 0 dirty live$"
has "wb dump: the stale dirty key" "^key 0/1 200 208 23\+0 255 dirty dead:stale-gen$"
has "wb dump: the old-epoch dirty key" "^key 0/0 300 308 24\+0 0 dirty dead:old-epoch$"
run 0 "no dirty data in a clean index" bcache-check idx
has "idx: none" "^dirty: none: no data exists only on this cache$"
run 0 "dump: none either" bcache-dump --buckets idx
has "idx dump: 0 dirty sectors" "^dirty_sectors 0$"
run 0 "no index: no dirty line" bcache-check c
hasnt "c: no dirty line" "^dirty:"
sum=$(md5sum <wb)
run 0 "--repair of a consistent cache holding dirty data: nothing to do" bcache-check -r wb
hasnt "wb: no repair line" "^repair:"
eq "wb: nothing written" "$sum" "$(md5sum <wb)"
run 2 "--force without --repair" bcache-check --force wb
has "--force alone: says why" "^bcache-check: --force only goes with --repair$"

# a bad index holding dirty data: --repair refuses and writes nothing
cp --sparse=always c wa && fixture index wa keys=100 dirty=10 alias >/dev/null
run 1 "a bad index with dirty data" bcache-check wa
has "wa: the dirty data counted" "^dirty: 80 sectors \(40 KiB\) in total, in 1 slot$"
sum=$(md5sum <wa)
run 1 "--repair refuses to lose dirty data" bcache-check -r wa
has "wa: the refusal" "^repair: refused: 80 dirty sectors of slot 0 \(uuid $U0\) exist only on this cache; --repair would lose them: write them back first \(dmsetup message <dev> 0 flush\) or pass --force$"
has "wa: nothing written, said" "^repair: refused: nothing was written$"
hasnt "wa: nothing dropped" "^repair: dropped"
eq "wa: nothing written" "$sum" "$(md5sum <wa)"
run 1 "-q: refused just the same" bcache-check -r -q wa
eq "wa: quiet" "" "$(cat out)"
eq "wa: still nothing written" "$sum" "$(md5sum <wa)"
run 1 "--repair --force" bcache-check -r --force wa
has "wa: dropped" "^repair: dropped the index and invalidated the data of 1 UUID slot \(written as UUID table copy 1\)$"
has "wa: the loss, per slot" "^repair: --force: lost 80 dirty sectors of slot 0 \(uuid $U0\) that existed only on this cache: its origin misses them$"
has "wa: the loss in total" "^repair: --force: lost 80 dirty sectors \(40 KiB\) in total$"
run 0 "then consistent" bcache-check wa
has "wa: no index" "^index: none"

# a corrupt set after a clean shutdown: its keys cannot be counted
cp --sparse=always c ws && fixture index ws keys=100 flushes=2 dirty=100 >/dev/null &&
	fixture flip ws $((127 * BUCKET + 4096 + 200))
run 1 "a corrupt set, dirty data in the rest" bcache-check ws
has "ws: a lower bound" "^dirty: slot 0 \(uuid $U0\): at least 400 sectors \(200 KiB\) exist only on this cache"
has "ws: and why" "^dirty: at least 400 sectors \(200 KiB\) in total, in 1 slot: set 1 of the index node in bucket 127 is corrupt: its keys cannot be counted$"
sum=$(md5sum <ws)
run 1 "--repair refuses" bcache-check -r ws
has "ws: the refusal" "^repair: refused: at least 400 dirty sectors of slot 0 \(uuid $U0\) exist only on this cache; --repair would lose them: write them back first"
has "ws: the set too" "^repair: refused: set 1 of the index node in bucket 127 is corrupt: its keys cannot be counted; --repair would lose whatever dirty data is among them too$"
eq "ws: nothing written" "$sum" "$(md5sum <ws)"
run 1 "--repair --force" bcache-check -r --force ws
has "ws: the loss" "^repair: --force: lost at least 400 dirty sectors \(200 KiB\) in total$"
has "ws: and the uncounted keys" "^repair: --force: lost whatever dirty data was among the keys not counted: set 1 "
run 0 "then consistent" bcache-check ws
# ... even with no dirty key in the rest: those keys may have been dirty
cp --sparse=always set1 set1r
run 1 "a corrupt set, clean data in the rest: refused too" bcache-check -r set1r
has "set1r: why" "^repair: refused: set 1 of the index node in bucket 127 is corrupt: its keys cannot be counted; --repair would lose whatever dirty data is among them too: write it back first \(dmsetup message <dev> 0 flush\) or pass --force$"
run 1 "--repair --force" bcache-check -r --force set1r
run 0 "then consistent" bcache-check set1r

# a journal key the kernel refuses: the next attach drops the index too, and
# the dirty keys after it are lost with it: counted
cp --sparse=always idx wj && fixture journal wj 'd:0+8@20,dirty' 'd:8+8@0+8' \
	'slot=1,d:16+8@21,dirty' >/dev/null
run 1 "dirty journal keys around a refused one" bcache-check wj
has "wj: slot 0, before it" "^dirty: slot 0 \(uuid $U0\): 8 sectors "
has "wj: slot 1, after it" "^dirty: slot 1 \(uuid $U1\): 8 sectors "
has "wj: the total" "^dirty: 16 sectors \(8 KiB\) in total, in 2 slots$"
sum=$(md5sum <wj)
run 1 "--repair refuses" bcache-check -r wj
has "wj: no table can write them back" "^repair: refused: 8 dirty sectors of slot 1 \(uuid $U1\) exist only on this cache; --repair would lose them, and so would the next attach \(the kernel cannot use this index either, so no table can write them back\): keep a copy of the device if that data matters, then pass --force$"
eq "wj: two slots refused" 2 "$(count '^repair: refused: 8 dirty sectors of slot ')"
eq "wj: nothing written" "$sum" "$(md5sum <wj)"
run 1 "--repair --force" bcache-check -r --force wj
has "wj: both slots invalidated" "^repair: dropped the index and invalidated the data of 2 UUID slots "
has "wj: slot 0's loss" "^repair: --force: lost 8 dirty sectors of slot 0 \(uuid $U0\)"
has "wj: slot 1's loss" "^repair: --force: lost 8 dirty sectors of slot 1 \(uuid $U1\)"
has "wj: in total" "^repair: --force: lost 16 dirty sectors \(8 KiB\) in total$"
run 0 "then consistent" bcache-check wj
# a bad bucket array copy alone, no index: nothing dirty at stake, no --force
cp --sparse=always c wpr && fixture flip wpr $((16 * 512 + 10))
run 1 "--repair of a bad bucket array, no index" bcache-check -r wpr
has "wpr: switched" "^repair: switched to bucket array copy 1$"

# --- seeded damage: 1-4 random bytes in the superblock, the metadata copies or
# the node buckets of a two-level index. bcache-check never crashes, exits 0, 1
# or 3, and after --repair the device is consistent unless the repair refused.
# A refusal for dirty data writes nothing; --force then repairs.
fresh fz -b 8k
fixture index fz keys=1500 flushes=3 stale=3 dirty=40 >/dev/null
fixture journal fz 'r:0+100@2000' 'r:800+100@2100,dirty' 'h:3+200' 'r:1600+100@2200' >/dev/null
meta_end=$(($(bcache-super-show fz | sed -n 's/^first_bucket	//p') * 8192))
RANDOM=42
codes=() crashed=0 unrepaired=0 forced=0 wrote=0
for i in $(seq 1 60); do
	cp --sparse=always fz f
	n=$((RANDOM % 4 + 1))	# here: a subshell would reseed RANDOM
	for _ in $(seq "$n"); do
		case $((RANDOM % 5)) in
		0) off=$((4096 + RANDOM % 4096)) ;;
		1) off=$((8192 + (RANDOM * 32768 + RANDOM) % (meta_end - 8192))) ;;
		2) off=$((meta_end + RANDOM % (4 * 8192))) ;;	# the journal entries
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
	sum=$(md5sum <f)
	bcache-check -r f >out 2>&1
	if grep -q '^repair: refused: nothing was written$' out; then
		if [ "$(md5sum <f)" != "$sum" ]; then
			wrote=$((wrote + 1))
			bad "damage $i: a refused repair wrote"
		fi
		forced=$((forced + 1))
		bcache-check -r --force f >out 2>&1
	fi
	grep -q '^repair: refused' out && continue
	bcache-check f >out 2>&1 || {
		unrepaired=$((unrepaired + 1))
		bad "damage $i: still inconsistent after --repair"
		sed 's/^/     | /' out
	}
done
eq "seeded damage: no crash" 0 "$crashed"
eq "seeded damage: every repair leaves a consistent device" 0 "$unrepaired"
eq "seeded damage: no refused repair wrote" 0 "$wrote"
echo "note: seeded damage: $forced repairs refused for dirty data, then forced"
echo "note: seeded damage exit codes: $(printf '%s\n' "${codes[@]}" | sort | uniq -c | tr -s ' \n' ' ')"

# --- probe-bcache ------------------------------------------------------------
fresh lab -l "my cache 1" --cset-uuid 0123abcd-4567-89ab-cdef-0123456789ab
dev_uuid=$(bcache-super-show lab | sed -n 's/^dev.uuid	//p')
run 0 "probe --export" probe-bcache --export lab
has "probe: ID_FS_TYPE" "^ID_FS_TYPE=dm_bcache$"
has "probe: ID_FS_UUID is the device uuid" "^ID_FS_UUID=$dev_uuid$"
has "probe: ID_FS_UUID_ENC" "^ID_FS_UUID_ENC=$dev_uuid$"
has "probe: ID_FS_VERSION" "^ID_FS_VERSION=$V$"
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

# --- a cache set of two members (version 3) -------------------------------
if [ "$V" = 3 ]; then
	# fixture set: slot 0's 0-8 and 16-24 dirty with copies on both
	# members (data bucket 5 of each), 8-16 clean on member 1's bucket 6
	set2() { # set2 NAME [fixture set options]: NAME0, NAME1
		local n=$1
		shift
		rm -f "${n}0" "${n}1"
		if ! truncate -s 64M "${n}0" "${n}1" ||
		   ! make-bcache -q "${n}0" "${n}1" >/dev/null ||
		   ! fixture set "${n}0" "${n}1" "$@" >/dev/null; then
			bad "set2 $n"
			exit 1
		fi
	}
	set3() { # set3 NAME [fixture set options]: NAME0, NAME1, NAME2
		local n=$1
		shift
		rm -f "${n}0" "${n}1" "${n}2"
		if ! truncate -s 64M "${n}0" "${n}1" "${n}2" ||
		   ! make-bcache -q "${n}0" "${n}1" "${n}2" >/dev/null ||
		   ! fixture set "${n}0" "${n}1" "m2=${n}2" "$@" >/dev/null; then
			bad "set3 $n"
			exit 1
		fi
	}
	join() { # join MEMBER NAME: NAME formatted by make-bcache --add
		rm -f "$2"
		if ! truncate -s 64M "$2" || ! make-bcache -q --add "$1" "$2"; then
			bad "join $2"
			exit 1
		fi
	}
	set2 m
	run 0 "set: check of both members" bcache-check m0 m1
	has "set: each member's superblock" "^member 1: superblock: ok: version 3"
	has "set: assembled" "^cache set: 2 members, all named"
	has "set: three live keys, once each" "^index: 1 level, 1 node, 3 live keys \(12 KiB in 3 buckets\), 0 dead keys"
	has "set: dirty counted once per key" "^dirty: 16 sectors \(8 KiB\) in total, in 1 slot$"
	has "set: consistent" "^cache set of m0 \(2 members\): consistent$"
	run 0 "set: members named in any order" bcache-check -d m1 m0
	has "set: --data reads each copy" "^data: 3 keys verified against their checksums \(20 KiB read\), 0 mismatched"
	run 3 "set: one member alone is refused" bcache-check m0
	has "set: names what is missing" "m0 is member 0 of a set of 2 members: 1 member is missing: name every member"
	run 3 "set: the other alone too" bcache-dump m1
	has "set: dump names what is missing" "m1 is member 1 of a set of 2 members: member 0 is not named: name it \(it holds the index"
	run 3 "set: member 0 named - is refused" bcache-check - m1
	has "set: member 0 cannot be missing" "m1 is member 1 of a set of 2 members: member 0 is not named"
	run 3 "set: a member named twice" bcache-check m0 m1 m1
	has "set: named twice" "m1 and m1 are both member 1 of the set"
	run 3 "set: a member of another set" bcache-check m0 c
	has "set: different sets" "devices of different cache sets"

	run 0 "set: dump of both" bcache-dump --btree m0 m1
	has "set: dump header names the member" "^# m1: dm-bcache cache .*, member 1 of 2, clean"
	has "set: dump prints both pointers" "^key 0/1 0 8 0:5\+0,1:5\+0 0,0 dirty,csum live$"
	has "set: dump prints a one-copy key" "^key 0/1 8 16 1:6\+0 0 csum live$"
	has "set: dump prints the node's member" "^node 0 0:127 0 "
	run 0 "set: dump of the buckets" bcache-dump --buckets m1 m0
	has "set: buckets per member" "^member 1 m1$"

	# a byte of member 1's copy of 0-8: the key stands on member 0's
	cp --sparse=always m0 b0 && cp --sparse=always m1 b1 &&
		fixture flip b1 $((5 * BUCKET + 100))
	run 0 "set: a bad copy is not seen without --data" bcache-check b0 b1
	run 1 "set: --data finds the bad copy" bcache-check -d b0 b1
	has "set: the bad copy named with its member" "^error: index key \(slot 0 epoch 1, sectors 0-8\): its copy on member 1: data checksum .*: the other copy is good, the key's data stands$"
	has "set: the key's data still good" "^data: 3 keys verified .*, 0 mismatched"
	has "set: the bad copy counted" "^data: 1 copy mismatched beside a good copy"
	run 1 "set: --repair is refused on a set" bcache-check -d -r b0 b1
	has "set: repair refusal" "^repair: refused: repairing a cache set of several devices is not supported yet; nothing was written$"
	fixture flip b0 $((5 * BUCKET + 100))
	run 1 "set: both copies bad" bcache-check -d b0 b1
	has "set: no good copy left" "its copy on member 0: .*: no good copy is left$"
	has "set: the key counted as mismatched" "^data: 3 keys verified .*, 1 mismatched"

	set2 st stale1
	run 0 "set: a stale copy of a live key (after a crash) is skipped" bcache-check -d st0 st1
	has "set: the keys stay live" "3 live keys"
	has "set: the stale copies are not read" "^data: 3 keys verified against their checksums \(12 KiB read\), 0 mismatched"
	run 0 "set: dump with a stale copy" bcache-dump --btree st0 st1
	has "set: dump shows the stale copy's gen" "^key 0/1 0 8 0:5\+0,1:5\+0 0,0 dirty,csum live$"

	# the index node on member 1: its pointer leads to member 1's device
	set2 n1 nodes1
	run 0 "set: index node on member 1" bcache-check -d n10 n11
	has "set: its keys read from member 1's node" "^index: 1 level, 1 node, 3 live keys"
	run 0 "set: dump of a node on member 1" bcache-dump --btree n10 n11
	has "set: the root named with its member" "^# index: checkpoint root member 1 bucket 127 gen 0 level 0"
	has "set: the node's member" "^node 0 1:127 0 "
	cp --sparse=always n10 nb0 && cp --sparse=always n11 nb1 &&
		fixture flip nb1 $((127 * BUCKET + 100))
	run 1 "set: a corrupt node on member 1" bcache-check nb0 nb1
	has "set: the bad node named with its member" "^error: index: cannot be loaded: bad node at level 0 in member 1 bucket 127"

	set2 bh behind
	run 3 "set: a member behind the set's last superblock write" bcache-check bh0 bh1
	has "set: not at the last write" "bh1 \(member 1, superblock seq 1\) is not at its set's last superblock write"
	set2 ah ahead
	run 0 "set: a member one write ahead (a crash between the two)" bcache-check ah1 ah0
	has "set: ahead noted" "^note: cache set: a member's superblock is one write ahead of member 0's"

	# --- a degraded set: member 1 lost, FAILED in member 0's table (its
	# own superblock left as it was, a write behind) -------------------
	set2 dg fail1
	run 0 "degraded: member 0 alone, member 1 failed" bcache-check -d dg0
	has "degraded: said" "^cache set: 2 members, degraded: one member left; member 0's superblock \(seq 3\) decides$"
	has "degraded: the failed member noted" "^note: cache set: member 1 failed \(member 0's superblock marks it\): not read"
	hasnt "degraded: nothing of member 1 read" "^member 1: "
	has "degraded: dirty keys live through member 0's copies, the clean one on member 1 dead" "^index: 1 level, 1 node, 2 live keys \(8 KiB in 1 bucket\), 1 dead keys \(1 failed-member\)$"
	has "degraded: --data reads member 0's copies only" "^data: 2 keys verified against their checksums \(8 KiB read\), 0 mismatched"
	has "degraded: the dirty data still counted" "^dirty: 16 sectors \(8 KiB\) in total, in 1 slot$"
	hasnt "degraded: nothing lost" "^(lost|error):"
	has "degraded: consistent" "^cache set of dg0 \(2 members\): consistent$"
	run 0 "degraded: the failed member named -" bcache-check dg0 -
	has "degraded: - is the failed member" "^note: cache set: member 1 failed"
	run 3 "degraded: the failed member's device is refused" bcache-check dg0 dg1
	has "degraded: its superblock is out of date" "^bcache-check: dg1 is member 1, which its set marks failed \(in member 0's superblock\): its own superblock is out of date; leave it out \(or name it -\)$"
	run 3 "degraded: dump refuses it too, in any order" bcache-dump dg1 dg0
	has "degraded: dump says why" "dg1 is member 1, which its set marks failed"
	run 3 "degraded: more - than members not named" bcache-check dg0 - -
	has "degraded: too many -" "dg0 is member 0 of a set of 2 members: 2 named -, but 1 member is not named$"
	run 0 "degraded: dump" bcache-dump dg0
	has "degraded: dump names the failed member" "^# -: dm-bcache cache .*, member 1 of 2, failed \(member 0's superblock marks it\): not read$"
	has "degraded: dump of a dirty key with a live copy" "^key 0/1 0 8 0:5\+0,1:5\+0 0,0 dirty,csum live$"
	has "degraded: dump of a clean key on the failed member" "^key 0/1 8 16 1:6\+0 0 csum dead:failed-member$"
	has "degraded: no buckets of the failed member" "^member 1 -$"
	eq "degraded: member 0's live copies" "live_sectors 16 dirty_sectors 16" \
		"$(grep -E '^(live|dirty)_sectors' out | tr '\n' ' ' | sed 's/ $//')"

	# a dirty key whose every copy was on the failed member: lost
	set2 lo dirty1 fail1
	run 1 "degraded: dirty data only on the failed member" bcache-check -d lo0
	has "degraded: the lost key is an error" "^error: index key \(slot 0 epoch 1, sectors 8-16\): dirty, and every copy of it was on a lost member \(member 1\): its data is gone, reads of it fail"
	has "degraded: counted apart" "^index: 1 level, 1 node, 2 live keys \(8 KiB in 1 bucket\), 1 lost key, 0 dead keys$"
	has "degraded: how much is lost" "^lost: slot 0 \(uuid f1f1f1f1-0000-4000-8000-000000000001\): 8 sectors \(4 KiB\) of dirty data were only on lost members: gone"
	has "degraded: not counted as dirty" "^dirty: 16 sectors \(8 KiB\) in total, in 1 slot$"
	sum=$(md5sum <lo0)
	run 1 "degraded: --repair is refused" bcache-check -r lo0
	has "degraded: repair refusal" "^repair: refused: repairing a cache set of several devices is not supported yet; nothing was written$"
	eq "degraded: the refused repair wrote nothing" "$sum" "$(md5sum <lo0)"
	run 0 "degraded: dump of a lost key" bcache-dump --btree lo0
	has "degraded: the lost key kept" "^key 0/1 8 16 1:6\+0 0 dirty,csum lost$"
	truncate -s 16M lo-origin
	run 3 "degraded: bcache-writeback refuses a set" \
		bcache-writeback -n -u f1f1f1f1-0000-4000-8000-000000000001 lo0 lo-origin
	has "degraded: writeback says why" "writing back a set of several devices is not supported yet"

	# copies on member 0 reused (written back) and on the failed member:
	# dead, not lost
	set2 sf stale0 fail1
	run 0 "degraded: no live copy left, one of them reused" bcache-check sf0
	has "degraded: dead, not lost" "^index: 1 level, 1 node, 0 live keys .*, 3 dead keys \(2 stale-gen, 1 failed-member\)$"

	# a member missing that its set does not mark failed: named -, read
	# as the next open (which marks it) leaves the set
	sum=$(md5sum <m0)
	run 0 "missing: an active member named -" bcache-check m0 -
	has "missing: noted" "^note: cache set: member 1 is named -, but member 0's superblock has it active: the next open marks it failed"
	has "missing: checked as degraded" "^index: 1 level, 1 node, 2 live keys .*, 1 dead keys \(1 failed-member\)$"
	eq "missing: nothing written" "$sum" "$(md5sum <m0)"
	run 0 "missing: dump" bcache-dump m0 -
	has "missing: dump says so" "^# -: .*, member 1 of 2, named -: active in member 0's superblock, the next open marks it failed"

	# --- a member removed: REMOVED in member 0's table once a GC pass
	# found no key pointing to it (the copies on it dropped); it keeps
	# its index, and a set of two left with one member is still a set ---
	set2 rm removed1
	run 0 "removed: member 0 alone, member 1 removed" bcache-check -d rm0
	has "removed: still a set of two, one member left" "^cache set: 2 members \(1 removed\), degraded: one member left; member 0's superblock \(seq 3\) decides$"
	has "removed: noted" "^note: cache set: member 1 was removed \(member 0's superblock marks it: no key pointed to it any more\): not named, not read; it keeps its index$"
	hasnt "removed: nothing of member 1 read" "^member 1: "
	has "removed: member 0's superblock prefixed as a member's" "^member 0: bucket array: copy 0 \(current\) ok"
	has "removed: the keys on member 0" "^index: 1 level, 1 node, 2 live keys \(8 KiB in 1 bucket\), 0 dead keys$"
	has "removed: --data reads member 0's copies" "^data: 2 keys verified against their checksums \(8 KiB read\), 0 mismatched"
	has "removed: dirty data counted" "^dirty: 16 sectors \(8 KiB\) in total, in 1 slot$"
	hasnt "removed: no error" "^(error|lost):"
	has "removed: consistent, a set of two" "^cache set of rm0 \(2 members\): consistent$"
	run 3 "removed: its device is refused" bcache-check rm0 rm1
	has "removed: as the kernel refuses it" "^bcache-check: rm1 is member 1, which its set removed \(in member 0's superblock\): it is no member any more; leave it out, or make-bcache --add it again$"
	run 3 "removed: dump refuses it too, in any order" bcache-dump rm1 rm0
	has "removed: dump says why" "rm1 is member 1, which its set removed"
	run 3 "removed: not named - either" bcache-check rm0 -
	has "removed: - refused" "rm0 is member 0 of a set of 2 members: 1 named -, but 0 members are not named \(a member its set removed is not named, not even -\)$"
	run 0 "removed: dump" bcache-dump rm0
	has "removed: dump names the removed member" "^# -: dm-bcache cache .*, member 1 of 2, removed \(member 0's superblock marks it: no key pointed to it any more\): not named, not read$"
	has "removed: dump describes the set" "^# cache set: 2 members \(1 removed\), degraded: one member left$"
	has "removed: dump of a key with its copy on member 0 only" "^key 0/1 0 8 0:5\+0 0 dirty,csum live$"
	eq "removed: no key on member 1" 0 "$(count '^key .*[ ,]1:[0-9]')"
	has "removed: no buckets of it" "^member 1 -$"
	has "removed: said so" "^# buckets: a removed member: not read$"
	run 0 "removed: super-show says removed" bcache-super-show rm0
	has "removed: member.1.state" "^member.1.state	removed$"
	hasnt "removed: member 0 joins nothing" "^sb.joining"

	# a key still pointing to the removed member: none should
	set2 rk removed1 keepptrs
	run 1 "removed: keys still pointing to it" bcache-check -d rk0
	eq "removed: each named" 3 "$(count "^error: index key \(slot 0 epoch 1, sectors [0-9]+-[0-9]+\): points to member 1, which its set removed \(once no key pointed to it\): none should")"
	has "removed: judged as the kernel does (stale)" "^index: 1 level, 1 node, 2 live keys \(8 KiB in 1 bucket\), 1 dead keys \(1 failed-member\)$"
	has "removed: its copies not read" "^data: 2 keys verified against their checksums \(8 KiB read\), 0 mismatched"
	has "removed: inconsistent" "^cache set of rk0 \(2 members\): inconsistent$"
	sum=$(md5sum <rk0)
	run 1 "removed: --repair refused (a set of several)" bcache-check -r rk0
	has "removed: repair refusal" "^repair: refused: repairing a cache set of several devices is not supported yet; nothing was written$"
	eq "removed: the refused repair wrote nothing" "$sum" "$(md5sum <rk0)"
	run 1 "removed: dump of keys pointing to it is exit 1" bcache-dump -b rk0
	has "removed: dump says so" "^# index: 3 key\(s\) point to member 1, which its set removed"
	has "removed: dump of such a key" "^key 0/1 8 16 1:6\+0 0 csum dead:failed-member$"

	# gaps: member 1 removed, members 0 and 2 active
	set3 gp removed1
	run 0 "gap: members 0 and 2, member 1 removed" bcache-check -d gp2 gp0
	has "gap: the set" "^cache set: 3 members \(1 removed\), all named; member 0's superblock \(seq 3\) decides$"
	has "gap: member 2 checked" "^member 2: bucket array: copy 0 \(current\) ok"
	hasnt "gap: nothing of member 1" "^member 1: "
	has "gap: every key live" "^index: 1 level, 1 node, 3 live keys \(12 KiB in 3 buckets\), 0 dead keys$"
	has "gap: --data reads both members" "^data: 3 keys verified against their checksums \(20 KiB read\), 0 mismatched"
	has "gap: consistent" "^cache set of gp0 \(3 members\): consistent$"
	run 3 "gap: member 2 must be named" bcache-check gp0
	has "gap: what is missing" "gp0 is member 0 of a set of 3 members: 1 member is missing"
	run 0 "gap: dump" bcache-dump gp0 gp2
	has "gap: dump of a key on members 0 and 2" "^key 0/1 0 8 0:5\+0,2:5\+0 0,0 dirty,csum live$"
	has "gap: member 1's header" "^# -: .*, member 1 of 3, removed"
	has "gap: member 2's header" "^# gp2: .*, member 2 of 3, clean, seq 3$"
	has "gap: member 2's buckets" "^member 2 gp2$"
	has "gap: the set described" "^# cache set: 3 members \(1 removed\), all named$"

	# a set of three left with member 0: still a set
	set3 ol removed1 removed2
	run 0 "one left: members 1 and 2 removed" bcache-check -d ol0
	has "one left: said" "^cache set: 3 members \(2 removed\), degraded: one member left; "
	has "one left: consistent" "^cache set of ol0 \(3 members\): consistent$"
	run 0 "one left: dump" bcache-dump ol0
	has "one left: dump says so" "^# cache set: 3 members \(2 removed\), degraded: one member left$"

	# --- a member make-bcache --add formatted (seq 0): it joins at the
	# next open, at an index no key can point to ------------------------
	join rm0 jn
	run 0 "join: super-show of the new member" bcache-super-show jn
	has "join: at the removed index" "^sb.dev_idx	1$"
	has "join: seq 0" "^sb.seq	0$"
	has "join: seq 0 explained" "^sb.joining	yes: make-bcache --add formatted this member, no open set has written it; it joins its set at the next open"
	run 0 "join: at member 1's (removed) index" bcache-check -d rm0 jn
	has "join: its superblock checked" "^member 1: superblock: ok: version 3"
	hasnt "join: nothing more of it read" "^member 1: bucket array"
	has "join: the set as the next open has it" "^cache set: 2 members \(1 joining\), all named; member 0's superblock \(seq 3\) decides$"
	has "join: noted" "^note: cache set: member 1 \(jn\) joins at the next open: make-bcache --add formatted it \(superblock seq 0\) at an index member 0's superblock marks removed; only its superblock is checked"
	has "join: consistent" "^cache set of rm0 \(2 members\): consistent$"
	run 0 "join: named first" bcache-check jn rm0
	run 0 "join: dump" bcache-dump rm0 jn
	has "join: dump says so" "^# jn: dm-bcache cache .*, member 1 of 2, joins at the next open \(make-bcache --add formatted it, seq 0, at an index member 0's superblock marks removed\): only its superblock is read$"
	has "join: dump describes the set" "^# cache set: 2 members \(1 joining\), all named$"
	has "join: no buckets of it" "^# buckets: a member that joins at the next open: not read$"
	run 3 "join: alone" bcache-check jn
	has "join: member 0 missing" "jn is member 1 of a set of 2 members: member 0 is not named"
	run 3 "join: with the removed member's device" bcache-check rm0 rm1 jn
	has "join: two devices at one index" "rm1 and jn are both member 1 of the set"
	# at a new index of a set of two: member 2
	join m0 jm
	run 0 "join: at a new index" bcache-check m0 jm m1
	has "join: a set of three" "^cache set: 3 members \(1 joining\), all named; "
	has "join: the index was unused" "^note: cache set: member 2 \(jm\) joins .* marks unused; "
	run 3 "join: the others must be named" bcache-check m0 jm
	has "join: what is missing" "m0 is member 0 of a set of 3 members: 1 member is missing"
	# joining a set whose member 1 failed: member 2, still degraded
	join dg0 jd
	run 0 "join: a degraded set" bcache-check dg0 - jd
	has "join: still degraded (member 1 failed)" "^cache set: 3 members \(1 joining\), degraded; "
	# a set of three left with member 0: the first removed index
	join ol0 jo
	run 0 "join: a set of three with one member left" bcache-check ol0 jo
	has "join: one removed, one joining" "^cache set: 3 members \(1 removed, 1 joining\), all named; "
	rm -f jo2
	truncate -s 64M jo2
	run 0 "join: make-bcache's summary" make-bcache --add ol0 jo2
	has "join: member 1 of the set's 3" "^  member        1 of 3$"
	# keys pointing to the index it takes: none should
	join rk0 jk
	run 1 "join: keys pointing to its index" bcache-check rk0 jk
	eq "join: each named" 3 "$(count "^error: index key .*: points to member 1, which joins the set at the next open")"
	# its index in use: a set of the same uuid whose member 1 is active
	U=5e75e75e-0000-4000-8000-000000000005
	rm -f ua0 ua1 ub0 ub1
	truncate -s 64M ua0 ua1 ub0 ub1
	if ! make-bcache -q --cset-uuid $U ua0 ua1 >/dev/null ||
	   ! make-bcache -q --cset-uuid $U ub0 ub1 >/dev/null ||
	   ! fixture set ub0 ub1 removed1 >/dev/null; then
		bad "two sets of one uuid"
		exit 1
	fi
	join ub0 uj
	run 3 "join: its index in use" bcache-check ua0 uj
	has "join: as the kernel refuses it" "^bcache-check: uj is a new member \(superblock seq 0: make-bcache --add formatted it\) at index 1, which member 0's superblock has active: the index is in use; format it again with make-bcache --add$"
fi

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
