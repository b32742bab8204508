# The index's node cache (#13). With node_cache_mb=0 every clean leaf not
# in use is evicted: after a checkpoint, reads and origin-bound writes find
# their leaves gone, map() defers them to a worker that reads the leaf
# with the index unlocked, and the data stays right; so does a GC pass. A budget larger than the index keeps it: a
# second pass over the same range defers nothing. The index read back at
# open is evicted the same way.
# disks: cache=64M origin=128M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0b5e55ed-c0de-4a11-8bad-d0c5e8a3b1e5
P=/sys/module/dm_bcache/parameters/node_cache_mb

check "modprobe dm-bcache node_cache_mb=0" modprobe dm-bcache node_cache_mb=0
check_eq "the budget is 0" 0 "$(cat $P)"
# 16 KiB buckets: leaves of at most 500 keys, so 4k writes make a tree.
check "format with 16 KiB buckets" make-bcache -q -b 16k "$cache"
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback

# fio's own check: the data written is what each later pass reads.
fio_rw() {
	fio --name=n --filename=/dev/mapper/c --bs=4k --size=32M --direct=1 \
		--randrepeat=1 \
		--verify=crc32c --verify_fatal=1 --output=/tmp/fio "$@"
}
st() { dmb_stat c "$1"; }

# Writeback paused: its inserts would evict, and the read pass must not.
check "writeback paused" dmsetup message c 0 writeback_running 0
check "32 MiB of 4k random writes, dirty" fio_rw --rw=randwrite --do_verify=0 \
	--number_ios=6000
check "checkpoint: every leaf clean, then evicted" dmsetup message c 0 checkpoint
d0=$(st deferred) r0=$(st nodes_read) e0=$(st nodes_evicted)
info "depth $(st btree_depth), $(st btree_nodes) nodes resident; deferred $d0, read $r0, evicted $e0"
check "the tree has leaves under a root" test "$(st btree_depth)" -ge 2
check "leaves were evicted" test "$e0" -gt 0

check "read back and verified, leaves read on demand" fio_rw --rw=randwrite \
	--verify_only --number_ios=6000
d1=$(st deferred) r1=$(st nodes_read)
info "after the read pass: deferred $d1, read $r1, evicted $(st nodes_evicted)"
check "reads were deferred to read their leaves" test "$d1" -gt "$d0"
check "leaves were read back" test "$r1" -gt "$r0"
u1=$(st nodes_read_nolock)
check "... with the index unlocked" test "$u1" -gt 0
# Reads alone evict too: what stays is the root, the leaves of the last
# deferred read, and none of the rest.
check "nodes in memory stay within the budget after reads" \
	test "$(st btree_nodes)" -le 4

# Origin-bound writes punch the index: their lookups need leaves too.
check "cache_mode writethrough" dmsetup message c 0 cache_mode writethrough
check "checkpoint" dmsetup message c 0 checkpoint
check "4k random writes through to the origin, verified" fio_rw --rw=randwrite \
	--number_ios=3000 --randseed=7
d2=$(st deferred)
check "origin-bound writes were deferred" test "$d2" -gt "$d1"
u2=$(st nodes_read_nolock)
check "... and read their leaves with the index unlocked" test "$u2" -gt "$u1"
check "a GC pass" dmsetup message c 0 gc
check "... read leaves with the index unlocked between its steps" \
	test "$(st nodes_read_nolock)" -gt "$u2"
check "writeback resumed" dmsetup message c 0 writeback_running 1
check "writeback drains" dmsetup message c 0 flush
check "the device equals the origin" dmb_same /dev/mapper/c "$origin"

# A budget larger than the index: the second pass defers nothing.
check "budget 64 MiB at run time" sh -c "echo 64 > $P"
check "checkpoint" dmsetup message c 0 checkpoint
check "a pass that reads every leaf" fio_rw --rw=randwrite --verify_only \
	--number_ios=3000 --randseed=7
d3=$(st deferred)
check "a second pass" fio_rw --rw=randwrite --verify_only --number_ios=3000 \
	--randseed=7
check_eq "the second pass deferred nothing" "$d3" "$(st deferred)"

# The open reads the root alone (the bucket states say the rest); the
# leaves come as reads need them and, with budget 0, go again, and the
# data is still there.
check "budget 0" sh -c "echo 0 > $P"
check "remove" dmb_remove c
check "create again" dmb_create c "$cache" "$origin" origin_uuid $U
check "the open read the root alone" test "$(st nodes_read)" -le 1
check "verified after the reopen" fio_rw --rw=randwrite --verify_only \
	--number_ios=3000 --randseed=7
check "... reading leaves, and evicting them" test "$(st nodes_evicted)" -gt 0
check "the device equals the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "module unloads" rmmod dm_bcache
