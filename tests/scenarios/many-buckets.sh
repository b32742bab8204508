# A cache of millions of buckets (issue #13): a 16 GiB sparse disk with
# 4 KiB buckets, about 4 million of them, through GC passes, checkpoints
# (each writes the whole bucket array, 16 MiB), a clean close and an open
# from the bucket states, in writeback. The walks over every bucket
# (a pass's start and end, a checkpoint's end, the array's fill, the
# open) must let the CPU go: the harness fails the test on a soft lockup
# or a hung task; inserts go on between the chunks of a pass's walks.
# Not covered: reclaim's walk for victims, which needs a
# full cache (16 GiB of fills is hours in TCG).
# disks: cache=16G origin=256M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-0000000004b1
wr() {
	fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k --size=256M \
		--io_size=64M --randrepeat=1 --direct=1 \
		--verify=crc32c --do_verify=0 --output=/tmp/w
}
# Run "$@" with gc sent again and again until it is done.
gc_during() {
	"$@" &
	p=$!
	n=0
	while kill -0 $p 2>/dev/null; do
		dmsetup message c 0 gc || { wait $p; return 1; }
		n=$((n + 1))
	done
	info "$n gc passes while it ran"
	wait $p
}
verify() {
	fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k --size=256M \
		--io_size=64M --randrepeat=1 --direct=1 \
		--verify=crc32c --verify_only --output=/tmp/v
}

dmb_load
check "format: 4k buckets on 16 GiB" make-bcache -q -b 4k "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
b=$(dmb_stat c buckets)
info "buckets: $b"
check "millions of buckets" test "${b#*/}" -ge 4000000
check "64 MiB of dirty 4k writes" wr
for i in 1 2 3; do
	check "gc $i" dmsetup message c 0 gc
done
# The walks of a pass (its start and end) let inserts in between their
# chunks: a bucket they leave with too few live sectors is freed with
# data in it, which then fails its check.
check "gc passes while the same writes go again" gc_during wr
check "checkpoint" dmsetup message c 0 checkpoint
info "status: $(dmsetup status c)"
check "the data reads back" verify
check "clean close (writes the dirty data back)" dmb_remove c
check "reopen, from the bucket states" dmb_create c "$cache" "$origin" origin_uuid $U
check "the open read at most 2 nodes" test "$(dmb_stat c nodes_read)" -le 2
check "the data reads back after the reopen" verify
check "gc after the reopen" dmsetup message c 0 gc
check "remove" dmb_remove c
check "bcache-check" bcache-check "$cache"
