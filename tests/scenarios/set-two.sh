# A cache set of two devices (format version 3, issue #14 step 3): one
# table names both members, in any order; fills, writethrough writes and
# dirty writes spread over both; the index, journal and UUID table (on
# member 0) name data on member 1, and everything reads back after the
# set is closed and opened again, and after a crash. A table naming one
# member, a device twice, or a device of another set is refused. A
# version 2 cache cannot be a set: make-bcache says so.
# disks: c0=48M c1=48M other=32M origin=128M origin2=32M
# boots: 2
# timeout: 600
. /tests/guest/dmb.sh

c0=$(disk c0)
c1=$(disk c1)
other=$(disk other)
origin=$(disk origin)
origin2=$(disk origin2)
A=5e750000-0000-4e75-8e75-5e75e75e75e7
B=5e750000-0000-4e75-8e75-000000000002
MiB=1048576


dmb_load
if [ "$BOOT" = 2 ]; then
	# Version 2: boot 1 formatted nothing.
	bcache-super-show "$c0" >/dev/null 2>&1 || exit 0
	check "bcache-check of the set after the crash, every copy read" \
		bcache-check -q --data "$c1" "$c0"
	check "bcache-dump: dirty keys with a copy on each member" sh -c \
		"bcache-dump --btree '$c0' '$c1' | grep -Eq '^key .* [01]:[0-9]+\+[0-9]+,[01]:[0-9]+\+[0-9]+ [0-9]+,[0-9]+ dirty'"
	check_fails "bcache-check of member 0 alone refused" bcache-check -q "$c0"
	check "after the crash: the set opens, members in the other order" \
		dmb_create c "$c1,$c0" "$origin" origin_uuid $A cache_mode writeback
	check "the crash was unclean" dmesg_has "not shut down cleanly"
	check "member 1 was a superblock write ahead of member 0" \
		dmesg_has "one superblock write ahead of member 0"
	check "every acknowledged dirty write reads back" \
		dmb_io 64 16 randwrite 4k-64k --verify=crc32c --verify_only --randseed=3
	check "the writethrough data too" dmb_io 0 32 randwrite 4k-64k --verify=crc32c \
		--verify_only
	check "flush" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
	dd if="$c1" of=/tmp/sb1.old bs=4096 skip=1 count=1 iflag=direct 2>/dev/null
	check "remove" dmb_remove c
	# Member 1 from an older image (its superblock of before the remove):
	# not the set as it last ran.
	check "an older superblock of member 1 put back" sh -c \
		"dd if=/tmp/sb1.old of='$c1' bs=4096 seek=1 count=1 oflag=direct conv=notrunc"
	dmesg -c >/dev/null
	check_fails "a member behind member 0 refused" \
		dmb_create c "$c0,$c1" "$origin" origin_uuid $A
	check "... and said so" dmesg_has "not at its set's last superblock write"
	check "the origin holds the dirty writes" fio --name=io --filename="$origin" \
		--direct=1 --offset=$((64 * MiB)) --size=$((16 * MiB)) --rw=randwrite \
		--bsrange=4k-64k --verify=crc32c --verify_only --randseed=3 --output=/tmp/io
	exit 0
fi

if ! make-bcache -q -b 128k "$c0" "$c1" 2>/tmp/mk; then
	check "version 2: a set of several devices refused" \
		grep -q "needs format version 3" /tmp/mk
	exit 0
fi
pass "format a set of two"
check "and another cache" make-bcache -q -b 128k "$other"
check_eq "member 0" 0 "$(bcache-super-show "$c0" | awk -F'\t' '$1 == "sb.dev_idx" { print $2 }')"
check_eq "member 1" 1 "$(bcache-super-show "$c1" | awk -F'\t' '$1 == "sb.dev_idx" { print $2 }')"

len=$(blockdev --getsz "$origin")
dmb_refused "member 0 alone" "must name every member" "0 $len bcache $c0 $origin"
dmb_refused "member 1 alone" "names no member 0" "0 $len bcache $c1 $origin"
dmb_refused "a member named twice" "named twice" "0 $len bcache $c0,$c0 $origin"
dmb_refused "a cache of another set" "different cache sets" "0 $len bcache $c0,$other $origin"
dmb_refused "a cache of another set too" "different cache sets" \
	"0 $len bcache $c0,$c1,$other $origin"
dmb_refused "member 0 missing" "member 0 of a cache set cannot be missing" \
	"0 $len bcache -,$c1 $origin"

check "create with both members" dmb_create c "$c0,$c1" "$origin" origin_uuid $A
check "opened on 2 devices, logged" dmesg_has "on 2 devices"
total=$(dmb_stat c buckets | cut -d/ -f2)
info "buckets of the set: $total"
check "the set's buckets are both members'" test "$total" -gt 600
check_eq "the table names both" 2 "$(dmsetup table c | cut -d' ' -f4 | tr ',' '\n' | wc -l)"
check "no bypass" dmsetup message c 0 sequential_cutoff 0

# A second origin's table names the set in the other order: the same set.
check "a second table on the set" dmb_create d "$c1,$c0" "$origin2" origin_uuid $B
check "no bypass" dmsetup message d 0 sequential_cutoff 0
check_eq "the same set's buckets" "$total" "$(dmb_stat d buckets | cut -d/ -f2)"
check "... a member left out is refused while the set is open" sh -c \
	"! dmsetup create bad --table '0 $(blockdev --getsz "$origin2") bcache $c1 $origin2'"
dmsetup remove bad 2>/dev/null

f0=$(dmb_stat c filled_sectors)
check "writethrough writes, 4k-64k, read back" dmb_io 0 32 randwrite 4k-64k --verify=crc32c
check "read misses, 4k-1m" dmb_io 32 24 randread 4k-1m
check "they filled" test "$(dmb_stat c filled_sectors)" -gt $((f0 + 16384))
check "the second origin fills too" fio --name=io --filename=/dev/mapper/d --direct=1 \
	--rw=read --bs=64k --size=16M --output=/tmp/io2
check "remove the second table" dmb_remove d
check "remove" dmb_remove c
d0=$(dmb_data_bytes "$c0")
d1=$(dmb_data_bytes "$c1")
info "data bytes on member 0: $d0, on member 1: $d1"
check "member 0 holds data" test "$d0" -gt $((8 * MiB))
check "member 1 holds data" test "$d1" -gt $((8 * MiB))
check "bcache-super-show: member 0 clean" sh -c \
	"bcache-super-show '$c0' | grep -q '^sb.flags	clean'"
check "bcache-super-show: member 1 clean" sh -c \
	"bcache-super-show '$c1' | grep -q '^sb.flags	clean'"
check_eq "both superblocks at one seq" \
	"$(bcache-super-show "$c0" | awk -F'\t' '$1 == "sb.seq" { print $2 }')" \
	"$(bcache-super-show "$c1" | awk -F'\t' '$1 == "sb.seq" { print $2 }')"

check "open again, members in the other order" dmb_create c "$c1,$c0" "$origin" \
	origin_uuid $A
h0=$(dmb_stat c read_hits)
check "the writes read back" dmb_io 0 32 randwrite 4k-64k --verify=crc32c --verify_only
check "... as hits" test "$(dmb_stat c read_hits)" -gt $((h0 + 100))

check "writeback" dmsetup message c 0 cache_mode writeback
check "held dirty" dmsetup message c 0 writeback_running 0
check "dirty writes, 4k-64k, fsync'd" dmb_io 64 16 randwrite 4k-64k --verify=crc32c \
	--do_verify=0 --randseed=3 --end_fsync=1
check "dirty" test "$(dmb_stat c dirty)" -gt 16384
# The crash comes between the two members' superblock writes: member 1's
# is written, member 0's waits (member 0 is written last).
echo 5000 >/sys/module/dm_bcache/parameters/sb_member_pause_ms
dmsetup message c 0 checkpoint &
sleep 3
info "crash with $(dmb_stat c dirty) dirty sectors, amid a superblock write"
crash_now
