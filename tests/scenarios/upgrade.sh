# bcache-check --upgrade: a version 2 cache made version 3 offline, its
# cached data kept, dirty data included. Boot 1 formats version 2 (whatever
# DMB_FORMAT_VERSION says), fills clean data (read misses) and writes dirty
# data in writeback, takes a checkpoint, writes a little more dirty data (in
# the journal only), and crashes. Boot 2 checks the crashed cache, upgrades
# it (the journal replayed into the new index), and opens it with the
# module: status says format 3, the dirty data is all there and reads back,
# the clean data hits, a flush writes the dirty data to the origin, and the
# cache checks clean.
# disks: cache=64M origin=64M
# boots: 2
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0b9a4ade-0000-4000-8000-00000000a002

# dirty DEV SEED OFF SIZE [FIO...]: fsync'd 4k-64k random writes over
# [OFF, +SIZE) MiB of DEV, fio's crc32c in each block (a verify pass
# with the same arguments reads them back, through the target or from the
# origin). Nothing in the origin's first MiB: its first 4 KiB is what the
# slot's fingerprint covers.
dirty() {
	local dev="$1" seed="$2" off="$3" size="$4"
	shift 4
	fio --name=d --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 \
		--offset=$((off * 1048576)) --size=$((size * 1048576)) --rw=randwrite \
		--bsrange=4k-64k --verify=crc32c --randseed="$seed" "$@" --output=/tmp/fio
}

# the clean range: [16, 32) MiB, the origin's pattern
clean_cmp() {
	dd if="$1" of=/tmp/a bs=1M skip=16 count=16 iflag=direct 2>/dev/null &&
		dd if="$origin" of=/tmp/b bs=1M skip=16 count=16 iflag=direct 2>/dev/null &&
		cmp /tmp/a /tmp/b
}

# the live keys of bcache-dump, sorted: slot/epoch start end where gen flags
live_keys() {
	bcache-dump --btree "$1" | awk '$1 == "key" && $NF == "live" { print $2, $3, $4, $5, $6, $7 }' |
		sort
}

sb_field() {
	bcache-super-show "$1" | awk -F'\t' -v f="$2" '$1 == f { print $2 }'
}

# dirty_at_open N: dirty + written_back, from one status line: what was
# dirty at the open (writeback starts at once). A key written back leaves
# dirty a moment before it counts in written_back: up to 10 tries for N.
dirty_at_open() {
	local i f st d w n=0
	while [ $n -lt 10 ]; do
		n=$((n + 1))
		st=$(dmsetup status c)
		i=4
		for f in $DMB_FIELDS; do
			[ "$f" = dirty ] && d=$(echo "$st" | cut -d' ' -f$i)
			[ "$f" = written_back ] && w=$(echo "$st" | cut -d' ' -f$i)
			i=$((i + 1))
		done
		[ $((d + w)) = "$1" ] && break
	done
	echo $((d + w))
}

dmb_load

if [ "$BOOT" = 2 ]; then
	check_eq "the crashed cache is version 2" 2 "$(sb_field "$cache" sb.version)"
	check "bcache-check of the crashed cache" sh -c "bcache-check '$cache' >/tmp/chk"
	while IFS= read -r line; do info "  $line"; done </tmp/chk
	check "... not shut down cleanly" grep -q '^superblock: not shut down cleanly' /tmp/chk
	check "... journal entries to replay" grep -Eq '^journal: [0-9]+ entr(y|ies) \(seq' /tmp/chk
	dirty2=$(sed -n 's/^dirty: \([0-9]*\) sectors .* in total.*/\1/p' /tmp/chk)
	info "dirty sectors in the version 2 cache: ${dirty2:-none}"
	check "... dirty data in it" test "${dirty2:-0}" -gt 0
	live_keys "$cache" >/tmp/keys2
	info "$(wc -l </tmp/keys2) live keys, $(grep -c ' dirty$' /tmp/keys2) dirty"

	sum=$(md5sum <"$cache")
	check "bcache-check --upgrade --dry-run" sh -c "bcache-check --upgrade --dry-run '$cache' >/tmp/dry"
	check "... would write" grep -q '^upgrade: would write ' /tmp/dry
	check_eq "... wrote nothing" "$sum" "$(md5sum <"$cache")"
	check "bcache-check --upgrade" sh -c "bcache-check --upgrade '$cache' >/tmp/up"
	while IFS= read -r line; do info "  $line"; done </tmp/up
	check "... upgraded" grep -q "^$cache: upgraded to format version 3$" /tmp/up
	check_eq "bcache-super-show: version 3" 3 "$(sb_field "$cache" sb.version)"
	check_eq "... member 0, active" "0 active" \
		"$(sb_field "$cache" sb.dev_idx) $(sb_field "$cache" member.0.state)"
	check "bcache-check of the upgraded cache" sh -c "bcache-check '$cache' >/tmp/chk3"
	check "... version 3" grep -q '^superblock: ok: version 3' /tmp/chk3
	check "... the journal empty" grep -q '^journal: empty' /tmp/chk3
	check "... the same dirty data" grep -q "^dirty: $dirty2 sectors .* in total" /tmp/chk3
	live_keys "$cache" >/tmp/keys3
	check "bcache-dump: the same live keys" cmp /tmp/keys2 /tmp/keys3
	check "--upgrade again: refused" sh -c "bcache-check --upgrade '$cache' >/tmp/again; test \$? = 3"
	check "... already version 3" grep -q 'already format version 3' /tmp/again

	dmesg -c >/dev/null
	check "create over the upgraded cache, writeback" \
		dmb_create c "$cache" "$origin" origin_uuid $U cache_mode writeback
	check_eq "status: format 3" 3 "$(dmb_stat c format)"
	check_eq "all the dirty data there at the open" "$dirty2" "$(dirty_at_open "$dirty2")"
	check "... nothing replayed" dmb_replayed 0
	check_fails "... nothing invalidated" dmesg_has "cached data invalidated"
	check "no bypass" dmsetup message c 0 sequential_cutoff 0
	h=$(dmb_stat c read_hits)
	m=$(dmb_stat c read_misses)
	check "the dirty writes read back" dirty /dev/mapper/c 7 1 8 --verify_only
	check "... the journal's too" dirty /dev/mapper/c 8 40 1 --verify_only
	check "the clean data reads back (the origin's)" clean_cmp /dev/mapper/c
	info "reads: $(($(dmb_stat c read_hits) - h)) hits, $(($(dmb_stat c read_misses) - m)) misses"
	check "... from the cache: hits" test "$(dmb_stat c read_hits)" -gt "$h"
	check "flush" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
	# Keys from version 2 have no checksum: a read of their fragments is
	# not rewritten as one checksummed extent (its fresh checksum would
	# certify data nobody verified); fragments written since are.
	r=$(dmb_stat c rewritten)
	check "a read of the upgraded keys' fragments, 1 MiB at a time" \
		dd if=/dev/mapper/c of=/dev/null bs=1M skip=1 count=8 iflag=direct status=none
	check_eq "... not rewritten" "$r" "$(dmb_stat c rewritten)"
	check "8 MiB of writes since, 4k-64k" dirty /dev/mapper/c 9 24 8 \
		--do_verify=0 --end_fsync=1
	check "flush" dmsetup message c 0 flush
	check "a read of their fragments" \
		dd if=/dev/mapper/c of=/dev/null bs=1M skip=24 count=8 iflag=direct status=none
	info "rewritten: $r before, $(dmb_stat c rewritten) after"
	check "... rewritten" test "$(dmb_stat c rewritten)" -gt "$r"
	check "they read back" dirty /dev/mapper/c 9 24 8 --verify_only
	check "remove" dmb_remove c
	check "the origin holds the dirty writes" dirty "$origin" 7 1 8 --verify_only
	check "... the journal's too" dirty "$origin" 8 40 1 --verify_only
	check "bcache-check at the end" sh -c "bcache-check '$cache' >/tmp/end"
	check "... version 3, consistent" grep -q "^$cache: consistent$" /tmp/end
	check "... nothing dirty" grep -q '^dirty: none' /tmp/end
	exit 0
fi

# Version 2, whatever the suite formats: make-bcache itself, not
# tests/guest/init's wrapper.
check "format version 2" /usr/local/sbin/make-bcache -q --format-version 2 "$cache"
check_eq "bcache-super-show: version 2" 2 "$(sb_field "$cache" sb.version)"
check "origin pattern" fio --name=p --filename="$origin" --rw=write --bs=1M --size=64M \
	--buffer_pattern=0x5a5a1234 --direct=1 --output=/tmp/p
check "create, writeback" dmb_create c "$cache" "$origin" origin_uuid $U cache_mode writeback
check_eq "status: format 2" 2 "$(dmb_stat c format)"
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "held dirty" dmsetup message c 0 writeback_running 0
check "clean data: read misses fill [16, 32) MiB" \
	fio --name=r --filename=/dev/mapper/c --direct=1 --rw=randread --bsrange=4k-64k \
	--offset=16M --size=16M --randrepeat=1 --output=/tmp/r
check "dirty data: 8 MiB of writes at 1 MiB, fsync'd" dirty /dev/mapper/c 7 1 8 \
	--do_verify=0 --end_fsync=1
info "filled $(dmb_stat c filled_sectors) sectors, $(dmb_stat c dirty) dirty"
check "dirty" test "$(dmb_stat c dirty)" -gt 0
# the checkpoint holds all that; what follows is in the journal only
check "checkpoint" dmsetup message c 0 checkpoint
check "settle" dmb_settle c
check "more dirty data: 1 MiB at 40 MiB, fsync'd" dirty /dev/mapper/c 8 40 1 \
	--do_verify=0 --end_fsync=1
info "status: $(dmsetup status c)"
jused=$(dmb_stat c journal_used)
check "the journal holds it (journal_used $jused)" test "${jused%%/*}" -gt 0
crash_now
