# An open reads the root and what the replay needs, not the whole index
# (issue #13): every checkpoint writes which buckets hold nodes, data and
# dirty data, and each origin's dirty sectors (BCH_BUCKET_STATE), and the
# open starts from them. With 4 KiB buckets, 8192 dirty 4 KiB writes make
# an index of about a hundred leaves. After a crash that follows a
# checkpoint, the open must read at most the root and a leaf and find
# every dirty sector (the count and the data); after a crash amid a
# checkpoint, only the leaves of the keys the journal replays; after a
# clean close (which writes the dirty data back), again the root alone.
# bcache-check holds the states against the index each time, and after
# the clean close finds no node bucket the index does not name, such as
# those of the checkpoint the crash cut short.
# disks: cache=96M origin=64M
# boots: 3
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-00000000013b
# fio over 32 MiB at offset $3 MiB: random 4k writes, then their check.
wr() {
	fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k --size=32M \
		--offset="$3"M --io_size="$1" --randrepeat=1 --randseed="$2" \
		--direct=1 --end_fsync=1 --verify=crc32c --do_verify=0 \
		--output=/tmp/w"$2"
}
verify() {
	fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k --size=32M \
		--offset="$3"M --io_size="$1" --randrepeat=1 --randseed="$2" \
		--direct=1 --verify=crc32c --verify_only --output=/tmp/v"$2"
}
# Create table c, noting the status of the open before the table
# resumes (a resumed one writes dirty data back at once, reading leaves).
create() {
	dmsetup create --notable c &&
		dmsetup load c --table "$(dmb_table c "$@")" &&
		dmsetup status --inactive c >/tmp/open-status &&
		dmsetup resume c && dmsetup mknodes c
}
# A status field of the open (dmb_stat's, from the status create kept).
open_stat() {
	local i=4 f
	for f in $DMB_FIELDS; do
		[ "$f" = "$1" ] && cut -d' ' -f$i /tmp/open-status && return
		i=$((i + 1))
	done
}
dmb_load
case $BOOT in
1)
	check "format with 4k buckets" make-bcache -q -b 4k "$cache"
	check "create in writeback" dmb_create c "$cache" "$origin" \
		origin_uuid $U cache_mode writeback
	check "writeback off" dmsetup message c 0 writeback_running 0
	check "8192 dirty 4k writes" wr 32M 1 0
	check "gc and checkpoint" dmsetup message c 0 gc
	dirty=$(dmb_stat c dirty)
	info "dirty $dirty sectors, $(dmb_stat c btree_nodes) nodes in memory"
	check_eq "all of it dirty" 65536 "$dirty"
	crash_now
	;;
2)
	check "bcache-check after the crash" bcache-check "$cache"
	# Counted on disk: with node_cache_mb=0 few stay in memory.
	nodes=$(bcache-check "$cache" | sed -n 's/.*index: [0-9]* levels*, \([0-9]*\) node.*/\1/p')
	check "an index of many nodes (${nodes:-none})" test "${nodes:-0}" -ge 40
	check "create after the crash" create "$cache" "$origin" \
		origin_uuid $U cache_mode writeback
	check "writeback off" dmsetup message c 0 writeback_running 0
	info "the open: $(cat /tmp/open-status)"
	n=$(open_stat nodes_read)
	check "the open read at most 2 nodes ($n)" test "$n" -le 2
	check_eq "the dirty count came back" 65536 "$(open_stat dirty)"
	check_eq "... and went down by what was written back since" 65536 \
		$(($(dmb_stat c dirty) + $(dmb_stat c written_back)))
	check "the dirty data reads back" verify 32M 1 0
	check "nodes were read for it" test "$(dmb_stat c nodes_read)" -ge 40
	# A few keys in the journal, a checkpoint under way, a crash.
	check "16 more dirty writes" wr 64k 2 32
	dmsetup message c 0 gc &
	sleep 0.2
	crash_now
	;;
3)
	n=$(dmb_journal_entries "$cache")
	check "bcache-check after the second crash" bcache-check "$cache"
	# what is dirty, as the checker counts it: the oracle for the counts
	dc=$(bcache-check "$cache" | sed -n 's/^dirty: slot 0 ([^)]*): \([0-9]*\) sectors.*/\1/p')
	info "bcache-check counts ${dc:-no} dirty sectors"
	check "it counts some" test "${dc:-0}" -gt 128
	check "create after it" create "$cache" "$origin" \
		origin_uuid $U cache_mode writeback
	check "writeback off" dmsetup message c 0 writeback_running 0
	check "the kernel replayed the $n journal entries bcache-check found" dmb_replayed "$n"
	info "the open: $(cat /tmp/open-status)"
	r=$(open_stat nodes_read)
	k=$(dmesg | sed -n 's/.*journal replayed: [0-9]* entries, \([0-9]*\) keys.*/\1/p' | tail -1)
	check "the open read at most the root, a level below and a leaf per replayed key ($r, ${k:-0} keys)" \
		test "$r" -le $((${k:-0} + 2))
	d=$(open_stat dirty)
	check "the open's dirty count is at least bcache-check's ($d)" test "$d" -ge "$dc"
	check "the dirty data reads back" verify 32M 1 0
	check "the last writes read back" verify 64k 2 32
	check "a gc pass" dmsetup message c 0 gc
	info "status: $(dmsetup status c)"
	check_eq "the pass counts exactly (with what was written back since)" "$dc" \
		$(($(dmb_stat c dirty) + $(dmb_stat c written_back)))
	check "clean close: writes the dirty data back" dmb_remove c
	check "bcache-check: consistent, no node bucket leaked" bcache-check "$cache"
	check "reopen" create "$cache" "$origin" origin_uuid $U
	r=$(open_stat nodes_read)
	check "the clean open read at most 2 nodes ($r)" test "$r" -le 2
	check "the data reads back after the clean reopen" verify 32M 1 0
	check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
	check "remove" dmb_remove c
	check "bcache-check at the end" bcache-check "$cache"
	;;
esac
