# A read miss and a dirty write of its range, the write indexed and done
# between the miss's lookup and its snapshot of the writes in flight
# (held open by miss_pause_ms). The write is indexed while the read
# holds the index for read (status field 34, a shared insert), so the
# snapshot sees no write in flight, and the fill of the origin's older
# data must still not be indexed over the write: a second lookup after
# the snapshot finds its key.
# disks: cache=32M origin=32M
# smp: 2
# timeout: 300
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-00000000a15e
PAUSE=/sys/module/dm_bcache/parameters/miss_pause_ms

dmb_load
check "old data on the origin" sh -c 'dd if=/dev/urandom of=/tmp/old bs=4k count=1 2>/dev/null &&
	dd if=/tmp/old of='"$origin"' bs=4k seek=256 oflag=direct 2>/dev/null'
check "format" make-bcache -q "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "no writeback" dmsetup message c 0 writeback_running 0
check "no bypass" dmsetup message c 0 sequential_cutoff 0
# A dirty key in the leaf, then a checkpoint: nothing is due meanwhile.
check "a dirty block elsewhere" dd if=/dev/urandom of=/dev/mapper/c bs=4k \
	count=1 oflag=direct
check "checkpoint" dmsetup message c 0 checkpoint

check "pause misses" sh -c "echo 3000 >$PAUSE"
shared=$(dmb_stat c inserts_shared)
filled=$(dmb_stat c filled_sectors)
(dd if=/dev/mapper/c of=/tmp/read bs=4k skip=256 count=1 iflag=direct \
	2>/dev/null; echo $? >/tmp/read.rc) &
rpid=$!
sleep 1
check "the read is in its pause" test ! -e /tmp/read.rc
check "new data over it" sh -c 'dd if=/dev/urandom of=/tmp/new bs=4k count=1 2>/dev/null &&
	dd if=/tmp/new of=/dev/mapper/c bs=4k seek=256 oflag=direct 2>/dev/null'
# Else the write waited for the read, and the race was not run.
check "the write was done first" test ! -e /tmp/read.rc
check "indexed shared" test "$(dmb_stat c inserts_shared)" -gt "$shared"
wait $rpid
check "unpause" sh -c "echo 0 >$PAUSE"
check_eq "the read succeeded" 0 "$(cat /tmp/read.rc)"
# The read's fill is indexed by a worker after the read completes: a
# suspend waits for it, so the checks below see it whenever it is made.
check "fills done" sh -c 'dmsetup suspend c && dmsetup resume c'
# Only the write was indexed (8 sectors): the fill was refused, or (the
# race this cannot force) never made.
check_eq "the fill was not indexed" $((filled + 8)) \
	"$(dmb_stat c filled_sectors)"
check "the write reads back" sh -c 'dd if=/dev/mapper/c of=/tmp/now bs=4k skip=256 count=1 iflag=direct 2>/dev/null &&
	cmp /tmp/now /tmp/new'
check "remove" dmsetup remove c
