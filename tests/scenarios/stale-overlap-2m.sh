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

# overlap LIMIT ARGS: dmb-overlap ARGS; its output on failure, its summary
# line always. Still running after LIMIT seconds, its IO is stuck: show
# its output, the target's status, the blocked tasks and the CPUs, and end
# the boot at once (every command after it would hang on the stuck IO).
overlap() {
	local limit="$1" t=0 pid rc
	shift
	rm -f /tmp/overlap.rc
	(dmb-overlap "$@" >/tmp/overlap.out 2>&1; echo $? >/tmp/overlap.rc) &
	pid=$!
	while [ ! -s /tmp/overlap.rc ]; do
		if [ $t -ge "$limit" ]; then
			while read -r line; do info "  $line"; done </tmp/overlap.out
			info "status: $(dmsetup status c)"
			echo w >/proc/sysrq-trigger
			echo l >/proc/sysrq-trigger
			fail "dmb-overlap ended within ${limit}s (its IO is stuck)"
			exit 1
		fi
		sleep 1
		t=$((t + 1))
	done
	wait $pid
	rc=$(cat /tmp/overlap.rc)
	cat /tmp/overlap.out
	[ "$rc" -ne 0 ] || info "$(tail -n 1 /tmp/overlap.out)"
	return "$rc"
}

dmb_load
check "format" make-bcache -q "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "readers beside small and 2 MiB writes" overlap 150 -d /dev/mapper/c \
	-s 32 -T 40 -t 2 -r 2 -L 2048 -l 15 -q 0 -D 0 -Z 0 -S 18 \
	-o "$origin" -F "dmsetup message c 0 flush"
info "status: $(dmsetup status c)"
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
