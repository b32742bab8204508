# A crash while the target itself writes the origin's first 4 KiB must not
# make the origin look changed behind the cache's back: that drops the
# slot, and its dirty data with it (power-cut-writeback found this in 3
# of ~120 cuts). The cache sits on dm-delay, its writes 2 s late, so the
# crash lands after a write to sector 0 reached the origin and before the
# slot's fingerprint of it could be retaken: the slot's fp-writing flag,
# on disk before the origin write went, must keep the data.
# disks: cache=64M origin=64M
# boots: 2
# timeout: 240
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=f1f1f1f1-f1f1-4f1f-8f1f-f1f1f1f1f1f1
# 64 KiB of a pattern, the dirty data; and 512 bytes for sector 0.
yes "dm-bcache dirty data" | head -c 65536 >/tmp/dirty
yes s | tr -d '\n' | head -c 512 >/tmp/s0
# busybox dd falls back to buffered IO when its buffer is not aligned for
# O_DIRECT: drop the page cache before every read, write with fio.
dirty_reads_back() {
	blockdev --flushbufs /dev/mapper/c
	dd if=/dev/mapper/c bs=64k skip=16 count=1 2>/dev/null | cmp -s - /tmp/dirty
}
sector0_is() {
	blockdev --flushbufs "$1"
	dd if="$1" bs=512 count=1 2>/dev/null | cmp -s - /tmp/s0
}
dmb_load

case $BOOT in
1)
	check "format" make-bcache -q "$cache"
	check "modprobe dm-delay" modprobe dm-delay
	n=$(blockdev --getsz "$cache")
	check "the cache behind dm-delay (writes 2 s late)" \
		dmsetup create slow --table "0 $n delay $cache 0 0 $cache 0 2000"
	dmsetup mknodes
	check "create (writeback)" dmb_create c /dev/mapper/slow "$origin" \
		origin_uuid $U cache_mode writeback
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "64 KiB of dirty data (fsync)" dd if=/tmp/dirty of=/dev/mapper/c \
		bs=64k seek=16 oflag=direct conv=fsync
	check "it is dirty" test "$(dmb_stat c dirty)" -ge 128
	check "it reads back" dirty_reads_back
	# Not a whole block: this one goes around the cache, to the origin.
	fio --name=s0 --filename=/dev/mapper/c --rw=write --bs=512 --size=512 \
		--direct=1 --buffer_pattern=0x73 --output=/tmp/s0.out &
	i=0
	while [ $i -lt 1200 ] && ! sector0_is "$origin"; do
		sleep 0.05
		i=$((i + 1))
	done
	check "sector 0 reached the origin" sector0_is "$origin"
	info "sector 0 on the origin after $i polls; crashing before the fingerprint is retaken"
	crash_now
	;;
2)
	check "create after the crash" dmb_create c "$cache" "$origin" \
		origin_uuid $U cache_mode writeback
	check "the crash came amid the write (fp-writing was on disk)" \
		dmesg_has "fingerprint not checked"
	check_fails "the slot's data was kept" dmesg_has "cached data invalidated"
	check "the dirty data survived the crash" dirty_reads_back
	check "sector 0 reads back" sector0_is /dev/mapper/c
	check "write back everything" dmsetup message c 0 flush
	blockdev --flushbufs "$origin"
	check "the origin has the dirty data" sh -c \
		"dd if=$origin bs=64k skip=16 count=1 2>/dev/null | cmp -s - /tmp/dirty"
	check "remove" dmb_remove c
	check "the flag is cleared at a clean detach" sh -c \
		"! bcache-dump --uuids $cache | grep -q fp-writing"
	check "bcache-check is happy" bcache-check "$cache"
	;;
esac
