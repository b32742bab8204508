# Writes bound for the origin over dirty data wait for a writeback batch
# that writes their range back (held), here with writeback otherwise off
# and no index node budget (node_cache_mb=0: every leaf not in use is
# evicted). A held range was walked from its start each batch: over a
# hole across a leaf boundary each walk read the leaf it missed while
# the trim before it evicted the other, so a discard waited for ever
# (the old code hung every time; a cold review found it). Now a held
# range's leaves are read together. Four threads write, read and discard
# 96 MiB through a 32 MiB cache; then writeback on, a flush, and the
# device must equal the origin.
# disks: cache=32M origin=128M
# timeout: 600
# smp: 2
# append: dmb.node_cache_mb=0
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-000000000013

dmb_load
check "format with 4k buckets" make-bcache -q -b 4k "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "writeback_running 0" dmsetup message c 0 writeback_running 0
check "stress" dmb-stress -d /dev/mapper/c -s 96 -n 3000 -t 4 -S 13 -D 30
info "status: $(dmsetup status c)"
check "writeback_running 1" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
