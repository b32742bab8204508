# Dirty data on two members (issue #14 step 4). On a set of two, a dirty
# write is acknowledged once both members hold it, and its key points to
# both copies. A copy that fails its checksum (member 1's data buckets
# zeroed underneath) or cannot be read (member 1 an error target) is
# logged and dropped, and the read is served from the other copy: the
# right bytes, never EIO and never the origin's older data. Writeback
# copies from the good copy, and the origin ends with every write.
# (Debian 6.1's dm-flakey corrupts no read: its corrupt_bio_byte walks
# the bio at completion, when its iterator is spent.)
# Member 1 holds data but neither index nor journal. Its read errors put
# the set in degraded state (member 1 marked failed), after which dirty
# data is read from member 0's copies and written back.
# disks: c0=48M c1=48M origin=64M
# timeout: 600
. /tests/guest/dmb.sh

c0=$(disk c0)
c1=$(disk c1)
origin=$(disk origin)
A=5e750000-0000-4e75-8e75-5e75e75e7001
MiB=1048576
sz1=$(blockdev --getsz "$c1")


# zero_data DEV: zeros over member DEV's data buckets, under the set.
zero_data() {
	# shellcheck disable=SC2046 # its two words
	set -- "$1" $(dmb_data_layout "$1")
	dd if=/dev/zero of="$1" bs="$2" seek="$3" oflag=direct 2>/dev/null
	[ "$(dmb_data_bytes "$1")" = 0 ]
}

# member1 TABLE: member 1's device now maps TABLE, under a running set.
member1() {
	dmsetup suspend m1 && dmsetup load m1 --table "$1" && dmsetup resume m1
}

# verify OFF SIZE SEED [FIO...]: the writes of dirty OFF SIZE SEED read back.
verify() {
	local off=$1 size=$2 seed=$3
	shift 3
	dmb_io "$off" "$size" randwrite 4k-64k --verify=crc32c --verify_only \
		--randseed="$seed" "$@"
}

dirty() {
	dmb_io "$1" "$2" randwrite 4k-64k --verify=crc32c --do_verify=0 \
		--randseed="$3" --end_fsync=1
}

dmb_load
check "member 0 on a dm table" dmsetup create m0 --table "0 $(blockdev --getsz "$c0") linear $c0 0"
check "member 1 on a dm table" dmsetup create m1 --table "0 $sz1 linear $c1 0"
if ! make-bcache -q -b 128k /dev/mapper/m0 /dev/mapper/m1 2>/tmp/mk; then
	check "version 2: no set of several" grep -q "needs format version 3" /tmp/mk
	exit 0
fi
pass "format a set of two"
check "create, writeback" dmb_create c /dev/mapper/m0,/dev/mapper/m1 "$origin" \
	origin_uuid $A cache_mode writeback
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "held dirty" dmsetup message c 0 writeback_running 0

used0=$(dmb_stat c buckets | cut -d/ -f1)
check "16 MiB of dirty writes, 4k-64k, fsync'd" dirty 0 16 1
check_eq "16 MiB dirty" 32768 "$(dmb_stat c dirty)"
used=$(dmb_stat c buckets | cut -d/ -f1)
info "buckets used: $used0 before, $used after (128 KiB each)"
# One copy is 128 buckets; two are 256, less the open buckets' rest.
check "the set holds two copies" test $((used - used0)) -ge 250
check "they read back" verify 0 16 1
d1=$(dmb_data_bytes "$c1")
info "data bytes on member 1: $d1"
# Without mirroring, member 1 would hold about half.
check "member 1 holds a copy of every write" test "$d1" -gt $((15 * MiB))
check_eq "no checksum errors" 0 "$(dmb_stat c csum_errors)"
check_eq "no cache errors" 0 "$(dmb_stat c cache_errors)"
check "the origin does not have them yet" sh -c \
	"! fio --name=io --filename='$origin' --direct=1 --size=$((16 * MiB)) \
	--rw=randwrite --bsrange=4k-64k --verify=crc32c --verify_only --randseed=1 \
	--output=/tmp/o"

# Written back, clean data keeps one copy: GC frees the other's buckets
# (counted from before writeback: a GC pass may come on its own after).
used=$(dmb_stat c buckets | cut -d/ -f1)
check "write back" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "the origin has them" fio --name=io --filename="$origin" --direct=1 \
	--size=$((16 * MiB)) --rw=randwrite --bsrange=4k-64k --verify=crc32c \
	--verify_only --randseed=1 --output=/tmp/o
check "gc" dmsetup message c 0 gc
used2=$(dmb_stat c buckets | cut -d/ -f1)
info "buckets used: $used before writeback, $used2 after it and gc"
check "a copy's buckets freed" test $((used - used2)) -ge 120
check "the clean data reads back, hits" verify 0 16 1
check_eq "no checksum errors" 0 "$(dmb_stat c csum_errors)"
check "held dirty again" dmsetup message c 0 writeback_running 0
check "16 MiB of dirty writes over them" dirty 0 16 3

# Member 1's data goes bad under the set: every copy there fails its
# checksum, is confirmed by a second read, dropped and served from member 0.
dmesg -c >/dev/null
check "member 1's data buckets zeroed underneath" zero_data "$c1"
check "with member 1 corrupt, the dirty writes read back" verify 0 16 3
e=$(dmb_stat c csum_errors)
info "checksum errors: $e"
check "bad copies counted" test "$e" -gt 0
check "... and logged" dmesg_has "a copy of dirty data failed"
# A bad copy is dropped from its key, so it is read once. One IO at a
# time, a read takes its key's first copy (no other read in flight): the
# passes soon find none bad left, where a copy kept would fail every pass.
clean=no
for pass in 1 2 3 4; do
	check "pass $pass, one IO at a time, reads back" verify 0 16 3 --iodepth=1
	n=$(dmb_stat c csum_errors)
	info "pass $pass: $((n - e)) more checksum errors"
	if [ "$n" = "$e" ]; then
		clean=yes
		break
	fi
	e=$n
done
check_eq "a pass with no bad copy left to read" yes "$clean"
check "and at depth 8, both copies' members busy" verify 0 16 3

# Member 1 cannot be read at all: its copies of new dirty data fail with
# an IO error and are dropped the same way.
check "member 1 sound again" member1 "0 $sz1 linear $c1 0"
check "8 MiB more dirty writes" dirty 16 8 2
check "member 1 fails every IO" member1 "0 $sz1 error"
ce=$(dmb_stat c cache_errors)
check "with member 1 unreadable, they read back" verify 16 8 2
check "read errors counted" test "$(dmb_stat c cache_errors)" -gt "$ce"
check_eq "... and they put the set in degraded state" degraded "$(dmb_stat c state)"
check "the first writes read back too" verify 0 16 3

# Writeback takes every extent from a copy that reads right.
check "write back" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "remove" dmb_remove c
check "the origin holds the first writes" fio --name=io --filename="$origin" \
	--direct=1 --size=$((16 * MiB)) --rw=randwrite --bsrange=4k-64k \
	--verify=crc32c --verify_only --randseed=3 --output=/tmp/o
check "and the second" fio --name=io --filename="$origin" --direct=1 \
	--offset=$((16 * MiB)) --size=$((8 * MiB)) --rw=randwrite --bsrange=4k-64k \
	--verify=crc32c --verify_only --randseed=2 --output=/tmp/o
check "remove the members" dmsetup remove m0 m1
