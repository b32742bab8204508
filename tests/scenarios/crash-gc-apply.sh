# Writes that land inside a checkpoint, with no flush, and a crash at any
# write of that checkpoint (issue #13; both found by review, neither hit
# by crash-checkpoint's random 4k writes).
#  A: a GC pass may see an overwrite that is not durable yet (its key is
#     in a journal entry still open) and find the overwritten data's
#     buckets empty. Were they freed (gens bumped) before the superblock
#     names the checkpoint, a crash in between would bring back the old
#     tree and journal, whose keys name those buckets at their old gens:
#     data a flush acknowledged would be lost.
#  B: keys inserted meanwhile are appended to a leaf the checkpoint on
#     disk names. Were the append to reach the media before their data (a
#     write with no flush), a crash would leave the old tree naming
#     buckets that never got it. So every write of the checkpoint is also
#     a torn point: kept, while the writes no flush covered before it are
#     lost.
# Deterministic: the pass waits with the index unlocked before its first
# step (gc_pause_ms) while the test writes, and the journal holds the
# keys (journal_hold_ms). The log is replayed to every entry from each
# checkpoint's start to its end: each 4 KiB block must read a version
# written there (A: v1 flushed, v2 not; B: v0 on the origin, v3 not
# flushed), never anything else.
# disks: data=32M log=256M scratch=32M work=32M durable=32M
# timeout: 1200
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

U=c2c2c2c2-c2c2-4c2c-8c2c-c2c2c2c2c2c2
P=/sys/module/dm_bcache/parameters
CS=32768        # the cache segment: 16 MiB, 256 buckets of 64 KiB
OS=16384        # the origin segment: 8 MiB
N=16            # A: 64 KiB writes of each version, 1 MiB at 0
N3=4            # B: 64 KiB writes, 256 KiB at 2 MiB (64k block 32)
B3=32

data=$(disk data)
log=$(disk log)
scratch=$(disk scratch)
work=$(disk work)
durable=$(disk durable)
opts="origin_uuid $U cache_mode writeback"
IMG=$(((CS + OS) / 2048))       # MiB of the two segments

pattern() { dd if=/dev/zero bs=64k count="$2" 2>/dev/null | tr '\0' "$1"; }
pattern '\021' $N >/tmp/v1
pattern '\042' $N >/tmp/v2
pattern '\063' $N3 >/tmp/v0
pattern '\104' $N3 >/tmp/v3

dmb_load
dmb_log_segments "$data" "$log" $CS $OS
check "v0 on the origin" dd if=/tmp/v0 of=/dev/mapper/oseg bs=64k seek=$B3 oflag=direct conv=fsync
sync
blockdev --flushbufs /dev/mapper/cseg
# shellcheck disable=SC2086 # $opts: several words
check "create" dmb_create c /dev/mapper/cseg /dev/mapper/oseg $opts
check "sequential_cutoff 0" dmsetup message c 0 sequential_cutoff 0
# the origin keeps what it had: a lost v1 reads as zeros
check "writeback off" dmsetup message c 0 writeback_running 0

check "v1, flushed" dd if=/tmp/v1 of=/dev/mapper/c bs=64k oflag=direct conv=fsync
check "v1 is dirty in the cache" test "$(dmb_stat c dirty)" -ge $((N * 128))
check "hook: the pass pauses" sh -c "echo 3000 >$P/gc_pause_ms"
check "hook: the journal holds keys" sh -c "echo 60000 >$P/journal_hold_ms"

# gc_window NAME: a "gc" between log marks NAME and NAME-end, in the
# background; the caller writes during its pause, then waits.
gc_window() {
	rm -f /tmp/gc.err
	(
		dmsetup message lw 0 mark "$1" || echo "mark $1" >>/tmp/gc.err
		dmsetup message c 0 gc || echo "gc" >>/tmp/gc.err
		dmsetup message lw 0 mark "$1-end" || echo "mark $1-end" >>/tmp/gc.err
	) &
	sleep 1
}

inv0=$(dmb_stat c invalidations)
gc_window A
check "A: v2 over v1 during the pause, no flush" dd if=/tmp/v2 of=/dev/mapper/c bs=64k oflag=direct
wait
check "A: the gc and its marks" test ! -e /tmp/gc.err
# v1's buckets at least, but for the one that also held the start of v2
check "A: the pass freed v1's buckets" test "$(($(dmb_stat c invalidations) - inv0))" -ge $((N - 2))

gc_window B
check "B: v3 during the pause, no flush" dd if=/tmp/v3 of=/dev/mapper/c bs=64k seek=$B3 oflag=direct
wait
check "B: the gc and its marks" test ! -e /tmp/gc.err
echo 0 >$P/gc_pause_ms
check_eq "the live device reads v2" "$(md5sum </tmp/v2)" \
	"$(dd if=/dev/mapper/c bs=64k count=$N iflag=direct 2>/dev/null | md5sum)"
check_eq "the live device reads v3" "$(md5sum </tmp/v3)" \
	"$(dd if=/dev/mapper/c bs=64k skip=$B3 count=$N3 iflag=direct 2>/dev/null | md5sum)"
check "mark: end" dmsetup message lw 0 mark end
echo 0 >$P/journal_hold_ms

# The crash is the log up to any entry; the live target goes first.
check "remove the live target" dmb_remove c
for d in oseg cseg lw; do check "remove $d" dmsetup remove $d; done
dmsetup mknodes
check "the log lists" sh -c "dmb-replay-log list '$log' >/tmp/list"
for w in A B; do
	f=$(dmb-replay-log find "$log" $w)
	e=$(dmb-replay-log find "$log" $w-end)
	check "$w: the checkpoint's marks are in the log" test -n "$f" -a -n "$e"
	awk -v f="$f" -v e="$e" '!/^#/ && $1 >= f && $1 <= e { print $1 }' /tmp/list >/tmp/points.$w
	# the superblock is sector 8 of the cache segment, where the log's
	# device starts: the checkpoint's own write of it is the window's last
	s=$(awk -v f="$f" -v e="$e" '!/^#/ && $1 > f && $1 < e && $2 == 8 && $3 > 0 { s = $1 } END { print s + 0 }' /tmp/list)
	check "$w: a superblock write inside the checkpoint" test "$s" -gt 0
	echo "$f $e $s" >/tmp/window.$w
	info "$w: entries $f..$e ($(wc -l </tmp/points.$w)), its superblock at $s"
done

# count FILE BYTE: 4 KiB blocks of FILE made of BYTE (an octal escape)
count() { echo $(($(tr -cd "$2" <"$1" | wc -c) / 4096)); }
# Load the image in $work and read both regions: A's must be v1 or v2,
# B's v0 or v3. Sets NV1 (blocks of v1 read), counts failures.
bad=0 lost=0 checked=0
verify_point() { # DESC
	local d=$1 nb
	NV1=
	dmsetup create vc --table "0 $CS linear $work 0" &&
		dmsetup create vo --table "0 $OS linear $work $CS" && dmsetup mknodes ||
		{ fail "$d: segments"; bad=$((bad + 1)); return; }
	# shellcheck disable=SC2086
	if ! dmb_create v /dev/mapper/vc /dev/mapper/vo $opts >/tmp/create.err 2>&1; then
		_dmb_show /tmp/create.err
		fail "$d: the target loads"
		bad=$((bad + 1))
	else
		dmsetup message v 0 writeback_running 0
		dd if=/dev/mapper/v of=/tmp/ra bs=64k count=$N iflag=direct 2>/dev/null
		dd if=/dev/mapper/v of=/tmp/rb bs=64k skip=$B3 count=$N3 iflag=direct 2>/dev/null
		NV1=$(count /tmp/ra '\021')
		nb=$(($(tr -d '\021\042' </tmp/ra | wc -c) + $(tr -d '\063\104' </tmp/rb | wc -c)))
		info "$d: A v1 $NV1 v2 $(count /tmp/ra '\042'), B v0 $(count /tmp/rb '\063') v3 $(count /tmp/rb '\104'), $nb bytes of neither"
		if [ "$nb" != 0 ] || [ "$(wc -c </tmp/ra)" != $((N * 65536)) ] ||
			[ "$(wc -c </tmp/rb)" != $((N3 * 65536)) ]; then
			fail "$d: every block reads a version written there"
			lost=$((lost + 1))
		fi
		dmb_remove v
	fi
	dmsetup remove vo
	dmsetup remove vc
	dmsetup mknodes
	checked=$((checked + 1))
}
copy() { dd if="$1" of="$work" bs=1M count=$IMG iflag=direct oflag=direct 2>/dev/null; }

# Prefix points: the state before each checkpoint, then each entry added.
prev=-1 npoints=0
for w in A B; do
	read -r f e s </tmp/window.$w
	pre=$(awk -v s="$s" '$1 < s { p = $1 } END { print p }' /tmp/points.$w)
	for p in $(cat /tmp/points.$w); do
		if ! dmb-replay-log replay -s $((prev + 1)) -e "$p" "$log" "$scratch" 2>/tmp/replay.err; then
			_dmb_show /tmp/replay.err
			fail "replay entries $((prev + 1))..$p"
			break
		fi
		prev=$p
		copy "$scratch"
		verify_point "$w: entry $p"
		[ "$p" = "$pre" ] && echo "$NV1" >/tmp/pre.$w
	done
	npoints=$((npoints + $(wc -l </tmp/points.$w)))
done
# The window was open: just before A's superblock, neither the journal
# nor a checkpoint holds v2, so all of v1 must read.
check_eq "A: before the checkpoint's superblock, all of v1 (v2 not durable)" \
	$((N * 16)) "$(cat /tmp/pre.A 2>/dev/null)"

# Torn points: for every plain write P to the cache inside a checkpoint
# that follows writes no flush has covered yet, the state where only P,
# the FUA writes, and what the last flush before P covered reached the
# media. An append (or a parent) reaching the media before what it
# names shows here; prefixes never reorder.
awk -v cs="$CS" '
	/^#/ { next }
	$4 ~ /MARK/ && $5 ~ /^[AB]$/ { in_w = 1 }
	in_w && $4 !~ /FLUSH|MARK/ && $2 < cs && lost { print $1 ":" (f + 0) ":" fua }
	$4 ~ /FLUSH/ { f = $1; fua = ""; lost = 0; next }
	$4 ~ /FUA/ { fua = fua ($1 ","); next }
	$4 !~ /MARK/ { lost = 1 }
	$4 ~ /MARK/ && $5 ~ /^[AB]-end$/ { in_w = 0 }' /tmp/list >/tmp/torn
info "$(wc -l </tmp/torn) torn points"
check "there are torn points" test -s /tmp/torn
dd if=/dev/zero of="$durable" bs=1M count=$IMG oflag=direct 2>/dev/null
DMB_TORN_PREV=-1 torn=0
for t in $(cat /tmp/torn); do
	idx=${t%%:*} r=${t#*:}
	f=${r%%:*} fua=${r#*:}
	dmb_torn_state "$log" "$durable" "$work" $IMG "$f" "$fua" "$idx" ||
		{ fail "torn: the state of entry $idx"; break; }
	verify_point "torn: entry $idx alone after the flush at $f"
	torn=$((torn + 1))
done

check_eq "every point checked" $((npoints + $(wc -l </tmp/torn))) "$checked"
check_eq "no point read a block that was never written there" 0 "$lost"
check_eq "the target loaded at every point" 0 "$bad"
