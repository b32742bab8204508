# A cache device that fails in writeback (issue #12, finding 3): its dirty
# data is never replaced by the origin's older data. While the device can
# still be read, reads return the dirty data and writeback drains it to
# the origin before the slot is dropped; once it cannot, reads of it fail
# (EIO), and a write over it makes the range readable again.
# The cache sits on a dm table switched to dm-flakey: first failing
# writes only (error_writes), then every IO.
# disks: cache=64M origin=64M
# smp: 2
# timeout: 400
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=cccccccc-cccc-4ccc-8ccc-cccccccccccc
csz=$(blockdev --getsz "$cache")
osz=$(blockdev --getsz "$origin")

# blocks DEV SKIP COUNT: COUNT 4 KiB blocks of DEV at block SKIP, direct.
blocks() {
	dd if="$1" bs=4k skip="$2" count="$3" iflag=direct 2>/dev/null
}
# same DEV SKIP COUNT FILE: those blocks equal FILE.
same() {
	blocks "$1" "$2" "$3" | cmp -s - "$4"
}
# put FILE DEV SKIP: FILE written at block SKIP of DEV, 4 KiB at a time.
put() {
	dd if="$1" of="$2" bs=4k seek="$3" oflag=direct conv=notrunc 2>/dev/null
}
# under TABLE...: the cache device's table, swapped while idle.
under() {
	dmsetup suspend cdev && dmsetup load cdev --table "$*" &&
		dmsetup resume cdev
}

dmb_load
check "modprobe dm-flakey" modprobe dm-flakey
check "cache on a linear table" dmsetup create cdev --table "0 $csz linear $cache 0"
check "format" make-bcache -q /dev/mapper/cdev

# Old data A on the origin; B and C written through the cache later.
dd if=/dev/urandom of=/tmp/A bs=1M count=4 2>/dev/null
dd if=/dev/urandom of=/tmp/B bs=1M count=4 2>/dev/null
dd if=/dev/urandom of=/tmp/C bs=4k count=64 2>/dev/null
check "old data on the origin" put /tmp/A "$origin" 0

wb_table="0 $osz bcache /dev/mapper/cdev $origin 4 origin_uuid $U cache_mode writeback"
check "create in writeback" dmsetup create c --table "$wb_table"
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "pause writeback" dmsetup message c 0 writeback_running 0
check "dirty data B over A" put /tmp/B /dev/mapper/c 0
check "B is dirty" test "$(dmb_stat c dirty)" -ge 8192
check "reads return B" same /dev/mapper/c 0 1024 /tmp/B

# Writes to the cache fail from now on; reads still work.
check "cache writes fail" under "0 $csz flakey $cache 0 0 1 1 error_writes"
# A miss's fill writes to the cache: the device is failed by it.
blocks /dev/mapper/c 2048 256 >/dev/null
sleep 1
check_eq "cache state failed" failed "$(dmb_stat c state)"
# (writeback drains a failed device at once: what is not dirty any more
# was written back, not dropped)
check "the slot kept its dirty data" \
	test $(($(dmb_stat c dirty) + $(dmb_stat c written_back))) -ge 8192
check "reads of dirty data return B, not A" same /dev/mapper/c 0 1024 /tmp/B
sleep 2
check "and still do" same /dev/mapper/c 0 1024 /tmp/B
check "a write to clean space goes to the origin" put /tmp/C /dev/mapper/c 4096
check "and reads back" same /dev/mapper/c 4096 64 /tmp/C
check "writeback drains the failed device" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "the origin has B" same "$origin" 0 1024 /tmp/B
check "reads still return B" same /dev/mapper/c 0 1024 /tmp/B
check "remove" dmsetup remove c

# Again, then every IO of the cache fails: reads of dirty data fail.
check "cache back on linear" under "0 $csz linear $cache 0"
check "old data on the origin again" put /tmp/A "$origin" 0
check "reformat" make-bcache -q --wipe /dev/mapper/cdev
check "create in writeback again" dmsetup create c --table "$wb_table"
check "no bypass again" dmsetup message c 0 sequential_cutoff 0
check "pause writeback again" dmsetup message c 0 writeback_running 0
check "dirty data B again" put /tmp/B /dev/mapper/c 0
check "cache IO fails" under "0 $csz flakey $cache 0 0 1"
bad=0
i=0
while [ $i -lt 1024 ]; do
	# Each 4 KiB block: an error, or B's; A's would be older data.
	if blocks /dev/mapper/c $i 1 >/tmp/got; then
		dd if=/tmp/B bs=4k skip=$i count=1 2>/dev/null | cmp -s - /tmp/got ||
			bad=$((bad + 1))
	fi
	i=$((i + 64))
done
check_eq "no read of dirty data returned older data" 0 "$bad"
check_eq "cache state failed again" failed "$(dmb_stat c state)"
check_fails "a read of dirty data fails" blocks /dev/mapper/c 0 1
check "a write over unreadable dirty data" put /tmp/C /dev/mapper/c 0
check "makes it readable: the write's data" same /dev/mapper/c 0 64 /tmp/C
check "remove with dirty data it cannot write back" dmsetup remove c
check "cache device table removed" dmsetup remove cdev
