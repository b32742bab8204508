# Proves the harness itself: modules load, dm devices work, fio verifies.
# disks: a=64M b=64M
# timeout: 300

check "modprobe dm-mod" modprobe dm-mod
check "disk a is the first virtio disk" test "$(disk a)" = /dev/vda
check "disk b is the second virtio disk" test "$(disk b)" = /dev/vdb
check_eq "disk a is 64M" 67108864 "$(blockdev --getsize64 "$(disk a)")"
check_fails "disk: unknown name fails" disk nosuchdisk

sectors=$(blockdev --getsz "$(disk a)")
check "dmsetup create linear" dmsetup create lin --table "0 $sectors linear $(disk a) 0"
check "/dev/mapper/lin exists" test -b /dev/mapper/lin
check_eq "linear table" "0 $sectors linear 254:0 0" "$(dmsetup table lin)"

check "fio randwrite with crc32c verify" \
	fio --name=v --filename=/dev/mapper/lin --rw=randwrite --bs=4k --size=16M \
	--verify=crc32c --direct=1 --ioengine=libaio --iodepth=8
check "fio verify-only read-back" \
	fio --name=v --filename=/dev/mapper/lin --rw=randwrite --bs=4k --size=16M \
	--verify=crc32c --direct=1 --verify_only=1
check_fails "dmsetup rejects a bad table" \
	dmsetup create bad --table "0 $sectors nosuchtarget $(disk b) 0"

check "modprobe brd" modprobe brd rd_nr=1 rd_size=16384
check_eq "ram0 is 16M" 16777216 "$(blockdev --getsize64 /dev/ram0)"
check "modprobe dm-delay" modprobe dm-delay
check "dmsetup create delay" \
	dmsetup create dly --table "0 32768 delay /dev/ram0 0 10 $(disk b) 0 10"
check "write through the delay device" \
	dd if=/dev/zero of=/dev/mapper/dly bs=4k count=64 oflag=direct
check_eq "delay target listed" "delay" "$(dmsetup table dly | cut -d' ' -f3)"

check "dmsetup remove dly" dmsetup remove dly
check "dmsetup remove lin" dmsetup remove lin
check_eq "no dm devices left" "No devices found" "$(dmsetup ls 2>&1)"
check "rmmod dm_delay" rmmod dm_delay
check "rmmod brd" rmmod brd
check_fails "dm_delay is gone" grep -q '^dm_delay ' /proc/modules
