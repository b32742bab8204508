# Memory running out under writeback (issue #12, finding 5): index
# inserts and checkpoints fail with -ENOMEM, and copies of dirty writes'
# data (format version 3) find no pages (fault.c's test hooks, every Nth
# one; such a write goes to the origin), under 4 KiB dirty writes and 2 MiB writes bound for the
# origin over them, with checkpoints asked for meanwhile. No acknowledged
# write may be lost: all the data verifies through the cache, again after
# a crash, and on the origin after a flush. Before the fix an insert that
# failed dropped the slot, dirty data and all, and a checkpoint that
# failed dropped every slot.
# disks: cache=64M origin=128M
# boots: 2
# smp: 2
# timeout: 500
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee
P=/sys/module/dm_bcache/parameters
table=$(dmb_table c "$cache" "$origin" origin_uuid $U cache_mode writeback)

# load MODE [DEV]: 4 KiB random writes over 32 MiB (dirty), then 4 KiB
# to 2 MiB ones over them (the large ones bound for the origin), fio's
# checksums in every block; MODE write (then fsync), or verify the
# second pass (which covers the range) by reading it back.
load() {
	local dev="${2:-/dev/mapper/c}"
	if [ "$1" = write ]; then
		fio --name=d --filename="$dev" --rw=randwrite --bs=4k --size=32M \
			--direct=1 --randrepeat=1 --randseed=3 --iodepth=8 \
			--ioengine=libaio --output=/tmp/d.out || return 1
	fi
	local v="--do_verify=0 --end_fsync=1"
	[ "$1" = verify ] && v="--verify_only"
	fio --name=l --filename="$dev" --rw=randwrite \
		--bssplit=4k/80:64k/15:2m/5 --size=32M --direct=1 \
		--verify=crc32c --randrepeat=1 --randseed=7 --iodepth=8 \
		--ioengine=libaio $v --output="/tmp/$1.out"
}
# A slot dropped (bcache's own messages; the kernel has others).
dropped() {
	dmesg | grep bcache | grep -q invalidat
}

dmb_load
case $BOOT in
1)
	check "format" make-bcache -q "$cache"
	check "create in writeback" dmsetup create c --table "$table"
	# Held writes over dirty data still get their range written back.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "fault hooks" test -w $P/fail_insert_every
	echo 7 >$P/fail_insert_every
	echo 2 >$P/fail_checkpoint_every
	echo 5 >$P/fail_copy_every
	(for i in 1 2 3 4 5 6; do sleep 2; dmsetup message c 0 gc; done) &
	check "writes under failing inserts and checkpoints" load write
	wait
	check "holes failed" dmesg_has "index insert failed (-12): write held"
	check "dirty keys failed" dmesg_has "dirty write not indexed (-12)"
	check "checkpoints failed" dmesg_has "checkpoint failed (-12): writes held"
	check_fails "no slot was dropped" dropped
	check "all of it reads back" load verify
	echo 0 >$P/fail_insert_every
	echo 0 >$P/fail_checkpoint_every
	echo 0 >$P/fail_copy_every
	check "dirty data left for the crash" test "$(dmb_stat c dirty)" -gt 0
	crash_now
	;;
2)
	check "create after the crash" dmsetup create c --table "$table"
	check "all of it survived the crash" load verify
	check "flush" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
	check "remove" dmsetup remove c
	check "the origin has all of it" load verify "$origin"
	check_fails "no slot was dropped" dropped
	;;
esac
