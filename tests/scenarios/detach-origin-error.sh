# An origin that cannot be read when its table is removed: its slot gets
# no fingerprint then, and the next attach cannot check that the origin
# is the one it left. With dirty data in the slot that is no reason to
# drop it: the writes not yet written back would be lost, and reads would
# find the origin's older data. So dirty data is kept (logged "dirty data
# kept, the origin not checked"), reads back and is written back; a slot
# with clean data only is still dropped, as before. The same holds when
# the origin cannot be read at the attach itself.
# disks: cache=32M origin=32M
# timeout: 300
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=de7ac400-0000-4e00-8e00-00000000e001
osz=$(blockdev --getsz "$origin")
o=/dev/mapper/o

# origin TABLE: the origin's dm device now maps TABLE.
origin_table() {
	dmsetup suspend o && dmsetup load o --table "$1" && dmsetup resume o
}

# writes SEED [FIO...]: 8 MiB of writes through c, 4k-64k, fsync'd.
writes() {
	local seed="$1"
	shift
	dmb_io 0 8 randwrite 4k-64k --verify=crc32c --randseed="$seed" "$@"
}

# open: the table over the origin's dm device, writeback, no bypass.
open() {
	dmb_create c "$cache" $o origin_uuid $U cache_mode writeback &&
		dmsetup message c 0 sequential_cutoff 0
}

# close_unread: the table removed while the origin fails every IO.
close_unread() {
	origin_table "0 $osz error" && dmesg -c >/dev/null && dmb_remove c
}

dmb_load
check "format" make-bcache -q "$cache"
check "origin on a dm table" dmsetup create o --table "0 $osz linear $origin 0"

# Dirty data, the origin unreadable at the remove.
check "open" open
check "held dirty" dmsetup message c 0 writeback_running 0
check "8 MiB of dirty writes, fsync'd" writes 1 --do_verify=0 --end_fsync=1
check_eq "8 MiB dirty" 16384 "$(dmb_stat c dirty)"
check "remove with the origin failing" close_unread
check "... dirty data left, logged" dmesg_has "dirty data left in the cache"
check "the origin sound again" origin_table "0 $osz linear $origin 0"
check "reopen" open
check "the slot was not fingerprinted: logged, dirty data kept" \
	dmesg_has "origin was not detached cleanly: dirty data kept"
check_fails "... nothing invalidated" dmesg_has "cached data invalidated"
# Writeback goes on at once: some may be written back already.
check "dirty data left" test "$(dmb_stat c dirty)" -gt 0
check "the dirty writes read back" writes 1 --verify_only
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "remove" dmb_remove c
check "the origin holds them" fio --name=io --filename="$origin" --direct=1 \
	--size=$((8 * 1048576)) --rw=randwrite --bsrange=4k-64k \
	--verify=crc32c --verify_only --randseed=1 --output=/tmp/o

# Dirty data, the origin unreadable at the remove and at the next attach:
# the reads can only come from the cache.
check "open" open
check "held dirty" dmsetup message c 0 writeback_running 0
check "8 MiB of dirty writes, fsync'd" writes 2 --do_verify=0 --end_fsync=1
check "remove with the origin failing" close_unread
check "reopen, the origin still failing" open
check "logged, dirty data kept" dmesg_has "dirty data kept, the origin not checked"
check_eq "all of it" 16384 "$(dmb_stat c dirty)"
check "the dirty writes read back, from the cache alone" writes 2 --verify_only
check "the origin sound again" origin_table "0 $osz linear $origin 0"
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"

# Clean data only: the slot is dropped, as before.
check "8 MiB read, filling the cache" writes 2 --verify_only
check "remove with the origin failing" close_unread
check "the origin sound again" origin_table "0 $osz linear $origin 0"
check "reopen" open
check "clean data: invalidated, logged" \
	dmesg_has "origin was not detached cleanly: cached data invalidated"
r=$(dmb_stat c read_hits)
check "reads back, from the origin" writes 2 --verify_only
check_eq "... no hit" "$r" "$(dmb_stat c read_hits)"
check "remove" dmb_remove c
check "remove the origin's table" dmsetup remove o
