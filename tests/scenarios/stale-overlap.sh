# Hunt stale reads that overlap writes, in writeback (issues #12, #18).
# dmb-overlap's readers take no locks, so reads land on blocks being
# written; each block read must hold a version at least as new as the
# last write that had completed when the read was issued. Writes mix
# small ones (dirty in the cache) with ones that go to the origin (over
# 1 MiB, sequential past the cutoff, discards, write-zeroes), which punch
# dirty data out of the index, while the script switches cache_mode,
# sends gc and flush and reloads the table, and writeback runs batch
# after batch. After the load every block must equal its last completed
# write, through the device and, after a flush, on the origin.
# stale-overlap-2m.sh is issue #18's repro alone.
# disks: cache=48M origin=64M
# timeout: 420
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

# Writeback batches back to back, beside the writes to the origin.
check "writeback_percent 0" dmsetup message c 0 writeback_percent 0

# The admin's hand meanwhile: every op in order, one at a time, for
# SECONDS and at least one round of all eight (a slow kernel takes
# longer); then the load ends (the final checks run without them).
chaos() {
	local end=$(($(date +%s) + $1)) i=0 op t rc
	: >/tmp/chaos.log
	while [ "$(date +%s)" -lt "$end" ] || [ $i -lt 8 ]; do
		case $((i % 8)) in
		0) op="cache_mode writethrough" ;;
		1) op=gc ;;
		2) op="cache_mode writearound" ;;
		3) op=reload ;;
		4) op="cache_mode writeback" ;;
		5) op=flush ;;
		6) op=reload ;;
		*) op=gc ;;
		esac
		t=$(date +%s)
		if [ "$op" = reload ]; then
			dmsetup table c >/tmp/table &&
				dmsetup suspend c &&
				dmsetup load c /tmp/table
			rc=$?
			dmsetup resume c || rc=$((rc + 100))
			# a new table starts with the default tunables
			dmsetup message c 0 writeback_percent 0 || rc=$((rc + 200))
		else
			# shellcheck disable=SC2086 # the message's words
			dmsetup message c 0 $op
			rc=$?
		fi
		echo "$op: exit $rc, $(($(date +%s) - t)) s" >>/tmp/chaos.log
		info "chaos: $op: exit $rc, $(($(date +%s) - t)) s"
		i=$((i + 1))
		sleep 2
	done
	if [ "$(dmb_stat c mode)" != writeback ]; then
		dmsetup message c 0 cache_mode writeback
		rc=$?
		echo "cache_mode writeback (last): exit $rc, -" >>/tmp/chaos.log
		info "chaos: cache_mode writeback (last): exit $rc"
	fi
	touch /tmp/chaos.done
}

rm -f /tmp/chaos.done
chaos 80 &
cpid=$!
# -T: the chaos is stuck past it (the next check fails).
check "readers beside every kind of write, mode switches, gc, flush, reloads" \
	dmb_overlap 390 -d /dev/mapper/c -s 64 -T 240 -E /tmp/chaos.done \
	-t 3 -r 2 -S 12 -o "$origin" -F "dmsetup message c 0 flush"
check "the load lasted as long as the chaos" test -e /tmp/chaos.done
wait $cpid
check "every mode switch, gc, flush and reload succeeded" \
	sh -c '! grep -v "exit 0," /tmp/chaos.log'
check "some of each ran" test "$(grep -c reload /tmp/chaos.log)" -ge 2
check_eq "back in writeback" writeback "$(dmb_stat c mode)"
info "status: $(dmsetup status c)"
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
