# Power cuts on a degraded cache set: writeback on a set of two members
# (format version 3), member 1 turned into an error device in the middle
# of the workload, then more power cuts (hard resets, no sync). Nothing
# acknowledged may be lost and nothing stale read at any cut: neither in
# the few seconds when member 1 fails under load (its dirty copies read
# from member 0, its clean data from the origin, the writes whose copy on
# it failed sent to the origin), nor when a cut comes before member 1 is
# marked FAILED in member 0's superblock, nor on a set that opens
# degraded after a cut, with the dirty data it has one copy of left.
# As power-cut.sh: the workload (dmb-crashload) keeps its model of the
# acknowledged writes on a disk of its own; each boot verifies every
# block through the target (lost, stale, corrupt), runs the workload
# again and cuts the power after a random short time; totals go on the
# tally disk, and the last boot checks them.
#   Boots 1..K: the set of two, cuts as power-cut-writeback-set.sh.
#   Boot K+1 and each boot after it that finds member 1 active: member 1
#     turned into an error target under the workload; the set must run
#     degraded (a write error fails it at once), then the cut. Boots K
#     and K+1 hold writeback, so that member 1 fails with dirty data on
#     it, and the next boot opens degraded with dirty data of one copy.
#   Every boot after a cut: the table names m0,m1 first. A member marked
#     failed is refused (named, it must be `-`); so is one whose
#     superblock is behind member 0's (the cut came after member 0's
#     next superblock write but before the mark); then m0,- opens the
#     set, degraded (marking member 1 failed if it was not yet). If the
#     cut came before either reached member 0, member 1 opens active
#     again (the dm table is linear again after the reset): state ok.
#   Once member 0's superblock says member 1 failed, it says so at every
#     later boot.
#   The last boot: the totals (every cut from boot K+1 on taken while
#   degraded), member 1 failed if it is not, everything written back from
#   member 0, the origin holds every acknowledged write, member 0's
#   superblock says member 1 failed, and m1 is refused.
# Members sit on dm-linear tables m0, m1 (made again each boot: dm tables
# do not survive the reset) so that member 1 can become an error target.
# disks: c0=24M c1=24M origin=16M model=32M tally=1M
# boots: 12
# timeout: 120
. /tests/guest/dmb.sh

U=c3c3c3c3-c3c3-4c3c-8c3c-c3c3c3c3c3c3
REGION=16       # MiB: the whole origin
K=3             # cuts on the whole set before member 1 fails
c0=$(disk c0)
c1=$(disk c1)
origin=$(disk origin)
model=$(disk model)
tally=$(disk tally)
m0=/dev/mapper/m0
m1=/dev/mapper/m1
opts="origin_uuid $U cache_mode writeback"
CUTS=$((BOOTS - 1))
FAILED_MSG="a cache device is a member its set marked failed (name it -)"
BEHIND_MSG="a cache set member is not at its set's last superblock write"
REMOVED_MSG="a cache device is a member its set removed"

# The tally: "cuts lost stale corrupt degraded_cuts failed_at", one line
# (failed_at: the first boot that found member 1 failed in member 0's
# superblock, or opened without it; 0: none yet). "v2": no set (skipped).
tally_read() { dd if="$tally" bs=512 count=1 iflag=direct 2>/dev/null | tr -d '\0' | head -n 1; }
tally_write() { printf '%s\n' "$*" | dd of="$tally" bs=512 count=1 conv=sync,fsync 2>/dev/null; }

# retable NAME TABLE: dm device NAME now maps TABLE, under whatever uses it.
retable() {
	dmsetup suspend "$1" && dmsetup load "$1" --table "$2" && dmsetup resume "$1"
}

# sb_field DEV FIELD: a field of DEV's superblock as on the disk now (the
# page cache dropped: the target writes around it).
sb_field() {
	echo 1 >/proc/sys/vm/drop_caches
	bcache-super-show "$1" | awk -F'\t' -v f="$2" '$1 == f { print $2 }'
}

# member_state DEV I: member I's state in DEV's superblock.
member_state() {
	sb_field "$1" "member.$2.state"
}

# io_count NAME: reads and writes dm device NAME has completed.
io_count() {
	awk '{ print $1 + $5 }' \
		"/sys/block/dm-$(dmsetup info -c --noheadings -o minor "$1" | tr -d ' ')/stat"
}

# fail_member1 [CMD...]: member 1 fails every IO; CMD (or the workload
# running) hits it, and the set must run degraded. Sets n1, member 1's IO
# count once the IO in flight when it failed is done.
fail_member1() {
	check "member 1 fails every IO (error target)" retable m1 "0 $sz1 error"
	[ $# -gt 0 ] && check "a workload with member 1 failing" "$@"
	i=0
	while [ "$(dmb_stat c state)" != degraded ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	info "boot $BOOT: state $(dmb_stat c state) $((i / 10)).$((i % 10))s after the error" \
		"target; cache_errors $(dmb_stat c cache_errors), dirty $(dmb_stat c dirty)"
	check_eq "member 1 failed: the set runs degraded" degraded "$(dmb_stat c state)"
	check "... logged: member 1 failing" dmesg_has "member 1 failing ("
	check "... running degraded on the other members" \
		dmesg_has "running degraded on the other members"
	sleep 0.5
	n1=$(io_count m1)
}

dmb_load
sz0=$(blockdev --getsz "$c0")
sz1=$(blockdev --getsz "$c1")
check "member 0 on a dm table" dmsetup create m0 --table "0 $sz0 linear $c0 0"
check "member 1 on a dm table" dmsetup create m1 --table "0 $sz1 linear $c1 0"
dmsetup mknodes

if [ "$BOOT" = 1 ]; then
	if ! make-bcache -q -b 64k $m0 $m1 2>/tmp/mk; then
		check "version 2: no set of several" grep -q "needs format version 3" /tmp/mk
		tally_write v2
		exit 0
	fi
	pass "format a set of two"
	check "model of acknowledged writes" dmb-crashload init -m "$model" -s $REGION -S 13
	tally_write 0 0 0 0 0 0
	# shellcheck disable=SC2086 # $opts: several words
	check "create on m0,m1 ($opts)" dmb_create c "$m0,$m1" "$origin" $opts
	[ -b /dev/mapper/c ] || exit 0
	dirty0=$(dmb_stat c dirty)
	check_eq "state ok" ok "$(dmb_stat c state)"
	opened=both
	st=active
else
	if [ "$(tally_read)" = v2 ]; then
		info "version 2: no set of several (boot 1)"
		exit 0
	fi
	# shellcheck disable=SC2046 # the tally's fields
	set -- $(tally_read)
	failed_at=$6
	# The set as the cut left it.
	st=$(member_state $m0 1)
	info "boot $BOOT: member 1 $st in member 0's superblock; seq: member 0" \
		"$(sb_field $m0 sb.seq), member 1 $(sb_field $m1 sb.seq)"
	# Failed, then removed once a GC pass finds no key pointing to it.
	if [ "$failed_at" -gt 0 ]; then
		check "member 1 still failed or removed in member 0's superblock (since boot $failed_at)" \
			test "$st" = failed -o "$st" = removed
	fi
	dmesg -c >/dev/null
	# shellcheck disable=SC2086
	if dmb_create c "$m0,$m1" "$origin" $opts 2>/tmp/create.err; then
		opened=both
		info "boot $BOOT: opened on m0,m1"
		check_eq "opened on m0,m1: member 1 active in member 0's superblock" active "$st"
	else
		opened=without
		dmsetup remove c 2>/dev/null
		list="$m0,-"
		if dmesg_has "$FAILED_MSG"; then
			why=failed
			check_eq "m0,m1 refused, member 1 marked failed: it is" failed "$st"
		elif dmesg_has "$REMOVED_MSG"; then
			why=removed
			list="$m0"
			check_eq "m0,m1 refused, member 1 removed: it is" removed "$st"
		elif dmesg_has "$BEHIND_MSG"; then
			why=behind
			check_eq "m0,m1 refused, member 1 behind: not marked failed yet" active "$st"
		else
			why=other
			_dmb_show /tmp/create.err
			dmesg | tail -n 5 >/tmp/dmesg.tail
			_dmb_show /tmp/dmesg.tail
			fail "m0,m1 refused for a member 1 failed or behind"
		fi
		info "boot $BOOT: m0,m1 refused ($why), opening $list"
		check "m0,m1 refused only once member 1 failed (boot > $((K + 1)))" \
			test "$BOOT" -gt $((K + 1))
		# shellcheck disable=SC2086
		check "the target loads on $list after cut $((BOOT - 1))" \
			dmb_create c "$list" "$origin" $opts
		[ -b /dev/mapper/c ] || exit 0
		if [ "$st" = removed ]; then
			:
		elif [ "$st" = failed ]; then
			check "logged: member 1 failed earlier" \
				dmesg_has "member 1 failed earlier: running degraded"
		else
			check "logged: member 1 missing, marked failed" \
				dmesg_has "member 1 missing: marked failed, running degraded"
		fi
	fi
	[ -b /dev/mapper/c ] || exit 0
	dirty0=$(dmb_stat c dirty)
	check "the cut was unclean" dmesg_has "not shut down cleanly"
	check_fails "cut $((BOOT - 1)): the slot's data was kept" dmesg_has "cached data invalidated"
	if [ "$opened" = both ]; then
		check_eq "member 1 active: state ok" ok "$(dmb_stat c state)"
	else
		check_eq "without member 1: state degraded" degraded "$(dmb_stat c state)"
	fi
fi
dmsetup message c 0 sequential_cutoff 0
# Boots K and K+1 hold writeback: member 1 fails with dirty data on both
# members, and the set opens degraded with dirty data of one copy left.
if [ "$BOOT" = $K ] || [ "$BOOT" = $((K + 1)) ]; then
	check "writeback held" dmsetup message c 0 writeback_running 0
fi

# Everything, right after the open: the first reads of this boot.
out=$(dmb-crashload verify -d /dev/mapper/c -m "$model" 2>/tmp/verify.err)
rc=$?
l=$(echo "$out" | sed -n 's/.* lost=\([0-9]*\).*/\1/p')
s=$(echo "$out" | sed -n 's/.* stale=\([0-9]*\).*/\1/p')
c=$(echo "$out" | sed -n 's/.* corrupt=\([0-9]*\).*/\1/p')
info "boot $BOOT ($opened): ${out:-verify printed nothing}; state $(dmb_stat c state)," \
	"dirty $dirty0 at the open, $(dmb_stat c dirty) now; written_back" \
	"$(dmb_stat c written_back), read_hits $(dmb_stat c read_hits)"
if [ -z "$l" ] || [ -z "$s" ] || [ -z "$c" ]; then
	_dmb_show /tmp/verify.err
	fail "verify ran (exit $rc)"
	l=0 s=0 c=0
fi
[ "$rc" = 0 ] || _dmb_show /tmp/verify.err
# Dirty data left by the cut after member 1 failed has one copy, on
# member 0: read by the verify, and written back at once (degraded).
# Nothing has written this boot yet: all written_back was dirty at the cut.
if [ "$BOOT" = $((K + 2)) ]; then
	wb=$(dmb_stat c written_back)
	check "the cut after member 1 failed left dirty data, of one copy (at the open $dirty0 sectors, written back since $wb)" \
		test $((dirty0 + wb)) -gt 0
fi
# shellcheck disable=SC2046
set -- $(tally_read)
if [ "$BOOT" -gt 1 ]; then
	f=$6
	if [ "$f" = 0 ] && { [ "$st" != active ] || [ "$opened" = without ]; }; then
		f=$BOOT
	fi
	set -- $(($1 + 1)) $(($2 + l)) $(($3 + s)) $(($4 + c)) "$5" "$f"
	tally_write "$@"
	check_eq "cut $((BOOT - 1)): no acknowledged write lost" 0 "$l"
	check_eq "cut $((BOOT - 1)): no stale read" 0 "$s"
	check_eq "cut $((BOOT - 1)): no corrupt block" 0 "$c"
fi

if [ "$BOOT" -lt "$BOOTS" ]; then
	dmb_workload "$model"
	failed_now=
	if [ "$BOOT" -gt "$K" ] && [ "$(dmb_stat c state)" = ok ]; then
		info "boot $BOOT: member 1 fails under the workload, at: $(tail -n 1 /tmp/run.log)"
		fail_member1
		failed_now=1
	fi
	t=$(awk -v s="$BOOT" 'BEGIN { srand(s * 7919); printf "%.2f", 0.1 + rand() * 1.4 }')
	sleep "$t"
	if kill -0 $pid 2>/dev/null; then
		pass "the workload is still running at the cut (no stale read, no error in it)"
	else
		_dmb_show /tmp/run.log
		fail "the workload is still running at the cut (no stale read, no error in it)"
	fi
	[ -n "$failed_now" ] &&
		check_eq "no IO to member 1 since it failed" "$n1" "$(io_count m1)"
	state=$(dmb_stat c state)
	if [ "$BOOT" -gt "$K" ]; then
		check_eq "cut $BOOT: taken while degraded" degraded "$state"
		# shellcheck disable=SC2046
		set -- $(tally_read)
		[ "$state" = degraded ] && tally_write "$1" "$2" "$3" "$4" $(($5 + 1)) "$6"
	fi
	info "cut $BOOT after ${t}s more, at: $(tail -n 1 /tmp/run.log); state $state," \
		"dirty $(dmb_stat c dirty), cache_errors $(dmb_stat c cache_errors)"
	crash_now
fi

# The last boot: the totals.
# shellcheck disable=SC2046
set -- $(tally_read)
info "TOTAL cuts $1, lost flushed writes $2, stale reads $3, corrupt blocks $4," \
	"cuts while degraded $5, member 1 failed on disk from boot $6"
check_eq "cuts" "$CUTS" "$1"
check_eq "no acknowledged write lost over $1 cuts" 0 "$2"
check_eq "no stale read over $1 cuts" 0 "$3"
check_eq "no corrupt block over $1 cuts" 0 "$4"
check_eq "every cut from boot $((K + 1)) on taken while degraded" $((CUTS - K)) "$5"
check "member 1 found failed after some cut" test "$6" -gt 0
# The last cut may have come before member 1's mark: fail it again, with
# a workload of its own that hits it.
if [ "$(dmb_stat c state)" = ok ]; then
	info "boot $BOOT: member 1 active again: it fails once more"
	fail_member1 dmb-crashload run -d /dev/mapper/c -m "$model" -n 20 -w 16 -r 8 -q
fi
check_eq "degraded" degraded "$(dmb_stat c state)"
n1=$(io_count m1)
check "write back all dirty data from member 0 (flush message)" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "the writes read back after writeback" dmb-crashload verify -d /dev/mapper/c -m "$model"
check "clean remove" dmb_remove c
check_eq "no IO to member 1" "$n1" "$(io_count m1)"
check "the origin holds every acknowledged write" \
	dmb-crashload verify -d "$origin" -m "$model"
st=$(member_state $m0 1)
check "member 0's superblock: member 1 failed or removed ($st)" \
	test "$st" = failed -o "$st" = removed
check "member 1 sound again" retable m1 "0 $sz1 linear $c1 0"
msg=$FAILED_MSG
[ "$st" = removed ] && msg=$REMOVED_MSG
dmb_refused "m0,m1 after member 1 failed" "$msg" \
	"0 $(blockdev --getsz "$origin") bcache $m0,$m1 $origin 4 $opts"
check "remove the tables" dmsetup remove m0 m1
