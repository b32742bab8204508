# A cache set of three members (format version 3, issue #14): fills,
# writethrough writes and dirty writes spread over all three, each dirty
# write on two of them; everything reads back, writeback leaves one copy
# and GC frees the second copies' buckets; the set opens again with its
# members named in another order, and its data is hit.
# disks: c0=32M c1=32M c2=32M origin=64M
# timeout: 600
. /tests/guest/dmb.sh

c0=$(disk c0)
c1=$(disk c1)
c2=$(disk c2)
origin=$(disk origin)
A=5e750000-0000-4e75-8e75-5e75e75e7003
MiB=1048576


dmb_load
if ! make-bcache -q -b 128k "$c0" "$c1" "$c2" 2>/tmp/mk; then
	check "version 2: no set of several" grep -q "needs format version 3" /tmp/mk
	exit 0
fi
pass "format a set of three"
check "create" dmb_create c "$c0,$c1,$c2" "$origin" origin_uuid $A
check "opened on 3 devices" dmesg_has "on 3 devices"
check "no bypass" dmsetup message c 0 sequential_cutoff 0

check "writethrough writes, 4k-64k" dmb_io 0 12 randwrite 4k-64k --verify=crc32c \
	--do_verify=0 --randseed=1
check "read misses fill" dmb_io 12 12 randread 4k-256k
check "writeback" dmsetup message c 0 cache_mode writeback
check "held dirty" dmsetup message c 0 writeback_running 0
used0=$(dmb_stat c buckets | cut -d/ -f1)
check "12 MiB of dirty writes, fsync'd" dmb_io 24 12 randwrite 4k-64k \
	--verify=crc32c --do_verify=0 --randseed=2 --end_fsync=1
check_eq "12 MiB dirty" 24576 "$(dmb_stat c dirty)"
used=$(dmb_stat c buckets | cut -d/ -f1)
info "buckets used: $used0 before the dirty writes, $used after (128 KiB each)"
# One copy is 96 buckets; two are 192, less the open buckets' rest.
check "two copies of each" test $((used - used0)) -ge 185
for d in "$c0" "$c1" "$c2"; do
	b=$(dmb_data_bytes "$d")
	info "data bytes on $d: $b"
	# 24 MiB of copies over three members, and clean data besides.
	check "member $d holds its share" test "$b" -gt $((8 * MiB))
done
check "the dirty writes read back" dmb_io 24 12 randwrite 4k-64k --verify=crc32c \
	--verify_only --randseed=2
check "the writethrough writes too" dmb_io 0 12 randwrite 4k-64k --verify=crc32c \
	--verify_only --randseed=1

# Before writeback: a GC pass may come on its own once it is done.
used=$(dmb_stat c buckets | cut -d/ -f1)
check "write back" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "gc" dmsetup message c 0 gc
used2=$(dmb_stat c buckets | cut -d/ -f1)
info "buckets used: $used before writeback, $used2 after it and gc"
check "the second copies' buckets freed" test $((used - used2)) -ge 90
check "remove" dmb_remove c
check "bcache-check of the set, every copy read" bcache-check -q --data "$c1" "$c2" "$c0"

check "open again, members in another order" dmb_create c "$c2,$c0,$c1" "$origin" \
	origin_uuid $A
h0=$(dmb_stat c read_hits)
check "the dirty writes read back from the cache" dmb_io 24 12 randwrite 4k-64k \
	--verify=crc32c --verify_only --randseed=2
check "... as hits" test "$(dmb_stat c read_hits)" -gt $((h0 + 100))
check "the origin has them" sh -c "dmsetup remove c && fio --name=io \
	--filename='$origin' --direct=1 --offset=$((24 * MiB)) --size=$((12 * MiB)) \
	--rw=randwrite --bsrange=4k-64k --verify=crc32c --verify_only --randseed=2 \
	--output=/tmp/o"
