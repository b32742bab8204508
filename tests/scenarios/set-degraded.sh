# A member lost (issue #14 step 5). On a set of two, member 1 failing (an
# error target under it) no longer fails the set: it is marked failed in
# member 0's superblock and the set runs degraded on member 0. Dirty data
# is read from member 0's copies (the right bytes, never EIO, never the
# origin's older data), clean data that was on member 1 is read from the
# origin, new writeback writes go to the origin (one live member cannot
# hold two copies, and nothing is acknowledged with one), writes over the
# dirty data read back new, never the older dirty data, writeback drains
# everything, and member 1 gets no IO at all, even once it works again.
# Once no key points to it, a GC pass marks it removed: tables do not name
# it any more, and its device is refused; a set of two left with one
# member stays degraded. Tables: `-` names a member marked failed (keys
# may still point to it), in any position; its device is refused, member
# 0 never can be `-`, and every member still needs its entry. A member
# missing at open (removed with dirty data left on the set) is marked
# failed then, and its dirty data is read from member 0's copies and
# written back.
# Members and origin sit on dm tables (m0, m1, o) so that each can be
# switched to the error target.
# disks: c0=48M c1=48M origin=64M origin2=16M
# timeout: 600
. /tests/guest/dmb.sh

c0=$(disk c0)
c1=$(disk c1)
origin=$(disk origin)
origin2=$(disk origin2)
A=5e750000-0000-4e75-8e75-5e75e75e7005
B=5e750000-0000-4e75-8e75-5e75e75e7006
MiB=1048576
sz0=$(blockdev --getsz "$c0")
sz1=$(blockdev --getsz "$c1")
osz=$(blockdev --getsz "$origin")
m0=/dev/mapper/m0
m1=/dev/mapper/m1
FAILED_MSG="a cache device is a member its set marked failed (name it -)"


# retable NAME TABLE: dm device NAME now maps TABLE, under whatever uses it.
retable() {
	dmsetup suspend "$1" && dmsetup load "$1" --table "$2" && dmsetup resume "$1"
}

# verify OFF SIZE SEED [FIO...]: the writes of dirty OFF SIZE SEED read
# back through c.
verify() {
	local off="$1" size="$2" seed="$3"
	shift 3
	dmb_io "$off" "$size" randwrite 4k-64k --verify=crc32c --verify_only \
		--randseed="$seed" "$@"
}

# dirty OFF SIZE SEED: writes through c, 4k-64k, each block once, fsync'd.
dirty() {
	dmb_io "$1" "$2" randwrite 4k-64k --verify=crc32c --do_verify=0 \
		--randseed="$3" --end_fsync=1
}

# fio_on DEV OFF SIZE SEED [FIO...]: dirty's pattern on DEV itself, direct.
fio_on() {
	local dev="$1" off="$2" size="$3" seed="$4"
	shift 4
	fio --name=io --filename="$dev" --direct=1 --offset=$((off * MiB)) \
		--size=$((size * MiB)) --rw=randwrite --bsrange=4k-64k \
		--verify=crc32c --randseed="$seed" "$@" --output=/tmp/o
}

# on_origin OFF SIZE SEED: the origin holds the writes of OFF SIZE SEED.
on_origin() {
	fio_on "$origin" "$1" "$2" "$3" --verify_only
}

# member_state DEV I: member I's state in DEV's superblock.
member_state() {
	bcache-super-show "$1" | awk -F'\t' -v f="member.$2.state" '$1 == f { print $2 }'
}

# io_count NAME: reads and writes dm device NAME has completed.
io_count() {
	awk '{ print $1 + $5 }' \
		"/sys/block/dm-$(dmsetup info -c --noheadings -o minor "$1" | tr -d ' ')/stat"
}

# refused DESC CACHES ORIGIN: a table of CACHES over ORIGIN is refused,
# whatever the message.
refused() {
	check_fails "$1 refused" dmb_create bad "$2" "$3"
	dmsetup remove bad 2>/dev/null
}

dmb_load
# Member 1 stays FAILED (keys may point to it) until part e lets a GC
# pass mark it REMOVED: else a pass may do it at any moment once nothing
# points to it.
P=/sys/module/dm_bcache/parameters
echo 1 >$P/keep_failed_every
check "member 0 on a dm table" dmsetup create m0 --table "0 $sz0 linear $c0 0"
check "member 1 on a dm table" dmsetup create m1 --table "0 $sz1 linear $c1 0"
if ! make-bcache -q -b 128k $m0 $m1 2>/tmp/mk; then
	check "version 2: no set of several" grep -q "needs format version 3" /tmp/mk
	exit 0
fi
pass "format a set of two"

# a. Dirty data on both members, clean data spread over both.
check "8 MiB at 32 MiB written on the origin" fio_on "$origin" 32 8 5 --do_verify=0
check "create, writeback" dmb_create c $m0,$m1 "$origin" origin_uuid $A \
	cache_mode writeback
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "held dirty" dmsetup message c 0 writeback_running 0
check "16 MiB of dirty writes, 4k-64k, fsync'd" dirty 0 16 1
check_eq "16 MiB dirty" 32768 "$(dmb_stat c dirty)"
f0=$(dmb_stat c filled_sectors)
check "the origin's 8 MiB read through c" verify 32 8 5
check "... fill the cache" test "$(dmb_stat c filled_sectors)" -gt $((f0 + 8192))
check_eq "state ok" ok "$(dmb_stat c state)"

# b. Member 1 fails every IO: the reads of dirty data that take its
# copies fail, are served from member 0's, and its 8th error fails it.
dmesg -c >/dev/null
check "member 1 fails every IO" retable m1 "0 $sz1 error"
check "with member 1 failing, the dirty writes read back" verify 0 16 1
info "cache errors: $(dmb_stat c cache_errors), state $(dmb_stat c state)"
check_eq "the set runs degraded" degraded "$(dmb_stat c state)"
check "... logged: member 1 failing" dmesg_has "member 1 failing ("
check "... running degraded on the other members" \
	dmesg_has "running degraded on the other members"
check "dirty data kept until written back" test "$(dmb_stat c dirty)" -gt 0
# Sound again, member 1 stays failed: the set sends it nothing, and its
# IO counters tell.
check "member 1 sound again" retable m1 "0 $sz1 linear $c1 0"
n1=$(io_count m1)
check "the dirty writes read back, member 0's copies" verify 0 16 1
m=$(dmb_stat c read_misses)
check "the clean data reads back" verify 32 8 5
info "read misses: $m before, $(dmb_stat c read_misses) after"
check "... what member 1 held from the origin" test "$(dmb_stat c read_misses)" -gt "$m"
check_eq "still degraded" degraded "$(dmb_stat c state)"

# c. Writes while degraded: one live member cannot hold two copies, so
# they go to the origin; the dirty count does not grow.
d=$(dmb_stat c dirty)
check "4 MiB of writes, fsync'd" dirty 20 4 2
check "dirty did not grow" test "$(dmb_stat c dirty)" -le "$d"
check "the origin has them already" on_origin 20 4 2
check "they read back" verify 20 4 2
# Over the dirty data: the cache must not serve its older copy after.
check "16 MiB of writes over the dirty data, fsync'd" dirty 0 16 3
check "they read back, not the older dirty data" verify 0 16 3

# d. Written back from member 0, the origin holds every write.
check "write back" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "remove" dmb_remove c
check_eq "no IO to member 1 since it failed" "$n1" "$(io_count m1)"
check "the origin holds the writes over the dirty data" on_origin 0 16 3
check "and the degraded ones" on_origin 20 4 2
check "and its own data" on_origin 32 8 5
check_eq "member 0's superblock: member 1 failed" failed "$(member_state $m0 1)"
check_eq "member 1's own superblock, never written since" active "$(member_state $m1 1)"

# e. Reopen: the failed member is named `-`, in any position.
check "member 1 fails every IO" retable m1 "0 $sz1 error"
refused "member 1 named, an error target" $m0,$m1 "$origin"
check "member 1 sound again" retable m1 "0 $sz1 linear $c1 0"
dmb_refused "member 1 named, sound again" "$FAILED_MSG" \
	"0 $osz bcache $m0,$m1 $origin 2 origin_uuid $A"
dmb_refused "member 0 alone" "the table must name every member of the cache set" \
	"0 $osz bcache $m0 $origin 2 origin_uuid $A"
dmesg -c >/dev/null
check "open with member 1 as -" dmb_create c "$m0,-" "$origin" origin_uuid $A \
	cache_mode writeback
check_eq "degraded" degraded "$(dmb_stat c state)"
check "member 1 was failed already: not marked again" sh -c "! dmesg | grep -q 'member 1 missing'"
check "no bypass" dmsetup message c 0 sequential_cutoff 0
# A second table on the open set: the same devices and `-`, any order.
check "a second table, - first" dmb_create d "-,$m0" "$origin2"
check_eq "the same set's buckets" "$(dmb_stat c buckets | cut -d/ -f2)" \
	"$(dmb_stat d buckets | cut -d/ -f2)"
check "remove the second table" dmb_remove d
refused "a second table naming member 1" $m0,$m1 "$origin2"
n1=$(io_count m1)
check "1 MiB of writes" dirty 48 1 4
check_eq "... to the origin: nothing dirty" 0 "$(dmb_stat c dirty)"
check "the origin has them" on_origin 48 1 4
check "the whole device reads as the origin" dmb_same /dev/mapper/c "$origin"
check "the writes over the dirty data read back" verify 0 16 3
check "remove" dmb_remove c
check "open with - first" dmb_create c "-,$m0" "$origin" origin_uuid $A
check_eq "degraded" degraded "$(dmb_stat c state)"
check "the whole device reads as the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
refused "no member named" "-,-" "$origin"

# A GC pass finds no key pointing to member 1: REMOVED. It is not named
# any more, its device is refused, and a set of two left with one member
# stays degraded.
echo 0 >$P/keep_failed_every
check "open" dmb_create c "$m0,-" "$origin" origin_uuid $A cache_mode writeback
check "gc" dmsetup message c 0 gc
check "logged: member 1 removed" \
	dmesg_has "member 1: no key points to it any more: removed"
check_eq "still degraded: one member left" degraded "$(dmb_stat c state)"
check "remove" dmb_remove c
check_eq "member 0's superblock: member 1 removed" removed "$(member_state $m0 1)"
dmb_refused "member 1 named" "a cache device is a member its set removed" \
	"0 $osz bcache $m0,$m1 $origin 2 origin_uuid $A"
dmb_refused "- for a removed member" "the table must name every member of the cache set" \
	"0 $osz bcache $m0,- $origin 2 origin_uuid $A"
n1=$(io_count m1)	# the refusal read its superblock
check "open with member 0 alone" dmb_create c "$m0" "$origin" origin_uuid $A \
	cache_mode writeback
check_eq "degraded: one member of two" degraded "$(dmb_stat c state)"
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "1 MiB of writes" dirty 52 1 8
check_eq "... to the origin: nothing dirty" 0 "$(dmb_stat c dirty)"
check "the whole device reads as the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check_eq "no IO to member 1" "$n1" "$(io_count m1)"
echo 1 >$P/keep_failed_every

# f. A member missing at open: a fresh set removed with dirty data left
# (its origin an error target, so nothing is written back), reopened
# without member 1.
check "origin on a dm table" dmsetup create o --table "0 $osz linear $origin 0"
check "format a fresh set" make-bcache -q --wipe -b 128k $m0 $m1
dmb_refused "- for member 0, second in the list" \
	"member 0 of a cache set cannot be missing: it holds the index" \
	"0 $osz bcache $m1,- /dev/mapper/o 2 origin_uuid $B"
check "create, writeback" dmb_create c $m0,$m1 /dev/mapper/o origin_uuid $B \
	cache_mode writeback
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "held dirty" dmsetup message c 0 writeback_running 0
check "8 MiB of dirty writes, fsync'd" dirty 0 8 7
check_eq "8 MiB dirty" 16384 "$(dmb_stat c dirty)"
check_eq "state ok" ok "$(dmb_stat c state)"
check "the origin fails every IO" retable o "0 $osz error"
dmesg -c >/dev/null
check "remove, nothing written back" dmb_remove c
check "... dirty data left, logged" dmesg_has "dirty data left in the cache"
check "member 1 gone" dmsetup remove m1
dmesg -c >/dev/null
check "open without member 1" dmb_create c "$m0,-" /dev/mapper/o origin_uuid $B \
	cache_mode writeback
check "member 1 missing: marked failed, logged" \
	dmesg_has "member 1 missing: marked failed, running degraded"
check_eq "degraded" degraded "$(dmb_stat c state)"
info "dirty sectors at the open: $(dmb_stat c dirty)"
check "the dirty data is kept" test "$(dmb_stat c dirty)" -gt 0
# The origin still fails: the reads can only come from member 0.
check "the dirty writes read back from member 0's copies" verify 0 8 7
check "the origin sound again" retable o "0 $osz linear $origin 0"
check "flush" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "remove" dmb_remove c
check "the origin holds the dirty writes" on_origin 0 8 7
check_eq "member 0's superblock: member 1 failed" failed "$(member_state $m0 1)"
check "member 1 back" dmsetup create m1 --table "0 $sz1 linear $c1 0"
dmb_refused "member 1 named again" "$FAILED_MSG" \
	"0 $osz bcache $m0,$m1 /dev/mapper/o 2 origin_uuid $B"
check "remove the tables" dmsetup remove o m0 m1
