# Caching turned off and on by table reloads on a live device: data
# written while the device was linear is what is read after caching is
# back on (the seed's rule: toggling on a live device invalidates).
# disks: cache=64M origin=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
A=dddddddd-dddd-4ddd-8ddd-dddddddddddd
len=$(blockdev --getsz "$origin")
vf() { fio --name=v --filename=/dev/mapper/c --rw=read --bs=64k --size=8M \
	--direct=1 --verify=pattern --verify_pattern="$1" --verify_only=1 --output=/tmp/v; }
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k --size=8M \
	--randrepeat=1 --direct=1 --output=/tmp/h; }
dmb_load
check "format" make-bcache -q "$cache"
check "origin pattern 1" fio --name=p --filename="$origin" --rw=write --bs=64k \
	--size=64M --verify=pattern --verify_pattern=0x01010101 --do_verify=0 --output=/tmp/p
check "create" dmb_create c "$cache" "$origin" origin_uuid $A
check "warm" hot
check "warm again" hot
check "pattern 1 through the cache" vf 0x01010101
h=$(dmb_stat c read_hits)
check "reload with the same table keeps the cache" sh -c \
	"dmsetup table c | dmsetup load c && dmsetup resume c"
check "warm after same-table reload" hot
check "same-table reload kept the data (hits)" test "$(dmb_stat c read_hits)" -gt 1000

dmesg -c >/dev/null
check "to linear, live" sh -c "dmsetup load c --table '0 $len linear $origin 0' && dmsetup resume c"
check "invalidation logged" dmesg_has "caching turned off while live"
check "write pattern 2 through linear" fio --name=p --filename=/dev/mapper/c --rw=write \
	--bs=64k --size=8M --verify=pattern --verify_pattern=0x02020202 --do_verify=0 --output=/tmp/p
check "back to bcache, live" sh -c \
	"dmsetup load c --table '$(dmb_table c "$cache" "$origin" origin_uuid $A)' && dmsetup resume c"
check "pattern 2 is read, not the cached pattern 1" vf 0x02020202
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
