# A failing cache device: cached reads that fail are redone on the
# origin, the set then bypasses the device, writes keep working, and the
# next open invalidates. A failing origin: its errors reach the caller.
# disks: cache=64M origin=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
csz=$(blockdev --getsz "$cache")
osz=$(blockdev --getsz "$origin")
A=eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee
flakey() { # NAME DEV SIZE up|down
	if [ "$4" = up ]; then t="0 $3 flakey $2 0 3600 0"; else t="0 $3 flakey $2 0 0 3600"; fi
	if dmsetup info "$1" >/dev/null 2>&1; then
		dmsetup suspend "$1" && dmsetup load "$1" --table "$t" && dmsetup resume "$1"
	else
		dmsetup create "$1" --table "$t" && dmsetup mknodes "$1"
	fi
}
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k --size=8M \
	--randrepeat=1 --direct=1 --output=/tmp/h; }
dmb_load
check "modprobe dm-flakey" modprobe dm-flakey
check "format" make-bcache -q "$cache"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k --size=64M \
	--verify=crc32c --do_verify=0 --output=/tmp/p
check "flakey cache, up" flakey fc "$cache" "$csz" up
check "create over the flakey cache" dmb_create c /dev/mapper/fc "$origin" origin_uuid $A
check "warm" hot
check "warm again" hot
check "hits" test "$(dmb_stat c read_hits)" -gt 1000
check_eq "state ok" ok "$(dmb_stat c state)"

dmesg -c >/dev/null
check "the cache device fails" flakey fc "$cache" "$csz" down
check "cached reads still succeed" hot
check "and return the origin's data" dmb_same /dev/mapper/c "$origin"
check_eq "state failed" failed "$(dmb_stat c state)"
check "errors counted" test "$(dmb_stat c cache_errors)" -gt 0
check "failed reads were redone on the origin" test "$(dmb_stat c retries)" -gt 0
check "the failure is logged" dmesg_has "cache device failing"
check "writes keep working" fio --name=w --filename=/dev/mapper/c --rw=randwrite \
	--bs=4k --size=16M --io_size=4M --verify=crc32c --direct=1 --output=/tmp/w
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove while failed" dmb_remove c
check "the unclean close is logged" dmesg_has "not closed cleanly"

check "the cache device is back" flakey fc "$cache" "$csz" up
dmesg -c >/dev/null
check "create again" dmb_create c /dev/mapper/fc "$origin" origin_uuid $A
check "the next open invalidates" dmesg_has "cache device failed earlier"
check "reads equal the origin" dmb_same /dev/mapper/c "$origin"
check_eq "state ok again" ok "$(dmb_stat c state)"
check "remove" dmb_remove c

# Origin errors are never swallowed.
check "flakey origin, up" flakey fo "$origin" "$osz" up
check "create over the flakey origin" dmb_create c "$cache" /dev/mapper/fo
check "read 1 MiB" dd if=/dev/mapper/c of=/dev/null bs=4k count=256 iflag=direct
check "the origin fails" flakey fo "$origin" "$osz" down
check_fails "an uncached read fails" dd if=/dev/mapper/c of=/dev/null bs=4k skip=8192 count=16 iflag=direct
check_fails "a write fails" dd if=/dev/zero of=/dev/mapper/c bs=4k seek=4096 count=16 oflag=direct
check "the origin is back" flakey fo "$origin" "$osz" up
check "reads work again" dd if=/dev/mapper/c of=/dev/null bs=4k skip=8192 count=16 iflag=direct
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
# Writeback: with the cache failing, dirty data is an error, never the
# origin's (older) data.
W=abababab-abab-4bab-8bab-abababababab
check "writeback: format the flakey cache" make-bcache -q --wipe /dev/mapper/fc
check "writeback: create" dmb_create c /dev/mapper/fc "$origin" origin_uuid $W \
	cache_mode writeback
check "writeback: cache all, write back nothing" sh -c \
	"dmsetup message c 0 sequential_cutoff 0 && dmsetup message c 0 writeback_running 0"
check "writeback: dirty data" dd if=/dev/urandom of=/dev/mapper/c bs=4k count=256 oflag=direct
check "writeback: it is dirty" test "$(dmb_stat c dirty)" -gt 0
check "writeback: the cache device fails" flakey fc "$cache" "$csz" down
check_fails "writeback: a read of dirty data fails" dd if=/dev/mapper/c of=/dev/null \
	bs=4k count=16 iflag=direct
check "writeback: the error is counted" test "$(dmb_stat c cache_errors)" -gt 0
check "writeback: a read of data never written works" dd if=/dev/mapper/c of=/dev/null \
	bs=4k skip=8192 count=16 iflag=direct
check "writeback: the cache device is back" flakey fc "$cache" "$csz" up
check "writeback: the dirty data reads again" dd if=/dev/mapper/c of=/dev/null \
	bs=4k count=256 iflag=direct
check "writeback: remove writes back" dmb_remove c
check "remove flakeys" sh -c "dmsetup remove fo && dmsetup remove fc"
