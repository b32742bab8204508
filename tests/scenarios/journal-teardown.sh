# A cache set that failed is closed while a journal entry is still being
# written: the close takes no checkpoint, which is what used to wait for
# the entry, so the journal's buffers and work were freed under the bio
# (a use after free when it completed). The cache sits on dm-delay, which
# holds flushes (a journal entry is PREFLUSH|FUA) for 20 s, over a device
# that is switched to the error target once an entry is held. The remove
# must return only once the entry has completed. The old code returned at
# once, and oopsed when the held entry completed.
# disks: cache=32M origin=64M
# timeout: 300
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
A=dddddddd-ffff-4fff-8fff-ffffffffffff
HOLD_MS=20000
dmb_load
check "dm-delay" modprobe dm-delay
sz=$(blockdev --getsz "$cache")
check "format" make-bcache -q -b 64k "$cache"
check "the device under it" dmsetup create jt_err --table "0 $sz linear $cache 0"
check "the delay device" dmsetup create jt_delay --table "0 $sz linear /dev/mapper/jt_err 0"
check "create" dmb_create c /dev/mapper/jt_delay "$origin" origin_uuid $A
check "some cached data" dmb_read /dev/mapper/c 0 1

# Hold flushes only: the UUID table write of the failed close is a plain
# write, which fails at once below.
check "hold flushes" dmsetup reload jt_delay --table \
	"0 $sz delay /dev/mapper/jt_err 0 0 /dev/mapper/jt_err 0 0 /dev/mapper/jt_err 0 $HOLD_MS"
check "hold flushes: resume" dmsetup resume jt_delay
flushes() { dmsetup status jt_delay | awk '{ print $NF }'; }
f0=$(flushes)
check "a write: its key is journaled" dd if=/dev/urandom of=/dev/mapper/c bs=4k count=1 \
	seek=1000 oflag=direct
i=0
while [ "$(flushes)" = "$f0" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
held=$(date +%s)
check "a journal entry is held" test "$(flushes)" != "$f0"

check "cache writes fail from now on" dmsetup reload jt_err --table "0 $sz error"
check "cache writes fail: resume" dmsetup resume jt_err
dd if=/dev/urandom of=/dev/mapper/c bs=4k count=4 seek=2000 oflag=direct 2>/dev/null
check "the cache set failed" dmesg_has "cache device failing"
check "remove" dmsetup remove c
done_at=$(date +%s)
info "remove returned $((done_at - held)) s after the entry was held"
check "the remove waited for the entry" test $((done_at - held)) -ge $((HOLD_MS / 1000 - 2))
check "the close said it was not clean" dmesg_has "cache set not closed cleanly"
# Anything still held completes now: the old code's journal bio, in the
# freed set, oopsed here (dm's accounting of it read a zeroed bi_bdev).
check "remove the delay device" dmsetup remove jt_delay
sleep 1
check "remove the device under it" dmsetup remove jt_err
