# fio writes and reads back through the target with crc32c verification,
# over a cache much smaller than the origin; then the origin alone holds
# the same data (writethrough).
# disks: cache=48M origin=256M
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format" make-bcache -q "$cache"
check "create" dmb_create c "$cache" "$origin"
check "fio randwrite 4k-64k, verify" \
	fio --name=w --filename=/dev/mapper/c --rw=randwrite --bsrange=4k-64k \
	--size=200M --io_size=120M --verify=crc32c --verify_backlog=256 \
	--direct=1 --ioengine=libaio --iodepth=8 --randrepeat=1 --output=/tmp/fio1
# Two read-back passes (fio's --loops would draw new offsets, not reread).
for pass in 1 2; do
	check "fio random read-back verify, pass $pass" \
		fio --name=w --filename=/dev/mapper/c --rw=randwrite --bsrange=4k-64k \
		--size=200M --io_size=120M --verify=crc32c --verify_only=1 \
		--direct=1 --ioengine=libaio --iodepth=8 --randrepeat=1 --output=/tmp/fio2
done
check "fio mixed randrw with verify" \
	fio --name=m --filename=/dev/mapper/c --rw=randrw --rwmixread=70 --bs=4k \
	--size=32M --io_size=64M --verify=crc32c --direct=1 --ioengine=libaio \
	--iodepth=16 --output=/tmp/fio3
info "status: $(dmsetup status c)"
hits=$(dmb_stat c read_hits)
check "the cache was hit" test "$hits" -gt 0
check "cache and origin agree" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "origin alone verifies" \
	fio --name=m --filename="$origin" --rw=randrw --rwmixread=70 --bs=4k \
	--size=32M --io_size=64M --verify=crc32c --verify_only=1 --direct=1 \
	--output=/tmp/fio4
check "module unloads" rmmod dm_bcache
