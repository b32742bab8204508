# A read of dirty data whose bucket is reused while the read is in flight
# (CI's stale-overlap once failed a read with EIO this way). The read of
# block X finds X's dirty key and goes to the cache, which sits on
# dm-delay holding reads (for up to 60 s: it lets them go when the script
# reloads it). Meanwhile X is overwritten, a GC pass
# finds X's bucket empty and frees it, and read misses, filled into the
# cache, take every bucket in turn, bumping the gen of X's. When the read returns, its
# pointer is stale: the read must be mapped again (and return the newer
# data, or X's), never fail: the old code failed it, as a dirty hit's
# stale pointer meant the only copy was lost.
# disks: cache=16M origin=64M
# timeout: 300
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-0000000000d1
HOLD_MS=60000
dmb_load
check "dm-delay" modprobe dm-delay
sz=$(blockdev --getsz "$cache")
check "format" make-bcache -q -b 64k "$cache"
check "the delay device" dmsetup create rr_delay --table "0 $sz linear $cache 0"
check "create in writeback" dmb_create c /dev/mapper/rr_delay "$origin" \
	origin_uuid $U cache_mode writeback
check "no writeback" dmsetup message c 0 writeback_running 0
check "no bypass" dmsetup message c 0 sequential_cutoff 0

# X: 64 KiB at 0, then 1 MiB elsewhere, so X's bucket is not the open one.
check "X" sh -c 'dd if=/dev/urandom of=/tmp/x bs=64k count=1 2>/dev/null &&
	dd if=/tmp/x of=/dev/mapper/c bs=64k oflag=direct 2>/dev/null'
check "more" dd if=/dev/urandom of=/dev/mapper/c bs=64k count=16 seek=64 \
	oflag=direct
check_eq "X is dirty" 1 "$(($(dmb_stat c dirty) > 0))"

check "hold cache reads" dmsetup reload rr_delay --table \
	"0 $sz delay $cache 0 $HOLD_MS $cache 0 0 $cache 0 0"
check "hold cache reads: resume" dmsetup resume rr_delay
(dd if=/dev/mapper/c of=/tmp/read bs=64k count=1 iflag=direct 2>/tmp/read.err
	echo $? >/tmp/read.rc) &
rpid=$!
sleep 1
check "the read is held" test ! -e /tmp/read.rc

check "Y over X" sh -c 'dd if=/dev/urandom of=/tmp/y bs=64k count=1 2>/dev/null &&
	dd if=/tmp/y of=/dev/mapper/c bs=64k oflag=direct 2>/dev/null'
# The pass frees X's bucket, whose running count still holds X.
check "gc" dmsetup message c 0 gc
# 48 MiB of misses through a 16 MiB cache: every free bucket is taken.
# (Not writes: they would be dirty, and writeback reads the cache.)
check "cycle the buckets" dd if=/dev/mapper/c of=/dev/null bs=64k skip=256 \
	count=768 iflag=direct
info "buckets: $(dmb_stat c buckets), invalidations: $(dmb_stat c invalidations)"
r0=$(dmb_stat c retries)
check "the read is still held" test ! -e /tmp/read.rc
# The suspend sends the held read down; mapped again, it waits for the resume.
check "release cache reads" dmsetup reload rr_delay --table "0 $sz linear $cache 0"
check "release cache reads: resume" dmsetup resume rr_delay
wait $rpid
check_eq "the read succeeded" 0 "$(cat /tmp/read.rc)"
cat /tmp/read.err
check "it was mapped again" test "$(dmb_stat c retries)" -gt "$r0"
check "it returned X or Y" sh -c 'cmp -s /tmp/read /tmp/x || cmp -s /tmp/read /tmp/y'
check "Y reads back" sh -c 'dd if=/dev/mapper/c bs=64k count=1 iflag=direct 2>/dev/null |
	cmp -s - /tmp/y'
check "remove" dmb_remove c
check "remove the delay device" dmsetup remove rr_delay
