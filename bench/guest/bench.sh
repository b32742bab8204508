# shellcheck shell=sh disable=SC3043 # busybox ash has local
# dm-bcache benchmark, guest side. Sourced by /init (dmb.suite=bench
# dmb.test=bench) after tests/guest/lib.sh, in one guest boot: builds the
# same devices for every contender, one contender after another, each set
# up fresh, runs the fio jobs and writes raw results to /tmp/bench; a tar
# of it goes onto the virtio disk "results" after every case (so a late
# failure keeps the earlier cases). bench/report.sh on the host turns it
# into the report.
#
# Noise: another QEMU may share the host, and a TCG guest's speed follows
# its share of the host CPUs, which changes from second to second. So in
# the CPU-bound cases (brd-fast, shm-fast) every measured repetition runs
# side by side with the same job on a reference device (a second brd, or a
# second shm virtio disk, identical to the cache device), in one fio run:
# the report's ratios are medians of per-repetition ratios to that
# simultaneous reference. In a TCG guest everything is CPU-bound, so the
# ratio is the ratio of the cost per IO. The brd-hdd jobs are bound by the
# origin's delay (wall-clock time, which the host's load does not
# stretch): they run alone, and their ratios are ratios of medians.
#
# Kernel command line (set by bench/run.sh):
#   bench.cases=brd-hdd,brd-fast,shm-fast   cases, in order
#   bench.delay=8     origin delay of the *-hdd cases, ms (reads and writes)
#   bench.reps=3      repetitions of each measured job
#   bench.rt=3        seconds per repetition
#   bench.zrt=15      seconds of the zipf-from-cold run
#   bench.cache_mb=128   cache size (brd and the shm virtio disk)
#   bench.scale_gb=1,4   cache sizes of the scale case (scale.sh)
#   bench.scale_lat_rt=10  seconds of each latency run of the scale case
#
# Result lines in /tmp/bench/results.txt (space separated):
#   R case job contender rep riops rbw_kib wiops wbw_kib lat_us fast_pct ios sys_us usr_us
#       one fio run; contender "ref@X": the reference run side by side
#       with X's repetition; fast_pct: IOs done in <= 4 ms; sys_us, usr_us:
#       CPU time per IO (paired runs: of the job's threads, from fio;
#       others: all CPUs, /proc/stat system+irq+softirq, user)
#   H case job contender hits misses    the contender's counters over a job's repetitions
#   W case job contender passes hits misses   warm-up: passes, the last pass's counters
#   Z case contender second ios fast    zipf run, per second: IOs, IOs <= delay/2
#   ZC case contender seconds hits misses   zipf run, cumulative counters, about each second
#   S case contender hits misses bypassed fast_pct   the hot set after the scan
#   M case contender key before_setup after_setup after_fill   memory (KiB)
#   MF case contender filled_kib        what the fill put into the cache
#   MS case contender slab delta_kib    the largest slab deltas over the fill
#   V key value...                      versions and set-up facts
#   T case contender seconds            wall time spent
#   E case contender what...            something failed (set-up, a job, data)
#
# Counters: dm-bcache's and dm-cache's own read hits/misses (status line).
# Mainline bcache's own counters (stats_total) are folded in by a timer
# only every 13.6 s, so for it: misses = reads the origin completed, hits =
# reads /dev/bcache0 completed minus those (block layer stats).
. /tests/guest/dmb.sh

B=/tmp/bench
mkdir -p "$B/raw" "$B/tmp"
: >"$B/results.txt"

bparam() { # bparam NAME DEFAULT
	local v
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^bench\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}
CASES=$(bparam cases brd-hdd,brd-fast,shm-fast | tr ',' ' ')
DELAY_MS=$(bparam delay 8)
REPS=$(bparam reps 3)
RT=$(bparam rt 3)
ZRT=$(bparam zrt 15)
CACHE_MB=$(bparam cache_mb 128)
# Bucket size of dm-bcache and mainline bcache alike: mainline refuses a
# cache of fewer than 513 buckets, so 128 KiB for a cache of 128 MiB.
BUCKET=128k

say() { _dmb_say "@@BENCH $*"; }
out() { echo "$*" >>"$B/results.txt"; }
err() { # err CASE CONTENDER WHAT...
	out "E $*"
	_dmb_say "@@BENCH-ERROR $*"
}
now() { cut -d' ' -f1 /proc/uptime; }
since() { echo "$(now) $1" | awk '{ printf "%.1f", $1 - $2 }'; }
MiB=2048 # sectors

# Working sets, as offsets and sizes in MiB on the device under test. The
# raw cache device is only CACHE_MB long: everything it runs fits in it.
HOT_OFF=0 HOT_MB=32        # 4k random read hit path, 90/10 read/write
# sequential reads of cached data, cached by 128 KiB reads (one bucket):
# mainline bcache, with 1024 buckets, keeps a free reserve of one bucket and
# does not wait for one to fill a read miss, so it drops most misses that
# span buckets
SEQ_OFF=32 SEQ_MB=32
WR_OFF=64 WR_MB=32         # 4k random writes
ZIPF_OFF=128 ZIPF_MB=512   # zipf from cold
SCAN_HOT_MB=8              # hot set of the scan job (at HOT_OFF)
SCAN_OFF=256               # the scan: 2 x the cache, from here
FILL_MB=$((CACHE_MB * 3 / 4)) # memory job: 4k random fill at 0
ORIGIN_MIN_MB=$((ZIPF_OFF + ZIPF_MB))

# ---------------------------------------------------------------------------
# fio

# One fio run, measured. fio_run CASE JOB CONT REP DEV fio-args...
# Prints "riops rbw wiops wbw lat fast ios sys_us usr_us" (and records it).
fio_run() {
	local c=$1 j=$2 n=$3 r=$4 dev=$5 o s0 s1 line rc
	shift 5
	o=$B/raw/$c.$j.$n.$r
	s0=$(head -n 1 /proc/stat)
	fio --name="$j" --filename="$dev" --ioengine=libaio --group_reporting --eta=never \
		--output-format=terse --terse-version=3 "$@" >"$o.terse" 2>"$o.err"
	rc=$?
	s1=$(head -n 1 /proc/stat)
	if [ $rc -ne 0 ] || ! grep -q '^3;' "$o.terse"; then
		err "$c $n fio $j rep $r failed (exit $rc): $(head -c 300 "$o.err" | tr '\n' ' ')"
		return 1
	fi
	line=$(grep '^3;' "$o.terse" | tail -n 1 | awk -F';' -v s0="$s0" -v s1="$s1" '{
		# read: 6 KiB 7 bw 8 iops 9 runtime_ms 40 lat_mean; write from 47
		# lat buckets: 100-109 us (2..1000), 110-121 ms (2..>=2000)
		fast = 0; for (i = 100; i <= 111; i++) { v = $i; sub(/%/, "", v); fast += v }
		ios = $8 * $9 / 1000 + $49 * $50 / 1000
		lat = (ios > 0) ? ($40 * $8 * $9 / 1000 + $81 * $49 * $50 / 1000) / ios : 0
		# /proc/stat: cpu user nice system idle iowait irq softirq
		split(s0, a, " "); split(s1, b, " ")
		sys = (b[4] + b[7] + b[8]) - (a[4] + a[7] + a[8])
		usr = (b[2] + b[3]) - (a[2] + a[3])
		sysus = (ios > 0) ? sys * 10000 / ios : 0
		usrus = (ios > 0) ? usr * 10000 / ios : 0
		printf "%.1f %.0f %.1f %.0f %.1f %.2f %.0f %.3f %.3f\n",
			$8, $7, $49, $48, lat, fast, ios, sysus, usrus }')
	out "R $c $j $n $r $line"
	echo "$line"
}

blkreads() { awk '{ print $1 }' "/sys/block/$1/stat" 2>/dev/null || echo 0; }

# The contender's cumulative read hit/miss counters: "hits misses", or "- -".
counters() {
	local s a b
	case $1 in
	dm-bcache*)
		s=$(dmsetup status dmb 2>/dev/null) || { echo "- -"; return; }
		echo "$s" | awk '{ print $8, $9 }' ;;
	dm-cache)
		s=$(dmsetup status dmc 2>/dev/null) || { echo "- -"; return; }
		echo "$s" | awk '{ print $8, $9 }' ;;
	bcache)
		[ -e /sys/block/bcache0/stat ] || { echo "- -"; return; }
		a=$(blkreads bcache0) b=$(blkreads "$ORIGIN_BLK")
		echo "$((a - b)) $b" ;;
	*) echo "- -" ;;
	esac
}
cdelta() { # cdelta "h0 m0" "h1 m1" -> "dh dm"
	echo "$1 $2" | awk '{ if ($1 == "-" || $3 == "-") print "- -"; else print $3 - $1, $4 - $2 }'
}
hitpct() { # hitpct "h m" -> percent, or -
	echo "$1" | awk '{ if ($1 == "-" || $1 + $2 == 0) print "-"; else printf "%.2f\n", 100 * $1 / ($1 + $2) }'
}

# Warm a working set until (nearly) every read of a pass hits: passes of
# reads over [OFF, +MB) at queue depth QD (default 32), each block once per
# pass, in random order (so that no stream looks sequential). Warm = the
# contender's counters say >= 99% hits.
# warm CASE JOB CONT DEV OFF_MB SIZE_MB BS MAXPASSES [QD]
warm() {
	local c=$1 j=$2 n=$3 dev=$4 off=$5 mb=$6 bs=$7 max=$8 qd=${9:-32} p=0 c0 c1 d=''
	while [ $p -lt "$max" ]; do
		p=$((p + 1))
		c0=$(counters "$n")
		fio_run "$c" "warm-$j" "$n" $p "$dev" --rw=randread --bs="$bs" --direct=1 \
			--iodepth="$qd" --offset=${off}M --size=${mb}M >/dev/null || return 1
		c1=$(counters "$n")
		d=$(cdelta "$c0" "$c1")
		[ "${d% *}" = - ] && break
		[ "$(echo "$d" | awk '{ print ($1 + $2 > 0 && $1 * 100 >= 99 * ($1 + $2)) }')" = 1 ] && break
	done
	out "W $c $j $n $p $d"
	say "  warm $j: $p pass(es), last pass hits/misses $d"
}

# One measured repetition side by side with the reference device: a single
# fio run of two job groups at once, group 0 on REFDEV, group 1 on the
# contender, same options, all threads on CPU 0: they see the same host
# load at the same moment and the guest scheduler shares that one vCPU
# fairly between them (on two vCPUs, the host schedules the two vCPU
# threads unevenly: two identical brds measured at once differed 2.5x).
# fio_pair CASE JOB CONT REP DEV fio-args...   prints "contender | reference"
# CPU per IO: fio's own system/user time of the job's threads (the hit
# path runs in the submitting thread), not /proc/stat, which both share.
fio_pair() {
	local c=$1 j=$2 n=$3 r=$4 dev=$5 o nt a rc
	shift 5
	o=$B/raw/$c.$j.$n.$r
	nt=1
	for a in "$@"; do case $a in --numjobs=*) nt=${a#--numjobs=} ;; esac; done
	fio --ioengine=libaio --group_reporting --eta=never --output-format=terse --terse-version=3 \
		--cpus_allowed=0 "$@" --name=ref --filename="$REFDEV" --name="$j" --filename="$dev" --new_group \
		>"$o.terse" 2>"$o.err"
	rc=$?
	if [ $rc -ne 0 ] || [ "$(grep -c '^3;' "$o.terse")" -ne 2 ]; then
		err "$c $n fio $j rep $r failed (exit $rc): $(head -c 300 "$o.err" | tr '\n' ' ')"
		return 1
	fi
	grep '^3;' "$o.terse" | awk -F';' -v c="$c" -v j="$j" -v n="$n" -v r="$r" -v nt="$nt" '{
		fast = 0; for (i = 100; i <= 111; i++) { v = $i; sub(/%/, "", v); fast += v }
		ios = $8 * $9 / 1000 + $49 * $50 / 1000
		lat = (ios > 0) ? ($40 * $8 * $9 / 1000 + $81 * $49 * $50 / 1000) / ios : 0
		rt = ($9 > $50) ? $9 : $50
		u = $88; sub(/%/, "", u); sy = $89; sub(/%/, "", sy)
		sysus = (ios > 0) ? sy / 100 * rt * 1000 * nt / ios : 0
		usrus = (ios > 0) ? u / 100 * rt * 1000 * nt / ios : 0
		name = ($4 == 0) ? "ref@" n : n
		printf "R %s %s %s %s %.1f %.0f %.1f %.0f %.1f %.2f %.0f %.3f %.3f\n",
			c, j, name, r, $8, $7, $49, $48, lat, fast, ios, sysus, usrus }' >"$o.res"
	cat "$o.res" >>"$B/results.txt"
	echo "$(grep -v " ref@" "$o.res" | cut -d' ' -f6-9,14) | $(grep " ref@" "$o.res" | cut -d' ' -f6-9,14)"
}

# Measured repetitions of one job (side by side with the reference device
# when the case has one): reps CASE JOB CONT DEV fio-args...
reps() {
	local c=$1 j=$2 n=$3 dev=$4 r=1 c0 c1 v
	shift 4
	c0=$(counters "$n")
	while [ $r -le "$REPS" ]; do
		if [ -n "$REFDEV" ]; then
			v=$(fio_pair "$c" "$j" "$n" $r "$dev" "$@") || return 1
		else
			v=$(fio_run "$c" "$j" "$n" $r "$dev" "$@") || return 1
			v=$(echo "$v" | cut -d' ' -f1-4,8)
		fi
		say "  $j rep $r: $v"
		r=$((r + 1))
	done
	c1=$(counters "$n")
	out "H $c $j $n $(cdelta "$c0" "$c1")"
	[ "$(cdelta "$c0" "$c1")" != "- -" ] && say "  $j: hits/misses $(cdelta "$c0" "$c1")"
	return 0
}

# profile: where the CPU goes on the hit path. perf samples every CPU (the
# cpu-clock software event: a TCG guest has no PMU) while QD1 4k random
# reads run on the warmed set; the text report, by symbol, goes to
# raw/CASE.profile.CONT.txt (bench/run.sh prints the head of each).
profile_job() {
	local c=$1 n=$2 dev=$3 d=$B/tmp/perf.data o=$B/raw/$1.profile.$2.txt
	command -v perf >/dev/null || { err "$c $n profile: no perf in the guest (BENCH_PROFILE=1)"; return 0; }
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	perf record -q -e cpu-clock -F 1999 -a -g -o "$d" -- \
		fio --name=profile --filename="$dev" --ioengine=libaio --eta=never $R4K --iodepth=1 \
		--offset=${HOT_OFF}M --size=${HOT_MB}M --time_based --runtime=$((RT * 2)) \
		--output-format=terse >"$B/tmp/perf.fio" 2>"$B/tmp/perf.err" ||
		{ err "$c $n profile: perf record failed: $(head -c 300 "$B/tmp/perf.err" | tr '\n' ' ')"; return 0; }
	{
		echo "# $n: $(awk -F';' '/^3;/ { printf "%.0f IOPS", $8 }' "$B/tmp/perf.fio"), 4k random read QD1"
		perf report -i "$d" --stdio --no-children --sort dso,sym -g none --percent-limit 0.3 2>/dev/null |
			grep -v '^#' | sed '/^$/d' | head -n 60
		echo "# $n: callers of the top kernel symbols"
		perf report -i "$d" --stdio --no-children --sort sym --percent-limit 2 2>/dev/null |
			grep -v '^#' | sed '/^$/d' | head -n 200
	} >"$o"
	# kept for the host: perf report -i X.perf.data --kallsyms X.kallsyms
	mv "$d" "$B/raw/$c.profile.$n.perf.data"
	cp /proc/kallsyms "$B/raw/$c.profile.$n.kallsyms"
	say "  profile: $(head -n 1 "$o")"
}

# ---------------------------------------------------------------------------
# devices

wipe() { dd if=/dev/zero of="$1" bs=1M count=4 oflag=direct 2>/dev/null; }
# mainline bcache's backing superblock (sector 8): make-bcache refuses a
# device where blkid finds any signature, so it goes after bcache's turn
wipe_bsb() { dd if=/dev/zero of="$1" bs=4k seek=1 count=1 oflag=direct 2>/dev/null; }
# /sys/block name of a device (no udev: /dev/mapper/X are nodes, not links)
blkname() {
	case $1 in
	/dev/mapper/*) echo "dm-$(dmsetup info -c --noheadings -o minor "${1#/dev/mapper/}" | tr -d ' ')" ;;
	*) basename "$1" ;;
	esac
}
sectors() { blockdev --getsz "$1"; }

# The origin of a case: dm-delay over the virtio disk (0 ms: a plain remap).
make_origin() {
	local d=$1 sz
	sz=$(sectors "$ORIGIN_DISK")
	dmsetup create borigin --table "0 $sz delay $ORIGIN_DISK 0 $d $ORIGIN_DISK 0 $d" &&
		dmsetup mknodes borigin || return 1
	ORIGIN_BLK=$(blkname /dev/mapper/borigin)
}

bcache_cset() { # the cache set uuid of mainline bcache, if one is registered
	for u in /sys/fs/bcache/*-*-*-*-*; do
		[ -d "$u" ] && basename "$u" && return 0
	done
	return 1
}

wait_for() { # wait_for SECONDS test-args...
	local t=$(($1 * 10))
	shift
	while ! test "$@"; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		sleep 0.1
	done
}

# setup CASE CONT: build the contender over $CDEV and borigin; sets DEV
# (the device to test). Says why on failure.
setup() {
	local n=$2 osz u b
	osz=$(sectors /dev/mapper/borigin)
	DEV=
	case $n in
	raw-cache) DEV=$CDEV ;;
	raw-origin) DEV=/dev/mapper/borigin ;;
	dm-linear)
		dmsetup create lin --table "0 $(sectors "$CDEV") linear $CDEV 0" &&
			dmsetup mknodes lin && DEV=/dev/mapper/lin ;;
	dm-bcache | dm-bcache-nocsum | dm-bcache-v2)
		# -nocsum: verify_csums 0; -v2: on-disk format 2 (no checksums)
		wipe "$CDEV"
		b="-q -b $BUCKET -w 4k"
		[ "$n" = dm-bcache-v2 ] && b="$b --format-version 2"
		# shellcheck disable=SC2086
		make-bcache $b "$CDEV" || { echo "make-bcache failed"; return 1; }
		dmsetup create dmb --table "0 $osz bcache $CDEV /dev/mapper/borigin" ||
			{ echo "dmsetup create failed"; return 1; }
		dmsetup mknodes dmb
		dmsetup message dmb 0 sequential_cutoff 4194304 || { echo "sequential_cutoff failed"; return 1; }
		if [ "$n" = dm-bcache-nocsum ]; then
			dmsetup message dmb 0 verify_csums 0 || { echo "verify_csums failed"; return 1; }
		fi
		DEV=/dev/mapper/dmb ;;
	bcache)
		wipe "$CDEV"
		wipe_bsb /dev/mapper/borigin
		make-bcache-mainline --wipe-bcache -C "$CDEV" -B /dev/mapper/borigin -b $BUCKET -w 4k \
			>"$B/tmp/mkbcache.out" 2>&1 || { cat "$B/tmp/mkbcache.out"; return 1; }
		echo "$CDEV" >/sys/fs/bcache/register 2>"$B/tmp/reg.err" ||
			{ echo "register cache: $(cat "$B/tmp/reg.err")"; return 1; }
		echo /dev/mapper/borigin >/sys/fs/bcache/register 2>"$B/tmp/reg.err" ||
			{ echo "register backing: $(cat "$B/tmp/reg.err")"; return 1; }
		wait_for 10 -b /dev/bcache0 || { echo "no /dev/bcache0"; return 1; }
		wait_for 10 -e /sys/block/bcache0/bcache/cache || { echo "bcache0 not attached"; return 1; }
		u=$(bcache_cset) || { echo "no cache set"; return 1; }
		# the same policy as ours: writethrough, 4 MiB sequential cutoff;
		# no congestion bypass (dm-bcache has none)
		echo writethrough >/sys/block/bcache0/bcache/cache_mode &&
			echo 4194304 >/sys/block/bcache0/bcache/sequential_cutoff &&
			echo 0 >/sys/fs/bcache/"$u"/congested_read_threshold_us &&
			echo 0 >/sys/fs/bcache/"$u"/congested_write_threshold_us ||
			{ echo "bcache sysfs settings failed"; return 1; }
		DEV=/dev/bcache0 ;;
	dm-cache)
		wipe "$META"
		dmsetup create dmc --table "0 $osz cache $META $CDEV /dev/mapper/borigin 64 1 writethrough smq 0" ||
			{ echo "dmsetup create failed"; return 1; }
		dmsetup mknodes dmc
		DEV=/dev/mapper/dmc ;;
	dm-writecache)
		wipe "$CDEV"
		dmsetup create dmw --table "0 $osz writecache s /dev/mapper/borigin $CDEV 4096 0" ||
			{ echo "dmsetup create failed"; return 1; }
		dmsetup mknodes dmw
		DEV=/dev/mapper/dmw ;;
	esac
	[ -n "$DEV" ] || { echo "no device"; return 1; }
	# identical read-ahead for the buffered job
	b=$(blkname "$DEV")
	[ -w /sys/block/"$b"/queue/read_ahead_kb ] && echo 128 >/sys/block/"$b"/queue/read_ahead_kb
	return 0
}

teardown() {
	local n=$1 u
	case $n in
	dm-linear) dmsetup remove lin ;;
	dm-bcache*) dmsetup remove dmb ;;
	dm-cache) dmsetup remove dmc ;;
	dm-writecache) dmsetup remove dmw ;;
	bcache)
		if [ -e /sys/block/bcache0/bcache/stop ]; then
			echo 1 >/sys/block/bcache0/bcache/stop
			wait_for 20 ! -e /sys/block/bcache0 || err "$CASE bcache bcache0 did not stop"
		fi
		if u=$(bcache_cset); then
			echo 1 >/sys/fs/bcache/"$u"/unregister
			wait_for 20 ! -e /sys/fs/bcache/"$u" || err "$CASE bcache cache set did not unregister"
		fi
		wipe_bsb /dev/mapper/borigin
		wipe "$CDEV" ;;
	esac
	dmsetup mknodes
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# setup, its messages kept in $B/tmp/why (not in a subshell: it sets DEV)
csetup() {
	setup "$@" >"$B/tmp/why" 2>&1
}

# ---------------------------------------------------------------------------
# jobs

has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
is_cache() { case $1 in dm-bcache*|bcache|dm-cache|dm-writecache) return 0 ;; esac; return 1; }
is_rcache() { case $1 in dm-bcache*|bcache|dm-cache) return 0 ;; esac; return 1; }

R4K="--rw=randread --bs=4k --direct=1 --norandommap --randrepeat=0"

# The throughput jobs, on one fresh contender.
main_jobs() {
	local c=$1 n=$2 jobs=$3 dev=$DEV regions=
	if is_rcache "$n" && { has "$jobs" hit || has "$jobs" hitqd || has "$jobs" rw9010 ||
		has "$jobs" seq1m-frag || has "$jobs" profile; }; then
		warm "$c" hot "$n" "$dev" $HOT_OFF $HOT_MB 4k 6 || return 1
		regions="$HOT_OFF:$HOT_MB"
	fi
	if has "$jobs" hit; then
		# shellcheck disable=SC2086
		reps "$c" hit "$n" "$dev" $R4K --iodepth=1 \
			--offset=${HOT_OFF}M --size=${HOT_MB}M --time_based --runtime="$RT" || return 1
	fi
	if has "$jobs" hitqd; then
		# shellcheck disable=SC2086
		reps "$c" hitqd "$n" "$dev" $R4K --iodepth=16 --numjobs=2 \
			--offset=${HOT_OFF}M --size=${HOT_MB}M --time_based --runtime="$RT" || return 1
	fi
	if has "$jobs" profile; then
		profile_job "$c" "$n" "$dev" || return 1
	fi
	if has "$jobs" seq1m-frag; then
		reps "$c" seq1m-frag "$n" "$dev" --rw=read --bs=1M --direct=1 --iodepth=4 \
			--offset=${HOT_OFF}M --size=${HOT_MB}M --time_based --runtime="$RT" || return 1
	fi
	if is_rcache "$n" && { has "$jobs" seq1m || has "$jobs" bufseq; }; then
		warm "$c" seq "$n" "$dev" $SEQ_OFF $SEQ_MB 128k 6 4 || return 1
		regions="$regions $SEQ_OFF:$SEQ_MB"
	fi
	if has "$jobs" seq1m; then
		reps "$c" seq1m "$n" "$dev" --rw=read --bs=1M --direct=1 --iodepth=4 \
			--offset=${SEQ_OFF}M --size=${SEQ_MB}M --time_based --runtime="$RT" || return 1
	fi
	if has "$jobs" bufseq; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
		reps "$c" bufseq "$n" "$dev" --rw=read --bs=1M --direct=0 --invalidate=1 --iodepth=1 \
			--offset=${SEQ_OFF}M --size=${SEQ_MB}M --time_based --runtime="$RT" || return 1
	fi
	# Writes: never two in flight to the same block (serialize_overlap):
	# the order of overlapping writes in flight is undefined, so the cache
	# and the origin could rightly end with different ones, and the verify
	# step would report it.
	if has "$jobs" randwrite; then
		reps "$c" randwrite "$n" "$dev" --rw=randwrite --bs=4k --direct=1 --norandommap --serialize_overlap=1 \
			--randrepeat=0 --iodepth=16 --offset=${WR_OFF}M --size=${WR_MB}M \
			--time_based --runtime="$RT" || return 1
		regions="$regions $WR_OFF:$WR_MB"
	fi
	if has "$jobs" rw9010; then
		reps "$c" rw9010 "$n" "$dev" --rw=randrw --rwmixread=90 --bs=4k --direct=1 \
			--norandommap --serialize_overlap=1 --randrepeat=0 --iodepth=16 --offset=${HOT_OFF}M --size=${HOT_MB}M \
			--time_based --runtime="$RT" || return 1
		has "$regions" "$HOT_OFF:$HOT_MB" || regions="$regions $HOT_OFF:$HOT_MB"
	fi
	if is_rcache "$n" && [ -n "$regions" ]; then
		verify "$c" "$n" "$dev" "$regions"
	fi
	return 0
}

# The contender's device reads the same bytes as the origin over the
# working sets it cached (1 MiB direct reads; at most 32 MiB of each).
verify() {
	local c=$1 n=$2 dev=$3 off=0 a b reg o m bad=
	[ "$n" = bcache ] && off=8192 # bcache's data offset on the backing device
	for reg in $4; do
		o=${reg%:*} m=${reg#*:}
		a=$(dd if="$dev" bs=1M skip="$o" count="$m" iflag=direct 2>/dev/null | md5sum | cut -c1-32)
		b=$(dd if=/dev/mapper/borigin bs=1M skip=$((o * 1048576 + off)) count="$m" \
			iflag=skip_bytes,direct 2>/dev/null | md5sum | cut -c1-32)
		if [ "$a" != "$b" ]; then
			# which 4 KiB blocks differ (offsets from the region's start)
			dd if="$dev" of="$B/tmp/va" bs=1M skip="$o" count="$m" iflag=direct 2>/dev/null
			dd if=/dev/mapper/borigin of="$B/tmp/vb" bs=1M skip=$((o * 1048576 + off)) count="$m" \
				iflag=skip_bytes,direct 2>/dev/null
			cmp -l "$B/tmp/va" "$B/tmp/vb" | awk '{ b = int(($1 - 1) / 4096); if (!(b in s)) { s[b] = 1; n++; if (n <= 8) l = l " " b } }
				END { printf "%d block(s):%s\n", n, l }' >"$B/tmp/vd"
			rm -f "$B/tmp/va" "$B/tmp/vb"
			err "$c $n WRONG DATA: ${m} MiB at ${o} MiB read through $n differ from the origin in $(cat "$B/tmp/vd")"
			bad=1
		fi
	done
	out "D $c $n ${bad:-ok} $(echo "$4" | tr ' ' ',')"
	say "  verify ($4): ${bad:+MISMATCH}${bad:-same as the origin}"
}

# Zipf 1.1 random reads from cold, for a fixed time: per-second hit ratio,
# from the contender's counters (sampled every second) and inferred from
# latency (<= delay/2 is a hit).
zipf_job() {
	local c=$1 n=$2 dev=$DEV o=$B/tmp/zipf sampler
	rm -f "$o"_* "$B/tmp/zc"
	(
		t0=$(now)
		while :; do
			echo "$(since "$t0") $(counters "$n")" >>"$B/tmp/zc"
			sleep 1
		done
	) &
	sampler=$!
	# shellcheck disable=SC2086
	fio_run "$c" zipf "$n" 1 "$dev" $R4K --random_distribution=zipf:1.1 \
		--iodepth=8 --offset=${ZIPF_OFF}M --size=${ZIPF_MB}M --time_based --runtime="$ZRT" \
		--write_lat_log="$o" --log_avg_msec=0 >/dev/null
	kill $sampler 2>/dev/null
	wait $sampler 2>/dev/null
	# per-IO log: msec, latency ns, dir, bs, offset[, prio]
	awk -F', *' -v c="$c" -v n="$n" -v th=$((DELAY_MS * 500000)) '{
		s = int($1 / 1000); t[s]++; if ($2 <= th) f[s]++; if (s > m) m = s }
		END { for (i = 0; i <= m; i++) printf "Z %s %s %d %d %d\n", c, n, i, t[i], f[i] }' \
		"$o"_lat.1.log >>"$B/results.txt"
	awk -v c="$c" -v n="$n" '$2 != "-" { print "ZC", c, n, $1, $2, $3 }' "$B/tmp/zc" >>"$B/results.txt"
	say "  zipf: $(tail -n 1 "$B/tmp/zc")"
	rm -f "$o"_*
}

# The hot set survives a sequential scan of twice the cache.
scan_job() {
	local c=$1 n=$2 dev=$DEV r c0 c1 b0 b1 bp
	warm "$c" scanhot "$n" "$dev" $HOT_OFF $SCAN_HOT_MB 4k 8 || return 1
	b0=$(bypassed "$n")
	fio_run "$c" scan "$n" 1 "$dev" --rw=read --bs=1M --direct=1 --iodepth=1 \
		--offset=${SCAN_OFF}M --size=$((CACHE_MB * 2))M >/dev/null || return 1
	b1=$(bypassed "$n")
	c0=$(counters "$n")
	# shellcheck disable=SC2086
	r=$(fio_run "$c" hotafter "$n" 1 "$dev" --rw=randread --bs=4k --direct=1 --iodepth=8 \
		--offset=${HOT_OFF}M --size=${SCAN_HOT_MB}M) || return 1
	c1=$(counters "$n")
	bp=$(echo "$b0 $b1" | awk '{ print ($1 == "-") ? "-" : $2 - $1 }')
	out "S $c $n $(cdelta "$c0" "$c1") $bp $(echo "$r" | cut -d' ' -f6)"
	say "  scan: hot set after it: hits/misses $(cdelta "$c0" "$c1") ($(hitpct "$(cdelta "$c0" "$c1")")%), scan IOs bypassed $bp"
}
bypassed() {
	case $1 in
	dm-bcache*) dmsetup status dmb | awk '{ print $12 }' ;;
	*) echo - ;;
	esac
}

# Kernel memory of the cache's metadata: /proc/meminfo before the set-up,
# after it, after a 4k random fill of FILL_MB (the biggest index), each
# with the page cache dropped. The brd pages were all allocated at boot.
# Each field: the median of 5 readings 0.5 s apart, after the page cache is
# dropped and freed memory (RCU, deferred frees) has had 2 s to come back.
memsnap() { # -> "used slab sunreclaim vmalloc percpu pagetables"
	local i=0 pcp
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 2
	echo 3 >/proc/sys/vm/drop_caches
	: >"$B/tmp/mem"
	while [ $i -lt 5 ]; do
		# free pages parked on the per-CPU lists are not in MemFree: they
		# would add noise of several MiB; /proc/zoneinfo counts them
		pcp=$(awk '$1 == "count:" { n += $2 } END { print n * 4 }' /proc/zoneinfo)
		awk -v pcp="$pcp" '{ v[$1] = $2 } END {
			print v["MemTotal:"] - v["MemFree:"] - v["Buffers:"] - v["Cached:"] - pcp,
				v["Slab:"], v["SUnreclaim:"], v["VmallocUsed:"], v["Percpu:"], v["PageTables:"] }' \
			/proc/meminfo >>"$B/tmp/mem"
		sleep 0.5
		i=$((i + 1))
	done
	for i in 1 2 3 4 5 6; do
		cut -d' ' -f$i "$B/tmp/mem" | sort -n | sed -n 3p
	done | tr '\n' ' ' | sed 's/ $//'
	echo
}
slabsnap() {
	awk 'NR > 2 { printf "%s %d\n", $1, $3 * $4 / 1024 }' /proc/slabinfo | sort >"$1"
}
mem_job() {
	local c=$1 n=$2 m0=$3 m1 m2 p filled
	slabsnap "$B/tmp/slab1"
	m1=$(memsnap)
	p=0
	while [ $p -lt 3 ]; do
		p=$((p + 1))
		fio_run "$c" fill "$n" $p "$DEV" --rw=randread --bs=4k --direct=1 --iodepth=32 \
			--offset=0 --size=${FILL_MB}M >/dev/null || return 1
		# one pass fills dm-bcache and bcache (every miss is cached); smq
		# promotes only blocks hit again: give it three
		[ "$n" = dm-cache ] || break
	done
	m2=$(memsnap)
	slabsnap "$B/tmp/slab2"
	case $n in
	dm-bcache*) filled=$(($(dmb_stat dmb filled_sectors) / 2)) ;;
	dm-cache) filled=$(dmsetup status dmc | awk '{ split($7, a, "/"); print a[1] * 32 }') ;;
	*) filled=$((FILL_MB * 1024)) ;;
	esac
	out "MF $c $n $filled"
	echo "$m0|$m1|$m2" | awk -F'|' -v c="$c" -v n="$n" '{
		split("used slab sunreclaim vmalloc percpu pagetables", k, " ")
		split($1, a, " "); split($2, b, " "); split($3, d, " ")
		for (i = 1; i <= 6; i++) print "M", c, n, k[i], a[i], b[i], d[i] }' >>"$B/results.txt"
	join "$B/tmp/slab1" "$B/tmp/slab2" | awk -v c="$c" -v n="$n" '{ d = $3 - $2; if (d >= 64) print "MS", c, n, $1, d }' |
		sort -k5 -n -r | head -n 6 >>"$B/results.txt"
	say "  mem: before $m0 | set up $m1 | filled $m2 (filled ${filled} KiB)"
}

# Which of a case's jobs a contender runs.
jobs_for() { # jobs_for CONT CASEJOBS
	local n=$1 j res=
	for j in $2; do
		case $n:$j in
		dm-bcache:scale) res="$res $j" ;;
		*:scale) ;;
		raw-*:zipf|raw-*:scan|raw-*:mem) ;;
		raw-origin:hitqd) ;;
		dm-linear:hit|dm-linear:hitqd|dm-linear:profile) res="$res $j" ;;
		dm-linear:*) ;;
		dm-writecache:randwrite|dm-writecache:rw9010) res="$res $j" ;;
		dm-writecache:*) ;;
		*) res="$res $j" ;;
		esac
	done
	echo "$res"
}

# One step of a contender on a fresh set-up: step CASE CONT FUNC ARGS...
step() {
	local c=$1 n=$2
	shift 2
	if csetup "$c" "$n"; then
		"$@" || err "$c $n $1 failed"
		teardown "$n"
	else
		err "$c $n set-up failed: $(tr '\n' ' ' <"$B/tmp/why")"
		teardown "$n" >/dev/null 2>&1
		return 1
	fi
}

run_contender() {
	local c=$1 n=$2 jobs=$3 m0 mj='' j
	say "$c: $n:$jobs"
	if has "$jobs" zipf; then
		step "$c" "$n" zipf_job "$c" "$n" || return
	fi
	for j in $jobs; do case $j in zipf|scan|mem|scale) ;; *) mj="$mj $j" ;; esac; done
	if [ -n "$mj" ]; then
		step "$c" "$n" main_jobs "$c" "$n" "$mj" || return
	fi
	if has "$jobs" scan; then
		step "$c" "$n" scan_job "$c" "$n" || return
	fi
	if has "$jobs" mem; then
		m0=$(memsnap)
		step "$c" "$n" mem_job "$c" "$n" "$m0" || return
	fi
	# its own devices, one cache size after another
	if has "$jobs" scale; then
		scale_job "$c" || return
	fi
}

save() {
	dmesg >"$B/dmesg.txt"
	(cd /tmp && tar cf - bench/results.txt bench/dmesg.txt bench/raw) >"$B/tmp/r.tar"
	dd if="$B/tmp/r.tar" of="$RESULTS_DISK" bs=1M conv=fsync 2>/dev/null
	sync
}

# shellcheck source=bench/guest/scale.sh
. /tests/bench/scale.sh

# ---------------------------------------------------------------------------
ORIGIN_DISK=$(disk origin) || { fail "no origin disk"; exit 1; }
SCALE_DISK=$(disk scale 2>/dev/null) || SCALE_DISK=
RESULTS_DISK=$(disk results) || { fail "no results disk"; exit 1; }
SHM_DISK=$(disk shmcache 2>/dev/null) || SHM_DISK=
SHM_REF=$(disk shmref 2>/dev/null) || SHM_REF=
# ram0: the cache, ram1: dm-cache's metadata, ram2: the reference
modprobe brd rd_nr=3 rd_size=$((CACHE_MB * 1024)) || { fail "modprobe brd"; exit 1; }
for m in dm-delay dm-cache dm-cache-smq dm-writecache bcache dm-bcache; do
	modprobe "$m" || err "all $m modprobe failed"
done
META=/dev/ram1
[ "$(($(sectors "$ORIGIN_DISK") / MiB))" -ge $ORIGIN_MIN_MB ] ||
	{ fail "origin disk smaller than $ORIGIN_MIN_MB MiB"; exit 1; }

out "V kernel $(uname -r) $(uname -v | tr ' ' '_')"
out "V fio $(fio --version)"
out "V date $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
out "V cpus $(grep -c ^processor /proc/cpuinfo) $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' '_')"
out "V clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
out "V mem_kib $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
out "V params delay_ms=$DELAY_MS reps=$REPS rt=${RT}s zipf_rt=${ZRT}s cache_mb=$CACHE_MB bucket=$BUCKET"
out "V origin $ORIGIN_DISK $(($(sectors "$ORIGIN_DISK") / MiB))MiB"
out "V dmsetup $(dmsetup --version 2>/dev/null | tr '\n' ' ' | tr -s ' ' | tr ' ' '_')"
out "V targets $(dmsetup targets | awk '$1 ~ /^(bcache|cache|writecache|delay|linear)$/ { printf "%s-%s,", $1, $2 }')"

say "start: cases $CASES, origin delay ${DELAY_MS} ms in the -hdd cases, $REPS x ${RT}s, cache ${CACHE_MB} MiB"
t0=$(now)
# Every device gets its final contents once: the brd pages are allocated
# (so no contender pays for the first touch, and the memory job sees none
# of it), the origin's working sets hold random data (so that a read from
# the wrong place shows in the verify step).
for d in /dev/ram0 /dev/ram1 /dev/ram2; do
	dd if=/dev/zero of=$d bs=1M 2>/dev/null
done
fio --name=fill --filename="$ORIGIN_DISK" --rw=write --bs=1M --direct=1 --iodepth=8 \
	--ioengine=libaio --size=$((SCAN_OFF + CACHE_MB * 2))M --randseed=42 \
	--eta=never --output=/dev/null || err "all origin fill failed"
for d in $SHM_DISK $SHM_REF; do
	dd if=/dev/zero of="$d" bs=1M oflag=direct 2>/dev/null
done
say "devices filled in $(since "$t0")s"

CONTENDERS=$(bparam contenders raw-cache,raw-origin,dm-linear,dm-bcache,bcache,dm-cache,dm-writecache | tr ',' ' ')
for CASE in $CASES; do
	case $CASE in
	# the -hdd jobs are bound by the origin's delay, wall-clock time that
	# the host's load does not stretch: no reference runs
	brd-hdd) CDEV=/dev/ram0 REFDEV='' DELAY=$DELAY_MS
		JOBS="zipf randwrite rw9010 scan" ;;
	brd-fast) CDEV=/dev/ram0 REFDEV=/dev/ram2 DELAY=0
		JOBS="hit hitqd seq1m seq1m-frag bufseq mem"
		[ "$(bparam profile 0)" = 1 ] && JOBS="$JOBS profile" ;;
	shm-fast) CDEV=$SHM_DISK REFDEV=$SHM_REF DELAY=0
		JOBS="hit seq1m" ;;
	# caches of several sizes on the sparse disk "scale" (scale.sh)
	scale) CDEV=$SCALE_DISK REFDEV='' DELAY=0
		JOBS="scale" ;;
	*) err "$CASE all unknown case"; continue ;;
	esac
	# bench.jobs: only these of the case's jobs
	only=$(bparam jobs '' | tr ',' ' ')
	if [ -n "$only" ]; then
		JOBS=$(for j in $JOBS; do has "$only" "$j" && echo "$j"; done | tr '\n' ' ')
	fi
	if [ -z "$CDEV" ]; then
		err "$CASE all no cache device"
		continue
	fi
	out "V case $CASE cache=$CDEV($(($(sectors "$CDEV") / MiB))MiB) reference=${REFDEV:-none} origin=dm-delay:${DELAY}ms:$ORIGIN_DISK jobs=$(echo $JOBS | tr ' ' ',')"
	if ! make_origin "$DELAY"; then
		err "$CASE all cannot create the dm-delay origin"
		continue
	fi
	tc=$(now)
	for n in $CONTENDERS; do
		jobs=$(jobs_for "$n" "$JOBS")
		[ -n "$jobs" ] || continue
		tn=$(now)
		run_contender "$CASE" "$n" "$jobs"
		out "T $CASE $n $(since "$tn")"
	done
	dmsetup remove borigin
	dmsetup mknodes
	out "T $CASE all $(since "$tc")"
	say "$CASE done in $(since "$tc")s"
	save
done
out "T all all $(since "$t0")"
save
say "done in $(since "$t0")s"
pass "bench ran"
