# Writeback: writes go to the cache only and are written back later.
# Dirty data is read back from the cache, survives a crash (the journal),
# is written back by the flush message, a mode switch and a clean remove,
# and a cache full of dirty data sends writes to the origin instead.
# disks: cache=64M origin=128M ref=16M small=24M origin2=64M
# boots: 2
# timeout: 400
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
ref=$(disk ref)
small=$(disk small)
origin2=$(disk origin2)
U=bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb
V=dddddddd-dddd-4ddd-8ddd-dddddddddddd
MiB=$((1024 * 1024))

# region_eq DEV FILE: DEV's 8 MiB at 32 MiB equal FILE's first 8 MiB.
region_eq() {
	echo 3 >/proc/sys/vm/drop_caches
	dd if="$1" bs=1M skip=32 count=8 iflag=direct 2>/dev/null |
		cmp -s -n $((8 * MiB)) - "$2"
}
same_region() { region_eq "$1" "$ref"; }
dirty() { dmb_stat c dirty; }

dmb_load
case $BOOT in
1)
	check "format" make-bcache -q "$cache"
	check "origin data" fio --name=p --filename="$origin" --rw=write --bs=1M \
		--size=128M --verify=crc32c --do_verify=0 --output=/tmp/p
	check "reference data" dd if=/dev/urandom of="$ref" bs=1M count=8 oflag=direct
	check_fails "writeback needs origin_uuid" dmb_create x "$cache" "$origin" \
		cache_mode writeback
	check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
		cache_mode writeback
	check_eq "mode" writeback "$(dmb_stat c mode)"
	# Sequential writes would bypass the cache: this test wants them all.
	check "no bypass" dmsetup message c 0 sequential_cutoff 0
	check "pause writeback" dmsetup message c 0 writeback_running 0

	# Dirty data stays in the cache and is read back from it.
	check "write dirty data" fio --name=w --filename=/dev/mapper/c --rw=randwrite \
		--bs=4k --offset=64M --size=16M --direct=1 --verify=crc32c \
		--do_verify=0 --randrepeat=1 --output=/tmp/w
	check "dirty sectors counted" test "$(dirty)" -ge 16384
	check "reads see the new data" fio --name=w --filename=/dev/mapper/c \
		--rw=randwrite --bs=4k --offset=64M --size=16M --direct=1 \
		--verify=crc32c --verify_only --randrepeat=1 --output=/tmp/v
	check_fails "the origin does not have it yet" dmb_same /dev/mapper/c "$origin"
	check "written as hits" test "$(dmb_stat c read_hits)" -gt 0
	# Dirty 4k keys read back by 1 MiB reads: gathered, the same data.
	h1=$(dmb_stat c read_hits)
	check "1 MiB reads of dirty 4k keys equal 4k reads" sh -c "
		dd if=/dev/mapper/c bs=1M skip=64 count=16 iflag=direct 2>/dev/null | md5sum >/tmp/a
		dd if=/dev/mapper/c bs=4k skip=$((64 * 256)) count=4096 iflag=direct 2>/dev/null | md5sum >/tmp/b
		cmp /tmp/a /tmp/b"
	h2=$(dmb_stat c read_hits)
	check "the 1 MiB reads were gathered (4096 4k reads + at most 64)" \
		test $((h2 - h1)) -le $((4096 + 64))

	# The flush message writes everything back.
	check "flush" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dirty)"
	check "written back" test "$(dmb_stat c written_back)" -ge 16384
	check "device equals origin" dmb_same /dev/mapper/c "$origin"

	# Overwrites of dirty data: the newest wins, on the origin too.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "dirty, then dirty again" sh -c "dd if=/dev/urandom of=/dev/mapper/c \
		bs=4k seek=$((32 * 256)) count=512 oflag=direct 2>/dev/null &&
		dd if=$ref of=/dev/mapper/c bs=64k seek=$((32 * 16)) count=128 \
		oflag=direct 2>/dev/null"
	check "reads the newest" same_region /dev/mapper/c
	check "other data" dd if=/dev/urandom of=/tmp/r2 bs=1M count=8
	check "a bypassing write over dirty data" dd if=/tmp/r2 of=/dev/mapper/c \
		bs=8M seek=4 count=1 oflag=direct
	check "reads it" region_eq /dev/mapper/c /tmp/r2
	check "flush again" dmsetup message c 0 flush
	check "origin has the newest" region_eq "$origin" /tmp/r2
	check "device equals origin" dmb_same /dev/mapper/c "$origin"

	# A crash with dirty data: it was flushed (fsync), it must survive.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "dirty region" dd if=/dev/urandom of="$ref" bs=1M count=8 oflag=direct
	check "write it through the cache, fsync" dd if="$ref" of=/dev/mapper/c \
		bs=64k seek=$((32 * 16)) count=128 oflag=direct conv=fsync
	check "dirty before the crash" test "$(dirty)" -ge 16384
	check_fails "origin lacks it before the crash" same_region "$origin"
	crash_now
	;;
2)
	n=$(dmb_journal_entries "$cache")
	check "create after the crash" dmb_create c "$cache" "$origin" origin_uuid $U \
		cache_mode writeback
	check "the kernel replayed the $n journal entries bcache-check found" dmb_replayed "$n"
	check "no bypass" dmsetup message c 0 sequential_cutoff 0
	check "flushed dirty data survived" same_region /dev/mapper/c
	check "flush" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dirty)"
	check "the origin has it now" same_region "$origin"
	check "device equals origin" dmb_same /dev/mapper/c "$origin"

	# Leaving writeback writes back first.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "more dirty data" dd if=/dev/urandom of=/dev/mapper/c bs=4k \
		seek=1000 count=1000 oflag=direct
	check "dirty" test "$(dirty)" -gt 0
	check "to writethrough" dmsetup message c 0 cache_mode writethrough
	check_eq "mode" writethrough "$(dmb_stat c mode)"
	check_eq "clean after the switch" 0 "$(dirty)"
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
	check "back to writeback" dmsetup message c 0 cache_mode writeback

	# A table reload keeps the dirty data; the new table writes it back.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "dirty before the reload" dd if=/dev/urandom of=/dev/mapper/c bs=4k \
		seek=2000 count=500 oflag=direct
	check "save what the device holds" dd if=/dev/mapper/c of=/tmp/pre bs=1M \
		count=32 iflag=direct
	check "reload the table" sh -c "dmsetup table c | dmsetup load c && dmsetup resume c"
	check "the same data after the reload" sh -c "dd if=/dev/mapper/c bs=1M count=32 \
		iflag=direct 2>/dev/null | cmp -s - /tmp/pre"
	check "the new table flushes" dmsetup message c 0 flush
	check "the origin has it" sh -c "dd if=$origin bs=1M count=32 iflag=direct \
		2>/dev/null | cmp -s - /tmp/pre"

	# A clean remove writes back.
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "dirty again" dd if=/dev/urandom of=/dev/mapper/c bs=4k seek=3000 \
		count=500 oflag=direct
	check "save what the device holds" dd if=/dev/mapper/c of=/tmp/img bs=1M \
		count=32 iflag=direct
	check "remove" dmb_remove c
	check "the origin has it" sh -c "dd if=$origin bs=1M count=32 iflag=direct \
		2>/dev/null | cmp -s - /tmp/img"

	# A cache full of dirty data: writes go to the origin, nothing is lost.
	check "format a small cache" make-bcache -q "$small"
	check "create over it" dmb_create c "$small" "$origin2" origin_uuid $V \
		cache_mode writeback
	check "pause writeback" dmsetup message c 0 writeback_running 0
	check "write more than the cache holds" fio --name=f --filename=/dev/mapper/c \
		--rw=randwrite --bs=4k --size=48M --direct=1 --verify=crc32c \
		--do_verify=0 --randrepeat=1 --output=/tmp/f
	check "all of it reads back" fio --name=f --filename=/dev/mapper/c \
		--rw=randwrite --bs=4k --size=48M --direct=1 --verify=crc32c \
		--verify_only --randrepeat=1 --output=/tmp/fv
	check "resume writeback, flush" sh -c "dmsetup message c 0 writeback_running 1 &&
		dmsetup message c 0 flush"
	check "device equals origin" dmb_same /dev/mapper/c "$origin2"
	check "remove" dmb_remove c
	;;
esac
