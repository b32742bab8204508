# Flushes and FUA reach the origin; discards and write-zeroes punch the
# cache, so what is read afterwards is what the origin returns.
# disks: cache=64M origin=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format" make-bcache -q "$cache"
check "create" dmb_create c "$cache" "$origin"
check "fsync after every write, verify" fio --name=f --filename=/dev/mapper/c \
	--rw=randwrite --bs=4k --size=8M --io_size=4M --fsync=1 --verify=crc32c \
	--direct=1 --output=/tmp/f
check "O_SYNC (FUA) writes, verify" fio --name=s --filename=/dev/mapper/c \
	--rw=randwrite --bs=16k --offset=8M --size=8M --io_size=4M --sync=1 \
	--verify=crc32c --direct=1 --output=/tmp/s
check "origin has the fsynced data" fio --name=f --filename="$origin" \
	--rw=randwrite --bs=4k --size=8M --io_size=4M --verify=crc32c --verify_only=1 \
	--direct=1 --output=/tmp/f2
check "warm 16 MiB" fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k \
	--size=16M --randrepeat=1 --direct=1 --output=/tmp/h
if [ "$(cat /sys/block/dm-0/queue/discard_max_bytes)" = 0 ]; then
	info "no discard support below: discard checks skipped"
else
	# a punch walks its range's keys under the index lock: bounded per bio
	check "one discard covers at most 64 MiB" \
		test "$(cat /sys/block/dm-0/queue/discard_max_bytes)" -le 67108864
	check "discard 4 MiB of cached data" /sbin/blkdiscard -o 1048576 -l 4194304 /dev/mapper/c
	check "after discard, the device reads what the origin has" dmb_same /dev/mapper/c "$origin"
fi
if [ "$(cat /sys/block/dm-0/queue/write_zeroes_max_bytes)" = 0 ]; then
	info "no write-zeroes support below"
else
	check "write zeroes over cached data" /sbin/blkdiscard -z -o 8388608 -l 4194304 /dev/mapper/c
	check "zeroes read back" sh -c "dd if=/dev/mapper/c bs=4k skip=2048 count=1024 \
		iflag=direct 2>/dev/null | cmp -s -n 4194304 - /dev/zero"
	check "after write zeroes, the device equals the origin" dmb_same /dev/mapper/c "$origin"
fi
check "remove" dmb_remove c
