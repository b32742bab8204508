# A GC pass may see an overwrite that is not durable yet: a write with no
# flush, inserted between the checkpoint's start and the pass's walk, in
# a journal entry still open. The pass finds the overwritten data's
# buckets empty. Were they freed (gens bumped) before the superblock
# names the checkpoint, a crash in between would bring back the old tree
# and the old journal, whose keys name those buckets at their old gens:
# the overwritten data, acknowledged by a flush, would be lost (issue #13,
# found by review; crash-checkpoint's random 4k writes never empty a
# bucket, so it cannot hit this).
# Deterministic: v1 fills whole buckets and is flushed; the pass waits
# with the index unlocked before its first step (gc_pause_ms) while v2
# overwrites v1 with no flush, and the journal holds v2's keys
# (journal_hold_ms). Then the log is replayed to every one of its
# entries from the checkpoint's start to its end, and each 4 KiB block
# of the region must read v1 or v2, never the origin's zeros.
# disks: data=32M log=256M scratch=32M work=32M
# timeout: 900
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

U=c2c2c2c2-c2c2-4c2c-8c2c-c2c2c2c2c2c2
P=/sys/module/dm_bcache/parameters
CS=32768        # the cache segment: 16 MiB, 256 buckets of 64 KiB
OS=16384        # the origin segment: 8 MiB
N=16            # 64 KiB writes of each version: 1 MiB, 16 buckets' worth

data=$(disk data)
log=$(disk log)
scratch=$(disk scratch)
work=$(disk work)
opts="origin_uuid $U cache_mode writeback"

dmb_load
check "modprobe dm-log-writes" modprobe dm-log-writes
check "log-writes over the data disk" dmsetup create lw \
	--table "0 $(blockdev --getsz "$data") log-writes $data $log"
check "cache segment" dmsetup create cseg --table "0 $CS linear /dev/mapper/lw 0"
check "origin segment" dmsetup create oseg --table "0 $OS linear /dev/mapper/lw $CS"
dmsetup mknodes
check "format the cache segment" make-bcache -q -b 64k /dev/mapper/cseg
sync
blockdev --flushbufs /dev/mapper/cseg
# shellcheck disable=SC2086 # $opts: several words
check "create" dmb_create c /dev/mapper/cseg /dev/mapper/oseg $opts
check "sequential_cutoff 0" dmsetup message c 0 sequential_cutoff 0
# the origin keeps its zeros: a lost v1 reads as zeros
check "writeback off" dmsetup message c 0 writeback_running 0

dd if=/dev/zero bs=64k count=$N 2>/dev/null | tr '\0' '\021' >/tmp/v1
dd if=/dev/zero bs=64k count=$N 2>/dev/null | tr '\0' '\042' >/tmp/v2
check "v1, flushed" dd if=/tmp/v1 of=/dev/mapper/c bs=64k oflag=direct conv=fsync
check "v1 is dirty in the cache" test "$(dmb_stat c dirty)" -ge $((N * 128))
check "mark: v1" dmsetup message lw 0 mark v1

check "hook: the pass pauses" sh -c "echo 3000 >$P/gc_pause_ms"
check "hook: the journal holds keys" sh -c "echo 60000 >$P/journal_hold_ms"
inv0=$(dmb_stat c invalidations)
rm -f /tmp/gc.err
(
	dmsetup message lw 0 mark gc || echo "mark gc" >>/tmp/gc.err
	dmsetup message c 0 gc || echo "gc" >>/tmp/gc.err
	dmsetup message lw 0 mark gc-end || echo "mark gc-end" >>/tmp/gc.err
) &
sleep 1
check "v2 over v1 during the pause, no flush" dd if=/tmp/v2 of=/dev/mapper/c bs=64k oflag=direct
wait
echo 0 >$P/gc_pause_ms
check "the gc and its marks" test ! -e /tmp/gc.err
# v1's buckets at least, but for the one that also held the start of v2
check "the pass freed v1's buckets" test "$(($(dmb_stat c invalidations) - inv0))" -ge $((N - 2))
check_eq "the live device reads v2" "$(md5sum </tmp/v2)" \
	"$(dd if=/dev/mapper/c bs=64k count=$N iflag=direct 2>/dev/null | md5sum)"
check "mark: end" dmsetup message lw 0 mark end
echo 0 >$P/journal_hold_ms

# The crash is the log up to any entry; the live target goes first.
check "remove the live target" dmb_remove c
for d in oseg cseg lw; do check "remove $d" dmsetup remove $d; done
dmsetup mknodes
check "the log lists" sh -c "dmb-replay-log list '$log' >/tmp/list"
first=$(dmb-replay-log find "$log" gc)
last=$(dmb-replay-log find "$log" gc-end)
check "the checkpoint's marks are in the log" test -n "$first" -a -n "$last"
# the superblock is sector 8 of the cache segment, where the log's device
# starts: the checkpoint's own write of it is the window's last
sbw=$(awk -v f="$first" -v e="$last" '!/^#/ && $1 > f && $1 < e && $2 == 8 && $3 > 0 { s = $1 } END { print s + 0 }' /tmp/list)
check "a superblock write inside the checkpoint" test "$sbw" -gt 0
awk -v f="$first" -v e="$last" '!/^#/ && $1 >= f && $1 <= e { print $1 }' /tmp/list >/tmp/points
info "checkpoint: entries $first..$last ($(wc -l </tmp/points)), its superblock at $sbw"

# blocks of v1 and of v2 in what the target reads, and bytes of neither
bad=0 lost=0 checked=0 pre=
verify_point() { # ENTRY
	local e=$1 nv1 nv2 nb
	dd if="$scratch" of="$work" bs=1M count=$(((CS + OS) / 2048)) iflag=direct oflag=direct 2>/dev/null
	dmsetup create vc --table "0 $CS linear $work 0" &&
		dmsetup create vo --table "0 $OS linear $work $CS" && dmsetup mknodes ||
		{ fail "entry $e: segments"; bad=$((bad + 1)); return; }
	# shellcheck disable=SC2086
	if ! dmb_create v /dev/mapper/vc /dev/mapper/vo $opts >/tmp/create.err 2>&1; then
		_dmb_show /tmp/create.err
		fail "entry $e: the target loads"
		bad=$((bad + 1))
	else
		dmsetup message v 0 writeback_running 0
		dd if=/dev/mapper/v of=/tmp/read bs=64k count=$N iflag=direct 2>/dev/null
		nv1=$(($(tr -cd '\021' </tmp/read | wc -c) / 4096))
		nv2=$(($(tr -cd '\042' </tmp/read | wc -c) / 4096))
		nb=$(tr -d '\021\042' </tmp/read | wc -c)
		info "entry $e: v1 $nv1 blocks, v2 $nv2, $nb bytes of neither"
		if [ "$nb" != 0 ] || [ $((nv1 + nv2)) != $((N * 16)) ]; then
			fail "entry $e: every block reads v1 or v2"
			lost=$((lost + 1))
		fi
		[ "$e" = "$pre" ] && echo "$nv1" >/tmp/pre.v1
		dmb_remove v
	fi
	dmsetup remove vo
	dmsetup remove vc
	dmsetup mknodes
	checked=$((checked + 1))
}

# the state before the checkpoint, then each entry added to it
pre=$(awk -v s="$sbw" '$1 < s { p = $1 } END { print p }' /tmp/points)
check "replay up to the checkpoint" dmb-replay-log replay -s 0 -e $((first - 1)) "$log" "$scratch"
prev=$((first - 1))
for e in $(cat /tmp/points); do
	if ! dmb-replay-log replay -s $((prev + 1)) -e "$e" "$log" "$scratch" 2>/tmp/replay.err; then
		_dmb_show /tmp/replay.err
		fail "replay entries $((prev + 1))..$e"
		break
	fi
	prev=$e
	verify_point "$e"
done
check_eq "every entry of the checkpoint checked" "$(wc -l </tmp/points)" "$checked"
check_eq "no point lost a block of v1 or v2" 0 "$lost"
check_eq "the target loaded at every point" 0 "$bad"
# The window was open: just before the checkpoint's superblock, neither
# the journal nor a checkpoint holds v2, so all of v1 must read.
check_eq "before the checkpoint's superblock: all of v1 (v2 not durable)" \
	$((N * 16)) "$(cat /tmp/pre.v1 2>/dev/null)"
