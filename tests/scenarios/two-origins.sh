# Two origins share one cache at the same offsets: each reads only its
# own data, through the cache, before and after one of them goes away.
# disks: cache=64M o1=64M o2=64M o3=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
o1=$(disk o1)
o2=$(disk o2)
dmb_load
check "format" make-bcache -q "$cache"
check "o1 pattern" fio --name=p --filename="$o1" --rw=write --bs=64k --size=64M \
	--verify=pattern --verify_pattern=0x11111111 --do_verify=0 --output=/tmp/p
check "o2 pattern" fio --name=p --filename="$o2" --rw=write --bs=64k --size=64M \
	--verify=pattern --verify_pattern=0x22222222 --do_verify=0 --output=/tmp/p
check "create a" dmb_create a "$cache" "$o1" origin_uuid 11111111-1111-4111-8111-111111111111
check "create b" dmb_create b "$cache" "$o2" origin_uuid 22222222-2222-4222-8222-222222222222
rd() { fio --name=r --filename="$1" --rw=randread --bs=4k --size=8M \
	--randrepeat=1 --direct=1 --verify=pattern --verify_pattern="$2" \
	--verify_only=1 --output=/tmp/r; }
vf() { fio --name=v --filename="$1" --rw=read --bs=64k --size=8M --direct=1 \
	--verify=pattern --verify_pattern="$2" --verify_only=1 --output=/tmp/v; }
for pass in 1 2 3; do
	check "a reads its own data (pass $pass)" vf /dev/mapper/a 0x11111111
	check "b reads its own data (pass $pass)" vf /dev/mapper/b 0x22222222
	fio --name=w --filename=/dev/mapper/a --rw=randread --bs=4k --size=8M --randrepeat=1 --direct=1 --output=/tmp/w >/dev/null
	fio --name=w --filename=/dev/mapper/b --rw=randread --bs=4k --size=8M --randrepeat=1 --direct=1 --output=/tmp/w >/dev/null
done
check "a was served from the cache" test "$(dmb_stat a read_hits)" -gt 1000
check "b was served from the cache" test "$(dmb_stat b read_hits)" -gt 1000
check_fails "same origin_uuid on another device is refused while in use" \
	dmb_create x "$cache" "$(disk o3)" origin_uuid 11111111-1111-4111-8111-111111111111
dmsetup remove x 2>/dev/null
check_fails "a second device over o1 (ephemeral slot) is refused" dmb_create y "$cache" "$o1"
dmsetup remove y 2>/dev/null
check "o3 formatted as a second cache" make-bcache -q "$(disk o3)"
check_fails "o1 under a second cache set is refused" dmb_create z "$(disk o3)" "$o1"
dmsetup remove z 2>/dev/null
check "the refusals are logged" dmesg_has "origin is already cached by another device"
check "a equals o1" dmb_same /dev/mapper/a "$o1"
check "b equals o2" dmb_same /dev/mapper/b "$o2"
check "remove a" dmb_remove a
check "b still reads its own data" vf /dev/mapper/b 0x22222222
check "b equals o2 after a left" dmb_same /dev/mapper/b "$o2"
check "remove b" dmb_remove b
