# Crash consistency from a dm-log-writes log. ONE log-writes device over
# the data disk; the cache device and the origin are two linear segments
# of it, so that one log totally orders the writes of both. A workload
# (dmb-crashload: batches of random writes, checked reads, an fsync, an
# "ackN" mark) runs through the target; then for a sample of the log's
# FLUSH/FUA/MARK entries and a few plain writes (each prefix of the log is
# a state a crash could leave both devices in; dmb-replay-log) the log is
# replayed up to there onto a scratch disk, the same
# two segments are carved from a copy of it, and the target must load
# over them, read what the origin holds (writethrough: the origin is the
# truth) and hold every write acknowledged before that point. Self-checks
# prove that a lost write and a stale read would be caught.
# Mode: DMB_CACHE_MODE (default writethrough; crash-log-writes-writeback.sh).
# DMB_CRASH_GC=N (crash-checkpoint.sh): N checkpoints ("gc" messages) run
# beside the workload, between marks gcK and gcK-end, and every metadata
# write, flush and mark inside them is a point (a crash at each write of a
# checkpoint; the workload's data writes meanwhile: a sample),
# and every write to the cache there is also a torn point: kept, while
# the writes no flush covered yet before it are lost.
# disks: data=64M log=512M scratch=64M work=64M model=4M
# timeout: 900
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

MODE=${DMB_CACHE_MODE:-writethrough}
GCS=${DMB_CRASH_GC:-0}
U=c1c1c1c1-c1c1-4c1c-8c1c-c1c1c1c1c1c1
CS=32768        # the cache segment: 16 MiB
OS=65536        # the origin segment: 32 MiB
REGION=32       # MiB of the origin the workload writes (all of it)
BATCHES=40
MAXPOINTS=25    # sampled flush points, plus the last (and 4 mid-batch ones)
MAXGCWRITES=40  # sampled plain (data) writes inside checkpoints
MAXTORN=30      # sampled torn points (checkpoints only)

data=$(disk data)
log=$(disk log)
scratch=$(disk scratch)
work=$(disk work)
model=$(disk model)
opts="origin_uuid $U"
[ "$MODE" = writethrough ] || opts="$opts cache_mode $MODE"

dmb_load
dmb_log_segments "$data" "$log" $CS $OS
sync
blockdev --flushbufs /dev/mapper/cseg
check "mark: formatted" dmsetup message lw 0 mark formatted
check "model of acknowledged writes" dmb-crashload init -m "$model" -s $REGION -S 7

# shellcheck disable=SC2086 # $opts: several words
if ! dmb_create c /dev/mapper/cseg /dev/mapper/oseg $opts 2>/tmp/create.err; then
	if [ "$MODE" != writethrough ] &&
		dmesg | tail -n 20 | grep -i "cache_mode\|$MODE" | grep -qi "not supported\|refused\|unknown"; then
		skip "the constructor refuses cache_mode $MODE: $(dmesg | grep -i "$MODE" | tail -n 1)"
	fi
	_dmb_show /tmp/create.err
	fail "create the target over the two segments ($opts)"
	exit 0
fi
pass "create the target over the two segments ($opts)"
check "sequential_cutoff 0" dmsetup message c 0 sequential_cutoff 0
t0=$(cut -d' ' -f1 /proc/uptime)
rm -f /tmp/gc.done /tmp/gc.err
if [ "$GCS" -gt 0 ]; then
	# checkpoints while the workload writes, one every second or so
	(
		for g in $(seq "$GCS"); do
			sleep 1
			dmsetup message lw 0 mark "gc$g" || echo "mark gc$g failed" >>/tmp/gc.err
			dmsetup message c 0 gc || echo "gc $g failed" >>/tmp/gc.err
			# always: an open window would make every later entry a point
			dmsetup message lw 0 mark "gc$g-end" || echo "mark gc$g-end failed" >>/tmp/gc.err
		done
		touch /tmp/gc.done
	) &
fi
check "workload: $BATCHES batches through the target, fsync and a mark after each" \
	dmb-crashload run -d /dev/mapper/c -m "$model" -n $BATCHES -w 24 -r 16 -M lw -q
if [ "$GCS" -gt 0 ]; then
	wait
	check "$GCS checkpoints beside the workload" test -e /tmp/gc.done -a ! -e /tmp/gc.err
	check "the checkpoints ran during the workload" test "$(dmb_stat c checkpoints)" -ge "$GCS"
fi
info "workload took $(echo "$(cut -d' ' -f1 /proc/uptime) - $t0" | bc) s; c: $(dmsetup status c)"
check "hits during the workload" test "$(dmb_stat c read_hits)" -gt 0
check "mark: end" dmsetup message lw 0 mark end
i=0
while ! dmb-replay-log find "$log" end >/dev/null 2>&1 && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the end mark is in the log" dmb-replay-log find "$log" end
check "logging never stopped" sh -c "! dmsetup status lw | grep -q logging_disabled"
info "log-writes: $(dmsetup status lw)"

# The log up to "end" is the crash. The same uuid cannot be open twice:
# the live target goes away (its clean close comes after "end" in the log).
check "remove the live target" dmb_remove c
for d in oseg cseg lw; do check "remove $d" dmsetup remove $d; done
dmsetup mknodes
check "the log lists" sh -c "dmb-replay-log list '$log' >/tmp/list"
info "log: $(head -n 1 /tmp/list | cut -c3-)"
# The replay tool against the kernel's own log: the whole log (the removal
# logged every write that completed) replays to exactly the data disk.
check "replay the whole log onto a zeroed disk" dmb-replay-log replay -a "$log" "$work"
sum48() { dd if="$1" bs=1M count=$(((CS + OS) / 2048)) iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1; }
check_eq "the whole log replays to the data disk" "$(sum48 "$data")" "$(sum48 "$work")"

first=$(dmb-replay-log find "$log" formatted)
end=$(dmb-replay-log find "$log" end)
# Every entry from "formatted" to "end" as INDEX:ACKED:EXACT:FLAGS[/MARK],
# ACKED the last "ackN" mark at or before it, EXACT 1 for an ack mark
# itself (nothing of the next batch can be in): FLUSH/FUA/MARK entries in
# /tmp/points, plain writes (mid-batch states: some writes of the batch
# in flight landed, the rest did not) in /tmp/writes.
# Inside a checkpoint's marks: metadata writes, flushes and marks go to
# /tmp/gcpoints, all of them; plain writes to /tmp/gcwrites, sampled.
awk -v f="$first" -v e="$end" '
	/^#/ { next }
	$4 ~ /MARK/ && $5 ~ /^ack[0-9]+$/ { k = substr($5, 4) }
	$4 ~ /MARK/ && $5 ~ /^gc[0-9]+$/ { gc = 1 }
	$1 >= f && $1 <= e {
		x = ($4 ~ /MARK/ && $5 ~ /^ack[0-9]+$/) ? 1 : 0
		p = $1 ":" (k + 0) ":" x ":" $4 ($5 != "" ? "/" $5 : "")
		if (gc) print p > ($4 ~ /FLUSH|FUA|MARK|METADATA/ ? "/tmp/gcpoints" : "/tmp/gcwrites")
		print p > ($4 ~ /FLUSH|FUA|MARK/ ? "/tmp/points" : "/tmp/writes") }
	$4 ~ /MARK/ && $5 ~ /^gc[0-9]+-end$/ { gc = 0 }' /tmp/list
touch /tmp/gcpoints /tmp/gcwrites
n=$(wc -l </tmp/points)
# M of FILE spread evenly (not with a fixed step, which can fall in phase
# with the workload's flush, mark, flush, mark...), and its last
spread() {
	awk -v n="$(wc -l <"$2")" -v m="$1" 'BEGIN { for (i = 0; i < m; i++) sel[int(i * n / m) + 1] = 1; sel[n] = 1 }
		NR in sel' "$2"
}
{ spread $MAXPOINTS /tmp/points; spread 3 /tmp/writes; cat /tmp/gcpoints; spread $MAXGCWRITES /tmp/gcwrites; } |
	sort -t: -k1,1n -u >/tmp/sample
info "$n flush points, $(wc -l </tmp/writes) plain writes from entry $first (formatted) to $end (end), $(wc -l </tmp/gcpoints) metadata entries and $(wc -l </tmp/gcwrites) data writes inside checkpoints; checking $(wc -l </tmp/sample)"
check "the sample has points" test -s /tmp/sample
if [ "$GCS" -gt 0 ]; then
	# each checkpoint ends by writing the superblock (sector 8 of the cache
	# segment, which starts the log's device): every window holds one
	check_eq "a superblock write inside each of the $GCS checkpoints" "$GCS" "$(awk '
		$4 ~ /MARK/ && $5 ~ /^gc[0-9]+$/ { w = 1; seen = 0 }
		w && $2 == 8 && $3 > 0 { seen = 1 }
		$4 ~ /MARK/ && $5 ~ /^gc[0-9]+-end$/ { n += seen; w = 0 }
		END { print n + 0 }' /tmp/list)"
fi

# One replayed point: $work holds the image. Sets the globals below.
loadfail=0 lost=0 stale=0 corrupt=0 differ=0 checked=0 hitpoints=0 lasthits=0
verify_point() { # DESC ACKED EXACT CMP
	local desc=$1 k=$2 x='' out rc l s c h
	[ "$3" = 1 ] && x=-x
	dmsetup create vc --table "0 $CS linear $work 0" &&
		dmsetup create vo --table "0 $OS linear $work $CS" && dmsetup mknodes ||
		{ fail "$desc: segments"; return; }
	# shellcheck disable=SC2086
	if ! dmb_create v /dev/mapper/vc /dev/mapper/vo $opts >/tmp/create.err 2>&1; then
		_dmb_show /tmp/create.err
		fail "$desc: the target loads"
		loadfail=$((loadfail + 1))
		dmsetup remove vo; dmsetup remove vc
		return
	fi
	dmsetup message v 0 sequential_cutoff 0
	if [ "$MODE" = writethrough ]; then
		out=$(dmb-crashload verify -d /dev/mapper/v -o /dev/mapper/vo -m "$model" -K "$k" $x 2>/tmp/verify.err)
	else
		out=$(dmb-crashload verify -d /dev/mapper/v -m "$model" -K "$k" $x 2>/tmp/verify.err)
	fi
	rc=$?
	h=$(dmb_stat v read_hits)
	l=$(echo "$out" | sed -n 's/.* lost=\([0-9]*\).*/\1/p')
	s=$(echo "$out" | sed -n 's/.* stale=\([0-9]*\).*/\1/p')
	c=$(echo "$out" | sed -n 's/.* corrupt=\([0-9]*\).*/\1/p')
	if [ -z "$l" ] || [ -z "$s" ] || [ -z "$c" ]; then
		_dmb_show /tmp/verify.err
		fail "$desc: verify ran (exit $rc)"
		l=0 s=0 c=0
	elif [ "$rc" = 0 ]; then
		pass "$desc: every acknowledged write there${x:+ (exact)}, device = origin"
	else
		_dmb_detail "$out"
		_dmb_show /tmp/verify.err
		fail "$desc: every acknowledged write there${x:+ (exact)}, device = origin"
	fi
	lost=$((lost + l)) stale=$((stale + s)) corrupt=$((corrupt + c))
	# the tool compared every block with O_DIRECT; cmp compares the
	# buffered path too (slow under TCG: some points only)
	if [ "$MODE" = writethrough ] && [ "$4" = 1 ]; then
		if dmb_same /dev/mapper/v /dev/mapper/vo >/tmp/cmp.out 2>&1; then
			pass "$desc: cmp device origin"
		else
			_dmb_show /tmp/cmp.out
			fail "$desc: cmp device origin"
			differ=$((differ + 1))
		fi
	fi
	info "$desc: lost=$l stale=$s corrupt=$c read_hits=$h ($(echo "$out" | sed 's/:.*//;s/.*verify//'))"
	[ "$h" -gt 0 ] && hitpoints=$((hitpoints + 1))
	lasthits=$h
	checked=$((checked + 1))
	dmb_remove v
	dmsetup remove vo
	dmsetup remove vc
	dmsetup mknodes
}

prev=-1
t0=$(cut -d' ' -f1 /proc/uptime)
for p in $(cat /tmp/sample); do
	idx=${p%%:*} r=${p#*:}
	k=${r%%:*} r=${r#*:}
	x=${r%%:*} what=${r#*:}
	if ! dmb-replay-log replay -s $((prev + 1)) -e "$idx" "$log" "$scratch" 2>/tmp/replay.err; then
		_dmb_show /tmp/replay.err
		fail "replay entries $((prev + 1))..$idx"
		break
	fi
	prev=$idx
	# the target writes to its cache: give it a copy, keep the replay pristine
	dd if="$scratch" of="$work" bs=1M count=$(((CS + OS) / 2048)) iflag=direct oflag=direct 2>/dev/null
	cmp=0
	[ $((checked % 5)) = 0 ] || [ "$p" = "$(tail -n 1 /tmp/sample)" ] && cmp=1
	verify_point "point $((checked + 1)) entry $idx $what acked 1..$k" "$k" "$x" $cmp
done
info "points took $(echo "$(cut -d' ' -f1 /proc/uptime) - $t0" | bc) s"

info "TOTAL points checked $checked of $n, loads failed $loadfail, lost writes $lost, stale reads $stale, corrupt $corrupt, cmp differences $differ, points with read hits $hitpoints"
check_eq "points checked" "$(wc -l </tmp/sample)" "$checked"
check_eq "the target loaded at every point" 0 "$loadfail"
check_eq "no acknowledged write lost at any point" 0 "$lost"
check_eq "no stale read at any point" 0 "$stale"
check_eq "no corrupt block at any point" 0 "$corrupt"
# Needs the journal: until then a crash invalidates the cache.
check "data cached before the crash is hit again (last point: $lasthits read hits)" test "$lasthits" -gt 0

# Torn points (checkpoints only): a device may keep a write while losing
# writes that completed before it but that no flush has covered yet. For
# every plain write P to the cache segment inside a checkpoint, the state
# where only P, the FUA writes, and what the last flush before P covered
# reached the media: a node written before the data or the child node it
# names would show here (prefixes never reorder).
if [ "$GCS" -gt 0 ]; then
	awk -v cs="$CS" '
		/^#/ { next }
		$4 ~ /MARK/ && $5 ~ /^ack[0-9]+$/ { k = substr($5, 4) }
		$4 ~ /MARK/ && $5 ~ /^gc[0-9]+$/ { gc = 1 }
		gc && $4 !~ /FLUSH|MARK/ && $2 < cs && lost { print $1 ":" (k + 0) ":" (f + 0) ":" fua }
		$4 ~ /FLUSH/ { f = $1; fua = ""; lost = 0; next }
		$4 ~ /FUA/ { fua = fua ($1 ","); next }
		$4 !~ /MARK/ { lost = 1 }
		$4 ~ /MARK/ && $5 ~ /^gc[0-9]+-end$/ { gc = 0 }' /tmp/list >/tmp/tornall
	spread $MAXTORN /tmp/tornall >/tmp/torn
	info "$(wc -l </tmp/tornall) torn points, checking $(wc -l </tmp/torn)"
	durable=$(disk durable)
	dd if=/dev/zero of="$durable" bs=1M count=$(((CS + OS) / 2048)) oflag=direct 2>/dev/null
	DMB_TORN_PREV=-1 torn=0
	for p in $(cat /tmp/torn); do
		idx=${p%%:*} r=${p#*:}
		k=${r%%:*} r=${r#*:}
		f=${r%%:*} fua=${r#*:}
		dmb_torn_state "$log" "$durable" "$work" $(((CS + OS) / 2048)) "$f" "$fua" "$idx" ||
			{ fail "torn point $((torn + 1)): the state of entry $idx"; break; }
		verify_point "torn point $((torn + 1)): entry $idx alone after the flush at $f acked 1..$k" "$k" 0 0
		torn=$((torn + 1))
	done
	info "TOTAL with $torn torn points: loads failed $loadfail, lost writes $lost, stale reads $stale, corrupt $corrupt"
	check "torn points checked" test "$torn" -gt 0
	check_eq "torn points: the target loaded at every point" 0 "$loadfail"
	check_eq "torn points: no acknowledged write lost" 0 "$lost"
	check_eq "torn points: no stale read" 0 "$stale"
	check_eq "torn points: no corrupt block" 0 "$corrupt"
fi

# Self-checks on the last point's image: the verification must catch a
# stale read and a lost write (writethrough: the origin is the truth).
# caught DESC FIELD CMD...: CMD fails and reports FIELD=N, N > 0
caught() {
	local desc=$1 field=$2 rc
	shift 2
	"$@" >/tmp/caught.out 2>&1
	rc=$?
	_dmb_detail "\$ $* (exit $rc)"
	_dmb_show /tmp/caught.out
	if [ $rc != 0 ] && grep -q " $field=[1-9]" /tmp/caught.out; then
		pass "$desc"
	else
		fail "$desc"
	fi
}
segments() {
	dd if="$scratch" of="$work" bs=1M count=$(((CS + OS) / 2048)) iflag=direct oflag=direct 2>/dev/null
	dmsetup create vc --table "0 $CS linear $work 0" &&
		dmsetup create vo --table "0 $OS linear $work $CS" && dmsetup mknodes
}
unsegments() {
	dmsetup remove vo
	dmsetup remove vc
	dmsetup mknodes
}
if [ "$MODE" = writethrough ]; then
	last=$(tail -n 1 /tmp/sample)
	k=${last#*:}
	k=${k%%:*}
	b=$(dmb-crashload pick -m "$model" -K "$k")
	# shellcheck disable=SC2086 # $V: a command line
	V="dmb-crashload verify -d /dev/mapper/v -o /dev/mapper/vo -m $model -K $k"
	# A stale read: cache block b, close cleanly, change the origin behind
	# the cache (not its first 4 KiB, which the slot fingerprints).
	check "self-check: a fresh copy of the last point" segments
	# shellcheck disable=SC2086
	check "self-check: create" dmb_create v /dev/mapper/vc /dev/mapper/vo $opts
	check "self-check: it verifies" $V
	h0=$(dmb_stat v read_hits)
	i=0
	while [ "$(dmb_stat v read_hits)" = "$h0" ] && [ $i -lt 10 ]; do
		dd if=/dev/mapper/v of=/dev/null bs=4k skip="$b" count=1 iflag=direct 2>/dev/null
		sleep 0.1
		i=$((i + 1))
	done
	check "self-check: block $b is cached" test "$(dmb_stat v read_hits)" -gt "$h0"
	check "self-check: clean remove" dmb_remove v
	check "self-check: block $b of the origin changes behind the cache" \
		dd if=/dev/zero of=/dev/mapper/vo bs=4k seek="$b" count=1 oflag=direct conv=notrunc
	# shellcheck disable=SC2086
	check "self-check: create after the clean close" dmb_create v /dev/mapper/vc /dev/mapper/vo $opts
	caught "self-check: the verification reports the stale read" stale $V
	check_fails "self-check: cmp sees it too" dmb_same /dev/mapper/v /dev/mapper/vo
	check "self-check: remove" dmb_remove v
	unsegments
	# A lost write: the origin segment of a replayed image loses block b.
	check "self-check: a fresh copy of the last point" segments
	check "self-check: block $b of the origin loses its write" \
		dd if=/dev/zero of=/dev/mapper/vo bs=4k seek="$b" count=1 oflag=direct conv=notrunc
	# shellcheck disable=SC2086
	check "self-check: create" dmb_create v /dev/mapper/vc /dev/mapper/vo $opts
	caught "self-check: the verification reports the lost write" lost $V
	check "self-check: remove" dmb_remove v
	unsegments
fi
