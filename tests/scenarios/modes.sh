# Cache modes, from the table and by message: writearound caches reads
# only, none caches nothing, writes are punched out in every mode so a
# switch never exposes stale data; writeback (writeback.sh) needs
# origin_uuid, and switching through it keeps the data right.
# disks: cache=64M origin=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
len=$(blockdev --getsz "$origin")
A=12121212-1212-4212-8212-121212121212
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k --size=8M \
	--randrepeat=1 --direct=1 --output=/tmp/h; }
wr() { fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k --size=8M \
	--io_size=2M --direct=1 --output=/tmp/w; }
dmb_load
check "format" make-bcache -q "$cache"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k --size=64M \
	--verify=crc32c --do_verify=0 --output=/tmp/p
check_fails "writeback without origin_uuid refused" dmb_create c "$cache" "$origin" cache_mode writeback
check "with a clear message" dmesg_has "cache_mode writeback needs origin_uuid"
check_fails "unknown cache_mode refused" dmb_create c "$cache" "$origin" cache_mode fast
dmsetup remove c 2>/dev/null

check "create writearound" dmb_create c "$cache" "$origin" origin_uuid $A cache_mode writearound
check_eq "mode shown" writearound "$(dmb_stat c mode)"
check "table shows it" sh -c "dmsetup table c | grep -q 'cache_mode writearound'"
check "table reloads as shown" sh -c "dmsetup table c | dmsetup load c && dmsetup resume c"
f0=$(dmb_stat c filled_sectors)
check "writes" wr
check_eq "writearound: writes not filled" "$f0" "$(dmb_stat c filled_sectors)"
check "reads" hot
check "writearound: reads filled" test "$(dmb_stat c filled_sectors)" -gt "$f0"
check "reread hits" sh -c 'h=$(dmsetup status c | cut -d" " -f8); fio --name=h --filename=/dev/mapper/c \
	--rw=randread --bs=4k --size=8M --randrepeat=1 --direct=1 --output=/tmp/h2 &&
	test $(dmsetup status c | cut -d" " -f8) -gt $((h + 1000))'

check "switch to none" dmsetup message c 0 cache_mode none
check_eq "mode none" none "$(dmb_stat c mode)"
h0=$(dmb_stat c read_hits)
check "reads in none" hot
check_eq "none: no hits" "$h0" "$(dmb_stat c read_hits)"
check "writes in none, over cached data" wr
check "switch to writethrough" dmsetup message c 0 cache_mode writethrough
check "what none wrote is read back" dmb_same /dev/mapper/c "$origin"
f1=$(dmb_stat c filled_sectors)
check "writes in writethrough" wr
check "writethrough: writes filled" test "$(dmb_stat c filled_sectors)" -gt "$f1"
check "writeback by message" dmsetup message c 0 cache_mode writeback
check_eq "mode writeback" writeback "$(dmb_stat c mode)"
check "writes in writeback" wr
check "writeback: writes are dirty" test "$(dmb_stat c dirty)" -gt 0
check "switch to writearound writes back" dmsetup message c 0 cache_mode writearound
check_eq "writearound: nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "ephemeral table" dmb_create c "$cache" "$origin"
check "... logged as such" dmesg_has "no origin_uuid: its cached data lives only as long as this table"
check_fails "writeback by message needs origin_uuid" dmsetup message c 0 cache_mode writeback
check_eq "mode unchanged" writethrough "$(dmb_stat c mode)"
check "remove" dmb_remove c
