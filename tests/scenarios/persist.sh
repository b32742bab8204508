# Cached data survives a clean remove and a reboot; origins are known by
# origin_uuid, not by device name; the wrong device under a known uuid,
# or a resized origin, gets none of the old data.
# disks: cache=64M o1=64M o2=64M o3=64M o4=80M
# boots: 2
. /tests/guest/dmb.sh

cache=$(disk cache)
o1=$(disk o1)
A=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa
B=bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb
hot() { fio --name=h --filename="/dev/mapper/$1" --rw=randread --bs=4k \
	--size=8M --randrepeat=1 --direct=1 --output=/tmp/h; }
# "hot NAME" then the hit share of that pass must be >= 90%
hot_hits() {
	h0=$(dmb_stat "$1" read_hits); m0=$(dmb_stat "$1" read_misses)
	hot "$1"
	h=$(($(dmb_stat "$1" read_hits) - h0)); m=$(($(dmb_stat "$1" read_misses) - m0))
	info "$1: hits $h misses $m"
	[ $((h * 10)) -ge $(((h + m) * 9)) ]
}
hot_misses() {
	h0=$(dmb_stat "$1" read_hits)
	hot "$1"
	h=$(($(dmb_stat "$1" read_hits) - h0))
	info "$1: hits $h"
	[ "$h" -lt 100 ]
}
dmb_load

if [ "$BOOT" = 1 ]; then
	check "format" make-bcache -q "$cache"
	for d in 1 2 3; do
		check "o$d gets its own data" fio --name=p --filename="$(disk o$d)" --rw=write \
			--bs=64k --size=64M --verify=pattern --verify_pattern=0x0${d}0${d}0${d}0${d} \
			--do_verify=0 --output=/tmp/p
	done
	check "create A on o1" dmb_create c "$cache" "$o1" origin_uuid $A
	check "warm A" hot c
	check "remove" dmb_remove c
	check "recreate A" dmb_create c "$cache" "$o1" origin_uuid $A
	check "A hits after recreate" hot_hits c
	check "remove" dmb_remove c

	# A new name for the same origin: an alias with another dev_t.
	check "alias of o1" dmsetup create alias --table "0 $(blockdev --getsz "$o1") linear $o1 0"
	dmsetup mknodes
	check "A through the alias" dmb_create c "$cache" /dev/mapper/alias origin_uuid $A
	check "A hits under the new name" hot_hits c
	check "A through the alias equals o1" dmb_same /dev/mapper/c "$o1"
	check "remove" dmb_remove c
	check "remove alias" dmsetup remove alias

	# The wrong device under a known uuid.
	check "create B on o2" dmb_create c "$cache" "$(disk o2)" origin_uuid $B
	check "warm B" hot c
	check "remove" dmb_remove c
	dmesg -c >/dev/null
	check "B on o3 (the wrong device)" dmb_create c "$cache" "$(disk o3)" origin_uuid $B
	check "the mix-up is logged" dmesg_has "changed while detached"
	check "B on o3 reads o3, not o2's cache" dmb_same /dev/mapper/c "$(disk o3)"
	check "remove" dmb_remove c
	check "super-show lists both slots" sh -c "bcache-super-show -u $cache | grep -c '^slot.*uuid' | grep -qx 2"
	check "clean at the end of boot 1" sh -c "bcache-super-show $cache | grep -q 'sb.flags	clean'"
else
	check "A after a reboot" dmb_create c "$cache" "$o1" origin_uuid $A
	check "A hits after the reboot" hot_hits c
	check "A equals o1" dmb_same /dev/mapper/c "$o1"
	check "remove" dmb_remove c
	dmesg -c >/dev/null
	check "A on a bigger device" dmb_create c "$cache" "$(disk o4)" origin_uuid $A
	check "the size change is logged" dmesg_has "origin size changed"
	check "A on o4 gets none of o1's data" hot_misses c
	check "A on o4 equals o4" dmb_same /dev/mapper/c "$(disk o4)"
	check "remove" dmb_remove c
fi
