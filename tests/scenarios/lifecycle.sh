# Create, remove, recreate; two targets share one cache set; removing one
# leaves the other working; the module unloads when all are gone.
# disks: cache=64M o1=64M o2=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
dmb_load
check "format" make-bcache -q "$cache"
i=0
while [ $i -lt 5 ]; do
	check "create #$i" dmb_create c "$cache" "$(disk o1)"
	check "io #$i" dd if=/dev/mapper/c of=/dev/null bs=64k count=32 iflag=direct
	check "remove #$i" dmb_remove c
	i=$((i + 1))
done
check "superblock clean after remove" \
	sh -c "bcache-super-show $cache | grep -q 'sb.flags	clean'"

dmesg -c >/dev/null
check "create a" dmb_create a "$cache" "$(disk o1)"
check "create b on the same cache" dmb_create b "$cache" "$(disk o2)"
check_eq "one cache set opened" 1 "$(dmesg | grep -c 'cache set opened')"
check "a and b have different slots" \
	test "$(dmb_stat a slot)" != "$(dmb_stat b slot)"
check_fails "module busy while in use" rmmod dm_bcache
check "superblock dirty while open" \
	sh -c "bcache-super-show $cache | grep -q 'sb.flags	dirty'"
check "remove a" dmb_remove a
check "b still works" \
	fio --name=b --filename=/dev/mapper/b --rw=randwrite --bs=4k --size=16M \
	--verify=crc32c --direct=1 --output=/tmp/fio
check "remove b" dmb_remove b
check_eq "cache set closed once" 1 "$(dmesg | grep -c 'cache set closed')"
check "module unloads" rmmod dm_bcache
check_fails "module gone" grep -q '^dm_bcache ' /proc/modules
