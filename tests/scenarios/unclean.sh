# After an unclean shutdown (a reset with no sync) the cache is dirty and
# its data is invalidated: nothing from before the crash is served.
# disks: cache=64M origin=64M
# boots: 2
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
A=cccccccc-cccc-4ccc-8ccc-cccccccccccc
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k \
	--size=8M --randrepeat=1 --direct=1 --output=/tmp/h; }
dmb_load
if [ "$BOOT" = 1 ]; then
	check "format" make-bcache -q "$cache"
	check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k \
		--size=64M --verify=crc32c --do_verify=0 --output=/tmp/p
	check "create" dmb_create c "$cache" "$origin" origin_uuid $A
	check "warm" hot
	check "warm again" hot
	check "hits before the crash" test "$(dmb_stat c read_hits)" -gt 1000
	check "write some" fio --name=w --filename=/dev/mapper/c --rw=randwrite \
		--bs=4k --size=8M --io_size=2M --direct=1 --output=/tmp/w
	crash_now
else
	check "superblock says dirty" sh -c "bcache-super-show $cache | grep -q 'sb.flags	dirty'"
	check "create after the crash" dmb_create c "$cache" "$origin" origin_uuid $A
	check "crash detected" dmesg_has "not shut down cleanly"
	check "reread" hot
	check "nothing from before the crash was hit" test "$(dmb_stat c read_hits)" -lt 100
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
	check "hits again after rewarming" sh -c "fio --name=h --filename=/dev/mapper/c \
		--rw=randread --bs=4k --size=8M --randrepeat=1 --direct=1 --output=/tmp/h2 &&
		test \$(dmsetup status c | cut -d' ' -f8) -gt 1000"
	check "remove" dmb_remove c
fi
