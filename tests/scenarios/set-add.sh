# A member added to a cache set (issue #14 step 5): make-bcache --add
# formats a device as a new member of a set, and it joins when a table
# names it. It takes an index no key can point to: a new one while the
# lost member is still FAILED, or the lost member's own once a GC pass
# found no key pointing to it (REMOVED), and never the index of a member
# keys may still point to, whose gens the new device does not have.
# While a lost member is FAILED the set stays degraded; with a new member
# dirty writes have two copies again (on the two live members); once the
# lost member is REMOVED the set is degraded no more, and a table no
# longer names it. A set of several left with one member is degraded:
# its dirty writes go to the origin, never with one copy.
# disks: c0=48M c1=48M c2=48M origin=64M
# timeout: 600
. /tests/guest/dmb.sh

c0=$(disk c0)
c1=$(disk c1)
c2=$(disk c2)
origin=$(disk origin)
A=5e750000-0000-4e75-8e75-5e75e75e7008
MiB=1048576
osz=$(blockdev --getsz "$origin")
m0=/dev/mapper/m0
m1=/dev/mapper/m1
m2=/dev/mapper/m2

# retable NAME TABLE: dm device NAME now maps TABLE, under whatever uses it.
retable() {
	dmsetup suspend "$1" && dmsetup load "$1" --table "$2" && dmsetup resume "$1"
}

# verify OFF SIZE SEED: the writes of dirty OFF SIZE SEED read back through c.
verify() {
	dmb_io "$1" "$2" randwrite 4k-64k --verify=crc32c --verify_only --randseed="$3"
}

# dirty OFF SIZE SEED: writes through c, 4k-64k, each block once, fsync'd.
dirty() {
	dmb_io "$1" "$2" randwrite 4k-64k --verify=crc32c --do_verify=0 \
		--randseed="$3" --end_fsync=1
}

# on_origin OFF SIZE SEED: the origin holds the writes of OFF SIZE SEED.
on_origin() {
	fio --name=io --filename="$origin" --direct=1 --offset=$(($1 * MiB)) \
		--size=$(($2 * MiB)) --rw=randwrite --bsrange=4k-64k --verify=crc32c \
		--verify_only --randseed="$3" --output=/tmp/o
}

# sb FIELD DEV: a field of DEV's superblock (bcache-super-show).
sb() {
	bcache-super-show "$2" | awk -F'\t' -v f="$1" '$1 == f { print $2 }'
}

# open CACHES: the table over the origin, writeback, writes held dirty.
open() {
	dmb_create c "$1" "$origin" origin_uuid $A cache_mode writeback &&
		dmsetup message c 0 sequential_cutoff 0 &&
		dmsetup message c 0 writeback_running 0
}

dmb_load
# Member 1 stays FAILED until the part that lets a GC pass mark it
# REMOVED: else a pass may do it as soon as nothing points to it.
P=/sys/module/dm_bcache/parameters
echo 1 >$P/keep_failed_every
for i in 0 1 2; do
	eval "dev=\$c$i"
	check "member device m$i on a dm table" dmsetup create m$i \
		--table "0 $(blockdev --getsz "$dev") linear $dev 0"
done
sz1=$(blockdev --getsz "$c1")
if ! make-bcache -q -b 128k $m0 $m1 2>/tmp/mk; then
	check "version 2: no set of several" grep -q "needs format version 3" /tmp/mk
	exit 0
fi
pass "format a set of two"

# Member 1 lost: degraded, dirty writes to the origin.
check "open" open "$m0,$m1"
check "8 MiB of dirty writes" dirty 0 8 1
check "member 1 fails every IO" retable m1 "0 $sz1 error"
check "read back, member 1's copies failing" verify 0 8 1
check_eq "degraded" degraded "$(dmb_stat c state)"
check "remove (writes back)" dmb_remove c

# A new member while member 1 is FAILED: index 2, and the table names
# member 1 as "-".
check "add a member" make-bcache -q --add $m0 $m2
check_eq "it takes index 2: member 1's may still be pointed to" 2 "$(sb sb.dev_idx $m2)"
check_eq "... never written by the set yet" 0 "$(sb sb.seq $m2)"
dmb_refused "a table that leaves member 1 out" "the table must name every member" \
	"0 $osz bcache $m0,$m2 $origin 2 origin_uuid $A"
dmesg -c >/dev/null
check "open with the new member" open "$m0,-,$m2"
check "logged: member 2 added" dmesg_has "member 2 added"
check_eq "member 0's superblock: member 2 active" active "$(sb member.2.state $m0)"
check_eq "still degraded: member 1 is FAILED" degraded "$(dmb_stat c state)"
b2=$(dmb_data_bytes $m2)
check "8 MiB of dirty writes" dirty 8 8 2
check_eq "... kept dirty: two live members hold them" 16384 "$(dmb_stat c dirty)"
check "... member 2 holds copies" test "$(dmb_data_bytes $m2)" -gt $((b2 + 4 * MiB))
check "they read back" verify 8 8 2
# A GC pass finds no key pointing to member 1 (every copy on it was
# written back or dropped): REMOVED. One may come on its own meanwhile.
echo 0 >$P/keep_failed_every
check "write back" dmsetup message c 0 writeback_running 1
check "flush" dmsetup message c 0 flush
check "gc" dmsetup message c 0 gc
check "logged: member 1 removed" dmesg_has "member 1: no key points to it any more: removed"
check_eq "degraded no more" ok "$(dmb_stat c state)"
check "remove" dmb_remove c
check_eq "member 0's superblock: member 1 removed" removed "$(sb member.1.state $m0)"
dmb_refused "\"-\" for a removed member" "the table must name every member" \
	"0 $osz bcache $m0,-,$m2 $origin 2 origin_uuid $A"
check "open without member 1" open "$m0,$m2"
check_eq "ok" ok "$(dmb_stat c state)"
check "the first writes read back" verify 0 8 1
check "the second" verify 8 8 2
check "remove" dmb_remove c

# Member 1's index again, for a fresh device: REMOVED, no key points to
# it. A set of three.
check "member 1 sound again" retable m1 "0 $sz1 linear $c1 0"
# Zeroed, so that its data bytes count only what the set writes to it.
check "its old data zeroed" dd if=/dev/zero of=$m1 bs=1M count=$((sz1 / 2048)) \
	oflag=direct status=none
check "add it anew" make-bcache -q --add $m0 $m1
check_eq "it takes index 1" 1 "$(sb sb.dev_idx $m1)"
dmesg -c >/dev/null
check "open with three" open "$m0,$m1,$m2"
check "logged: member 1 added" dmesg_has "member 1 added"
check_eq "ok" ok "$(dmb_stat c state)"
b1=$(dmb_data_bytes $m1)
check "16 MiB of dirty writes" dirty 16 16 3
check "... member 1 holds copies" test "$(dmb_data_bytes $m1)" -gt $((b1 + 4 * MiB))
check "they read back" verify 16 16 3
check "remove (writes back)" dmb_remove c
check "the origin holds the first writes" on_origin 0 8 1
check "the second" on_origin 8 8 2
check "the third" on_origin 16 16 3

# Two members lost of three, with dirty data on them: the writes whose
# two copies were both on them are lost, and reads of them fail (never
# the origin's older data); the rest reads back from member 0. Lost data
# is nothing to write back (flush completes) and a write over it
# replaces it. One member left: degraded, dirty writes to the origin.
check "open" open "$m0,$m1,$m2"
check "8 MiB of dirty writes" dirty 40 8 5
check "member 1 fails every IO" retable m1 "0 $sz1 error"
check "member 2 fails every IO" retable m2 "0 $(blockdev --getsz "$c2") error"
check_fails "read back: some fail" verify 40 8 5
check "the clean data reads back, from member 0 or the origin" verify 16 16 3
check "logged: member 1 failing" dmesg_has "member 1 failing"
check "logged: member 2 failing" dmesg_has "member 2 failing"
check "flush" dmsetup message c 0 writeback_running 1
check "flush: the lost data is nothing to write back" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check_fails "the lost writes still fail to read" verify 40 8 5
check "8 MiB over them" dirty 40 8 6
check "they read back" verify 40 8 6
check "1 MiB of writes" dirty 48 1 4
check_eq "written to the origin: one member cannot hold two copies" 0 "$(dmb_stat c dirty)"
check_eq "degraded" degraded "$(dmb_stat c state)"
check "remove" dmb_remove c
check "the origin holds them" on_origin 40 8 6
check "and the others" on_origin 48 1 4
check "remove the members" dmsetup remove m0 m1 m2
