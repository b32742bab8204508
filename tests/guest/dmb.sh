# shellcheck shell=sh disable=SC3043
# dm-bcache helpers for scenarios: `. /tests/guest/dmb.sh` after lib.sh.
#
#   dmb_load                     modprobe dm-bcache (a check)
#   dmb_create NAME CACHE ORIGIN [OPT...]   create the target over the whole
#                                origin; OPT are the optional args
#   dmb_stat NAME FIELD          one status field by name (Documentation/dm-bcache.rst)
#   dmb_tunable NAME KEY         one tunable from the status line
#   dmb_data_layout DEV          bucket bytes and first data bucket of a cache device
#   dmb_data_bytes DEV           non-zero bytes in its data buckets
#   dmb_remove NAME              remove and refresh /dev/mapper
#   dmb_settle NAME              wait until no checkpoint comes for a second
#   dmesg_has TEXT               the kernel log mentions TEXT
#   dmb_journal_entries CACHE    entries bcache-check finds to replay (0: none)
#   dmb_replayed N               the kernel replayed N entries (0: nothing)
#   dmb_overlap LIMIT ARGS       dmb-overlap ARGS on target c, stuck IO after LIMIT s a failure

# DMB_NODE_CACHE_MB (tests/run's, through the kernel command line) sets
# the index's memory budget: 0 reads every leaf back from disk.
dmb_load() {
	check "modprobe dm-bcache" modprobe dm-bcache \
		${DMB_NODE_CACHE_MB:+node_cache_mb=$DMB_NODE_CACHE_MB}
}

dmb_table() {
	local name="$1" cache="$2" origin="$3"
	shift 3
	# dmb.members=2 (tests/guest/init): the set of the cache disk and member1
	if [ "${DMB_MEMBERS:-1}" = 2 ] && [ "${DMB_FORMAT_VERSION:-3}" != 2 ] &&
		[ "$cache" = "${DMB_CACHE_DISK:-}" ]; then
		cache=$cache,$DMB_MEMBER1_DISK
	fi
	local n=$#
	if [ "$n" -gt 0 ]; then
		echo "0 $(blockdev --getsz "$origin") bcache $cache $origin $n $*"
	else
		echo "0 $(blockdev --getsz "$origin") bcache $cache $origin"
	fi
}

dmb_create() {
	local name="$1"
	dmsetup create "$name" --table "$(dmb_table "$@")" && dmsetup mknodes "$name"
}

dmb_remove() {
	dmsetup remove "$1" && dmsetup mknodes
}

# Status fields after "<start> <len> bcache", in order (Documentation/dm-bcache.rst).
DMB_FIELDS="version block_size bucket_size buckets read_hits read_misses
write_hits write_misses bypassed dirty mode slot origin_uuid state
btree_depth btree_nodes gc_runs hit_ratio filled_sectors retries
cache_errors invalidations journal_seq journal_used checkpoints
written_back rewritten deferred nodes_read nodes_evicted
nodes_read_nolock node_compactions
compacted_nolock inserts_shared csum_errors format"

dmb_stat() {
	local i=4 f
	for f in $DMB_FIELDS; do
		if [ "$f" = "$2" ]; then
			dmsetup status "$1" | cut -d' ' -f$i
			return 0
		fi
		i=$((i + 1))
	done
	echo "dmb_stat: no field $2" >&2
	return 1
}

# dmb_data_layout DEV: "<bucket bytes> <first data bucket>" of cache
# device DEV (its data buckets follow the journal).
dmb_data_layout() {
	local show first n bsz
	show=$(bcache-super-show "$1") || return 1
	bsz=$(echo "$show" | awk -F'\t' '$1 == "bucket_size" { print $2 }' | cut -d' ' -f1)
	first=$(echo "$show" | awk -F'\t' '$1 == "sb.journal_first" { print $2 }')
	n=$(echo "$show" | awk -F'\t' '$1 == "sb.journal_buckets" { print $2 }')
	echo "$bsz $((first + n))"
}

# dmb_data_bytes DEV: bytes other than zero in DEV's data buckets (of a
# disk that started zeroed: make-bcache writes nothing past the journal).
dmb_data_bytes() {
	# shellcheck disable=SC2046 # its two words
	set -- "$1" $(dmb_data_layout "$1")
	dd if="$1" bs="$2" skip="$3" iflag=direct 2>/dev/null | tr -d '\000' | wc -c
}

dmb_tunable() {
	dmsetup status "$1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}

# A checkpoint empties the journal, and one may start after a test's last
# write (the journal past half, or a GC that reclaim asked for): a crash
# then has nothing to replay. Before a crash that must replay: settle,
# checkpoint (message gc), write a little, check journal_used.
dmb_settle() {
	local i c n
	c=$(dmb_stat "$1" checkpoints)
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 1
		n=$(dmb_stat "$1" checkpoints)
		[ "$n" = "$c" ] && return 0
		c=$n
	done
	echo "dmb_settle: $1 still checkpointing after ${i}s" >&2
	return 1
}

dmesg_has() {
	dmesg | grep -q -- "$1"
}

# dmb_refused DESC MSG TABLE: creating a device with TABLE fails, and the
# kernel log says MSG.
dmb_refused() {
	local desc=$1 msg=$2
	shift 2
	dmesg -c >/dev/null
	check_fails "$desc refused" dmsetup create bad --table "$*"
	dmsetup remove bad 2>/dev/null
	if dmesg | grep -q -- "$msg"; then
		pass "$desc: '$msg' logged"
	else
		dmesg | tail -n 5
		fail "$desc: '$msg' logged"
	fi
}

# dmb_io OFF SIZE RW BS(range) [ARGS...]: fio over [OFF, +SIZE) MiB of
# /dev/mapper/c, direct, 8 deep; random IO covers each block once (so
# that fio can verify it).
dmb_io() {
	local off=$1 size=$2 rw=$3 bs=$4
	shift 4
	fio --name=io --filename=/dev/mapper/c --direct=1 --ioengine=libaio --iodepth=8 \
		--offset=$((off * 1048576)) --size=$((size * 1048576)) --rw="$rw" \
		--bsrange="$bs" "$@" --output=/tmp/io
}

# After a crash, a checkpoint that came after the last write may have left
# nothing to replay: run dmb_journal_entries before the create, and check
# dmb_replayed with its count after it. The kernel must replay exactly the
# entries the offline check finds.
dmb_journal_entries() {
	local n
	n=$(bcache-check "$1" 2>/dev/null | sed -n 's/^journal: \([0-9]*\) entr.*/\1/p')
	echo "${n:-0}"
}

dmb_replayed() {
	if [ "$1" -gt 0 ]; then
		dmesg_has "journal replayed: $1 entries"
	else
		! dmesg_has "journal replayed"
	fi
}

# Read RANGE MiB at OFFSET MiB of a device with direct IO, 4k random or
# sequential: used to warm and to re-read.
dmb_read() {
	dd if="$1" of=/dev/null bs=4k skip=$(($2 * 256)) count=$(($3 * 256)) \
		iflag=direct 2>/dev/null
}

# Two devices hold the same bytes. Drops the page cache first: direct IO
# through a dm device does not invalidate what is cached for the device
# below it, so a buffered read of the origin could see old pages.
dmb_same() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$1" "$2"
}

# dmb_overlap LIMIT ARGS: dmb-overlap ARGS; its output on failure, its summary
# line always. Still running after LIMIT seconds, its IO is stuck: show
# its output, the target's status, the blocked tasks and the CPUs, and end
# the boot at once (every command after it would hang on the stuck IO).
dmb_overlap() {
	local limit="$1" t=0 pid rc
	shift
	rm -f /tmp/overlap.rc
	(dmb-overlap "$@" >/tmp/overlap.out 2>&1; echo $? >/tmp/overlap.rc) &
	pid=$!
	while [ ! -s /tmp/overlap.rc ]; do
		if [ $t -ge "$limit" ]; then
			while read -r line; do info "  $line"; done </tmp/overlap.out
			info "status: $(dmsetup status c 2>&1)"
			echo w >/proc/sysrq-trigger
			echo l >/proc/sysrq-trigger
			fail "dmb-overlap ended within ${limit}s (its IO is stuck)"
			exit 1
		fi
		sleep 1
		t=$((t + 1))
	done
	wait $pid
	rc=$(cat /tmp/overlap.rc)
	cat /tmp/overlap.out
	[ "$rc" -ne 0 ] || info "$(tail -n 1 /tmp/overlap.out)"
	return "$rc"
}

# Torn states of a dm-log-writes log (crash-log-writes.sh, crash-gc-apply.sh):
# a device may keep a write while losing the writes before it that no
# flush covered yet. dmb_torn_state LOG DURABLE WORK MIB F FUA IDX leaves in
# WORK (MIB MiB) the state where only the entries up to the flush at F,
# the FUA entries in FUA (comma-separated) and entry IDX reached the
# media. DURABLE holds the log replayed up to DMB_TORN_PREV (set it to -1
# over a zeroed DURABLE first); calls must come in order of F.
DMB_TORN_PREV=-1
dmb_torn_state() {
	local log=$1 durable=$2 work=$3 mib=$4 f=$5 fua=$6 idx=$7 x
	if [ "$f" -gt "$DMB_TORN_PREV" ]; then
		dmb-replay-log replay -s $((DMB_TORN_PREV + 1)) -e "$f" "$log" \
			"$durable" 2>/tmp/replay.err || { _dmb_show /tmp/replay.err; return 1; }
		DMB_TORN_PREV=$f
	fi
	dd if="$durable" of="$work" bs=1M count="$mib" iflag=direct oflag=direct 2>/dev/null
	for x in $(echo "$fua" | tr , ' ') "$idx"; do
		dmb-replay-log replay -s "$x" -e "$x" "$log" "$work" 2>/tmp/replay.err ||
			{ _dmb_show /tmp/replay.err; return 1; }
	done
}

# dmb_log_segments DATA LOG CS OS: one dm-log-writes device "lw" over DATA
# (its log on LOG), carved into the cache segment "cseg" (CS sectors,
# formatted with 64 KiB buckets) and the origin segment "oseg" (OS
# sectors after it), so that one log orders the writes of both.
dmb_log_segments() {
	check "modprobe dm-log-writes" modprobe dm-log-writes
	check "log-writes over the data disk" dmsetup create lw \
		--table "0 $(blockdev --getsz "$1") log-writes $1 $2"
	check "cache segment" dmsetup create cseg --table "0 $3 linear /dev/mapper/lw 0"
	check "origin segment" dmsetup create oseg --table "0 $4 linear /dev/mapper/lw $3"
	dmsetup mknodes
	check "format the cache segment" make-bcache -q -b 64k /dev/mapper/cseg
}

# dmb_workload MODEL: dmb-crashload's workload on /dev/mapper/c, its model
# of acknowledged writes on MODEL, in the background (pid in $pid, its log
# /tmp/run.log), once it has acknowledged two batches: the power cuts'.
dmb_workload() {
	local i=0
	: >/tmp/run.log
	dmb-crashload run -d /dev/mapper/c -m "$1" -n 100000 -w 16 -r 8 >/tmp/run.log 2>&1 &
	pid=$!
	while [ "$(grep -c '^ack' /tmp/run.log)" -lt 2 ] && [ $i -lt 300 ] &&
		kill -0 $pid 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	check "the workload acknowledged batches" test "$(grep -c '^ack' /tmp/run.log)" -ge 2
}
