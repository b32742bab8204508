# Issue #18's repro, alone: on a writeback device, O_DIRECT readers that
# take no locks beside stamped small writes (dirty in the cache) and
# 2 MiB writes (to the origin, punching the dirty keys of their range).
# A read issued after a write completed must not return older data; at
# the end every block must equal its last completed write, through the
# device and, after a flush, on the origin. stale-overlap.sh is the whole
# mix with mode switches and reloads.
# disks: cache=48M origin=32M
# timeout: 300
# smp: 2
# (Two CPUs like stale-hunt: with one, the guest's virtio disk stalls.)
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-000000000018

dmb_load
check "format" make-bcache -q "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "readers beside small and 2 MiB writes" dmb_overlap 150 -d /dev/mapper/c \
	-s 32 -T 40 -t 2 -r 2 -L 2048 -l 15 -q 0 -D 0 -Z 0 -S 18 \
	-o "$origin" -F "dmsetup message c 0 flush"
info "status: $(dmsetup status c)"
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
