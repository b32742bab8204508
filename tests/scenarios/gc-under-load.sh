# GC passes that let IO in between their leaves (issue #13): in
# writeback, with 4 KiB buckets (a leaf holds about a hundred keys, so a
# pass takes many steps), a range three times the cache (reclaim
# invalidates buckets all along) and writeback marking keys clean, gc
# is sent every few tenths of a second while four threads write, read
# and discard. A bucket whose live or dirty sectors a pass under-counts
# is freed with data in it: a read then finds older data. Every read is
# checked against the model, and so is the whole range at the end;
# then, after a flush, the origin.
# disks: cache=32M origin=128M
# timeout: 600
# smp: 2
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-000000000013

dmb_load
check "format with 4k buckets" make-bcache -q -b 4k "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "writeback_percent 0" dmsetup message c 0 writeback_percent 0

gc_loop() {
	while [ ! -e /tmp/stop ]; do
		dmsetup message c 0 gc || echo failed >>/tmp/gc.log
		sleep 0.3
	done
}

runs0=$(dmb_stat c gc_runs)
gc_loop &
gpid=$!
check "stress beside gc passes" dmb-stress -d /dev/mapper/c -s 96 -n 6000 -t 4 -S 13
touch /tmp/stop
wait $gpid
check "every gc message succeeded" test ! -e /tmp/gc.log
runs=$(($(dmb_stat c gc_runs) - runs0))
info "gc passes: $runs; status: $(dmsetup status c)"
check "gc passes ran beside the load" test "$runs" -ge 20
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "recreate" dmb_create c "$cache" "$origin" origin_uuid $U
check "device equals origin after reopen" dmb_same /dev/mapper/c "$origin"
check "remove again" dmb_remove c
