# O_SYNC and O_DSYNC writes in writeback (issue #12, finding 6): each is a
# FUA write, acknowledged once its dirty key's journal entry is durable,
# many in flight at once beside fdatasync callers and checkpoints. Under
# the debug kernel (KASAN) a use of the bio after the journal completed
# it shows here. Every acknowledged write survives a crash.
# disks: cache=64M origin=128M
# boots: 2
# smp: 2
# timeout: 400
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=f0a0f0a0-f0a0-4f0a-8f0a-f0a0f0a0f0a0
table=$(dmb_table c "$cache" "$origin" origin_uuid $U cache_mode writeback)

# sync_load MODE: O_SYNC 4-16 KiB writes at queue depth 16 and O_DSYNC
# ones from a second job, fio's checksums in every block; MODE write or
# verify.
sync_load() {
	local v="--do_verify=0"
	[ "$1" = verify ] && v="--verify_only"
	fio --filename=/dev/mapper/c --direct=1 --verify=crc32c \
		--randrepeat=1 --ioengine=libaio $v --output="/tmp/$1.out" \
		--name=fua --rw=randwrite --bsrange=4k-16k --size=16M \
		--iodepth=16 --sync=1 --randseed=5 \
		--name=dsync --rw=randwrite --bs=4k --offset=32M --size=8M \
		--iodepth=4 --sync=dsync --randseed=6 \
		--name=fdatasync --rw=randwrite --bs=8k --offset=48M --size=8M \
		--fdatasync=4 --ioengine=psync --randseed=8
}

dmb_load
case $BOOT in
1)
	check "format" make-bcache -q "$cache"
	check "create in writeback" dmsetup create c --table "$table"
	check "no bypass" dmsetup message c 0 sequential_cutoff 0
	check "pause writeback" dmsetup message c 0 writeback_running 0
	(for i in 1 2 3 4; do sleep 2; dmsetup message c 0 gc; done) &
	check "synchronous writes" sync_load write
	wait
	check "they read back" sync_load verify
	check "dirty data for the crash" test "$(dmb_stat c dirty)" -gt 0
	crash_now
	;;
2)
	check "create after the crash" dmsetup create c --table "$table"
	check "every acknowledged write survived" sync_load verify
	check "remove" dmsetup remove c
	;;
esac
