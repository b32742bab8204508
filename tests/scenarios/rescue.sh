# bcache-writeback, the offline rescue (issue #17): after a power cut in
# writeback, with no module loaded, it copies every dirty extent of one
# origin to that origin, which then holds every acknowledged write; with
# --mark-clean the cache is left with nothing dirty for that origin, and
# the module opens it and reads the origin's data.
# disks: cache=64M origin=64M
# boots: 2
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=7e5c0e00-0000-4e5c-8e5c-7e5c0e007e5c
MiB=1048576

# fio over [OFF, +SIZE) MiB of DEV: DEV OFF SIZE [ARGS...]
io() {
	local dev=$1 off=$2 size=$3
	shift 3
	fio --name=io --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 \
		--offset=$((off * MiB)) --size=$((size * MiB)) --rw=randwrite \
		--bsrange=4k-64k --randseed=5 --verify=crc32c "$@" --output=/tmp/io
}

if [ "$BOOT" = 1 ]; then
	dmb_load
	check "format" make-bcache -q "$cache"
	check "origin data" fio --name=p --filename="$origin" --rw=write --bs=1M \
		--size=64M --buffer_pattern=0x55 --output=/tmp/p
	check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
		cache_mode writeback
	check "writeback held" dmsetup message c 0 writeback_running 0
	check "dirty writes, fsync'd" io /dev/mapper/c 8 24 --do_verify=0 --end_fsync=1
	check "dirty" test "$(dmb_stat c dirty)" -gt 8192
	info "power cut with $(dmb_stat c dirty) dirty sectors"
	crash_now
fi

check_fails "no module loaded" sh -c "lsmod | grep -q dm_bcache"
check_fails "the origin alone lacks the writes" io "$origin" 8 24 --verify_only
check "a dry run lists what it would copy" sh -c \
	"bcache-writeback --dry-run --uuid $U '$cache' '$origin' >/tmp/dry"
check "... and says so" grep -q "would copy" /tmp/dry
check_fails "... and copies nothing" io "$origin" 8 24 --verify_only
check "bcache-writeback --mark-clean" sh -c \
	"bcache-writeback -q --mark-clean --uuid $U '$cache' '$origin' >/tmp/wb"
cat /tmp/wb
check "it copied extents" grep -q "^writeback: [1-9][0-9]* extents" /tmp/wb
check "the origin holds every acknowledged write" io "$origin" 8 24 --verify_only
check "the rest of the origin is as it was" sh -c \
	"dd if='$origin' bs=1M count=8 iflag=direct 2>/dev/null | tr -d '\125' | wc -c | grep -qx 0"
check "bcache-check: nothing dirty" sh -c "bcache-check '$cache' >/tmp/chk"
check_fails "... says no dirty data" grep -q "^dirty: slot" /tmp/chk
check "a second run copies nothing" sh -c \
	"bcache-writeback -q --uuid $U '$cache' '$origin' | grep -q '^writeback: 0 extents'"

dmb_load
check "the module opens it" dmb_create c "$cache" "$origin" origin_uuid $U
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "reads are the origin's" io /dev/mapper/c 8 24 --verify_only
check "remove" dmb_remove c
