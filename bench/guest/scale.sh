# shellcheck shell=sh disable=SC3043 # busybox ash has local
# The scale job (case "scale", issue #13), sourced by bench.sh: how the
# index's costs grow with what is cached. For each size in bench.scale_gb
# a cache of that size (the first GiB of the sparse virtio disk "scale",
# 512 KiB buckets) is filled by 4k random read misses over 80% of it,
# then measured (for each format in bench.scale_formats; with more than
# one, the rows are named SIZEvN):
#   memory     slab + vmalloc over the fill (memsnap), per GiB cached;
#              again after the gc and checkpoint messages (every leaf
#              clean: the node cache holds at most its budget)
#   open       dm-bcache's constructor on the filled cache (it reads the
#              root and the journal) against the one on the fresh cache,
#              and the nodes it read
#   gc, cp     the "gc" (GC pass + checkpoint) and "checkpoint" messages
#              on the idle filled cache: IO waits for as long
#   latency    4k random reads (90/10 with writes, QD1) of the filled set:
#              p99.9 and max alone, beside "gc" messages back to back,
#              beside "checkpoint" messages back to back, and beside "gc"
#              messages again with read_unlocked=N (nodes read under the
#              index lock: what that parameter saves, when leaves are
#              evicted)
#   inserts    the same reads beside 4k random writes at QD8 (each one an
#              index insert), with shared_inserts=Y and =N: what inserts
#              made with the index shared save the reads, and the writes'
#              rate
# Result lines:
#   SC case size_gib key value       (keys: see report.sh)
#   SL case size_gib mode reads p999_us max_us checkpoints compactions nolock
#      (index nodes compacted during the run, and of them those compacted
#      while lookups went on)
#   SW case size_gib mode writes_per_s inserts_shared   (the inserts runs)

SCALE_GB=$(bparam scale_gb 1,4 | tr ',' ' ')
SCALE_FORMATS=$(bparam scale_formats 3 | tr ',' ' ')
SCALE_LAT_RT=$(bparam scale_lat_rt 10)
SCALE_NODE_CACHE_MB=$(bparam node_cache_mb "")
SCALE_CACHE_DELAY=$(bparam scale_cache_delay 0)

# Median of the first field of stdin's lines.
median1() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# Time one command: prints seconds, a line.
timed() {
	local t
	t=$(now)
	"$@" >/dev/null 2>&1 || return 1
	echo "$(since "$t")"
}

# Writes through the target so far, and inserts made shared.
scale_writes() {
	echo "$(($(dmb_stat dmb write_hits) + $(dmb_stat dmb write_misses)))"
}

# scale_lat CASE GIB MODE FILL_MB: read latencies of a 90/10 QD1 run,
# beside MODE (idle, gc, checkpoint, gc-locked) messages back to back,
# or beside a shell spinning on the CPU (busy): what a busy vCPU alone
# costs in this guest, the floor for the messages' runs; or beside 4k
# random writes at QD8 (writes, writes-exclusive: shared_inserts=N).
scale_lat() {
	local c=$1 s=$2 mode=$3 mb=$4 msg=${3%-locked} cp0 cp1 k0 k1 u0 u1 pid=
	local w0 i0 wjob=
	rm -f "$B/tmp/lat_"* "$B/tmp/bg.stop"
	cp0=$(dmb_stat dmb checkpoints)
	k0=$(dmb_stat dmb node_compactions)
	u0=$(dmb_stat dmb compacted_nolock)
	w0=$(scale_writes)
	i0=$(dmb_stat dmb inserts_shared)
	case $mode in
	writes*)
		wjob="--name=w --filename=/dev/mapper/dmb --rw=randwrite --ioengine=libaio --iodepth=8 --bs=4k
			--direct=1 --norandommap --randrepeat=0 --offset=0 --size=${mb}M
			--time_based --runtime=$SCALE_LAT_RT"
		if [ "$mode" = writes ]; then
			echo Y >/sys/module/dm_bcache/parameters/shared_inserts
		else
			echo N >/sys/module/dm_bcache/parameters/shared_inserts
		fi
		;;
	esac
	if [ -n "$wjob" ]; then
		:
	elif [ "$mode" = busy ]; then
		(while [ ! -e "$B/tmp/bg.stop" ]; do :; done) &
		pid=$!
	elif [ "$mode" != idle ]; then
		(while [ ! -e "$B/tmp/bg.stop" ]; do dmsetup message dmb 0 "$msg" || break; done) &
		pid=$!
	fi
	fio --name=lat --filename=/dev/mapper/dmb --ioengine=psync --rw=randrw --rwmixread=90 \
		--bs=4k --direct=1 --norandommap --randrepeat=0 --offset=0 --size=${mb}M \
		--time_based --runtime="$SCALE_LAT_RT" --write_lat_log="$B/tmp/lat" --log_avg_msec=0 \
		${wjob:+$wjob} --eta=never --output=/dev/null 2>"$B/tmp/lat.err" ||
		err "$c dm-bcache scale ${s}G latency $mode: fio failed"
	touch "$B/tmp/bg.stop"
	[ -n "$pid" ] && wait "$pid"
	if [ -n "$wjob" ]; then
		echo Y >/sys/module/dm_bcache/parameters/shared_inserts
		out "SW $c $s $mode $((($(scale_writes) - w0) / SCALE_LAT_RT))" \
			"$(($(dmb_stat dmb inserts_shared) - i0))"
	fi
	cp1=$(dmb_stat dmb checkpoints)
	k1=$(dmb_stat dmb node_compactions)
	u1=$(dmb_stat dmb compacted_nolock)
	# clat log: msec, nsec, direction (0 read), size, offset
	awk -F', ' '$3 == 0 { print $2 }' "$B/tmp/lat_clat.1.log" | sort -n |
		awk -v c="$c" -v s="$s" -v m="$mode" -v n="$((cp1 - cp0))" \
			-v k="$((k1 - k0))" -v u="$((u1 - u0))" '{ v[NR] = $1 }
		END { if (!NR) exit 1; i = int(NR * 0.999); if (i < 1) i = 1
			printf "SL %s %s %s %d %.0f %.0f %d %d %d\n", c, s, m, NR, v[i] / 1000,
				v[NR] / 1000, n, k, u }' \
		>"$B/tmp/sl" || { err "$c dm-bcache scale ${s}G latency $mode: no reads logged"; return 1; }
	cat "$B/tmp/sl" >>"$B/results.txt"
	say "  ${s} GiB latency $mode: $(cut -d' ' -f5- "$B/tmp/sl") (reads p99.9_us max_us checkpoints compactions nolock)"
}

# scale_one CASE GIB FORMAT LABEL: the row LABEL (the size, or SIZEvN)
scale_one() {
	local c=$1 gib=$2 fmt=$3 s=$4 csz osz mb m0 m1 t i f
	csz=$((gib * 1024 * MiB))
	osz=$(sectors /dev/mapper/borigin)
	mb=$((gib * 1024 * 8 / 10))
	if [ "$csz" -gt "$(sectors "$SCALE_DISK")" ] || [ "$((mb * MiB))" -gt "$osz" ]; then
		err "$c dm-bcache scale ${s}G: the scale disk or the origin is too small"
		return 1
	fi
	if [ "$SCALE_CACHE_DELAY" -gt 0 ]; then
		dmsetup create scache --table "0 $csz delay $SCALE_DISK 0 $SCALE_CACHE_DELAY"
	else
		dmsetup create scache --table "0 $csz linear $SCALE_DISK 0"
	fi && dmsetup mknodes scache || { err "$c dm-bcache scale ${s}G: the cache device"; return 1; }
	wipe /dev/mapper/scache
	# buckets: make-bcache's default (512 KiB), as on a real SSD
	make-bcache -q -w 4k --format-version "$fmt" /dev/mapper/scache || { err "$c dm-bcache scale ${s}G: make-bcache"; return 1; }
	m0=$(memsnap)
	t=$(timed dmsetup create dmb --table "0 $osz bcache /dev/mapper/scache /dev/mapper/borigin") ||
		{ err "$c dm-bcache scale ${s}G: create"; dmsetup remove scache; return 1; }
	dmsetup mknodes dmb
	out "SC $c $s open_empty_s $t"
	dmsetup message dmb 0 sequential_cutoff 0
	t=$(now)
	fio --name=fill --filename=/dev/mapper/dmb --ioengine=libaio --rw=randread --bs=4k \
		--direct=1 --iodepth=32 --offset=0 --size=${mb}M --eta=never --output=/dev/null ||
		err "$c dm-bcache scale ${s}G: fill failed"
	out "SC $c $s fill_s $(since "$t")"
	out "SC $c $s filled_kib $(($(dmb_stat dmb filled_sectors) / 2))"
	out "SC $c $s btree_nodes $(dmb_stat dmb btree_nodes)"
	m1=$(memsnap)
	echo "$m0|$m1" | awk -F'|' -v c="$c" -v s="$s" '{
		split($1, a, " "); split($2, b, " ")
		printf "SC %s %s mem_used_kib %d\nSC %s %s mem_slab_kib %d\nSC %s %s mem_vmalloc_kib %d\n",
			c, s, b[1] - a[1], c, s, b[2] - a[2], c, s, b[4] - a[4] }' >>"$B/results.txt"
	for f in gc checkpoint; do
		i=0
		while [ $i -lt 3 ]; do
			timed dmsetup message dmb 0 $f || err "$c dm-bcache scale ${s}G: message $f"
			i=$((i + 1))
		done >"$B/tmp/t.$f"
		out "SC $c $s ${f}_s $(median1 <"$B/tmp/t.$f")"
	done
	m1=$(memsnap)
	echo "$m0|$m1" | awk -F'|' -v c="$c" -v s="$s" '{
		split($1, a, " "); split($2, b, " ")
		printf "SC %s %s mem_cp_slab_kib %d\nSC %s %s mem_cp_vmalloc_kib %d\n",
			c, s, b[2] - a[2], c, s, b[4] - a[4] }' >>"$B/results.txt"
	out "SC $c $s nodes_resident $(dmb_stat dmb btree_nodes)"
	out "SC $c $s nodes_read $(dmb_stat dmb nodes_read)"
	for f in idle busy gc checkpoint; do
		scale_lat "$c" "$s" $f "$mb"
	done
	echo N >/sys/module/dm_bcache/parameters/read_unlocked
	scale_lat "$c" "$s" gc-locked "$mb"
	echo Y >/sys/module/dm_bcache/parameters/read_unlocked
	# side by side, twice each, in turn: the host's drift hits both
	for f in writes writes-exclusive writes writes-exclusive; do
		scale_lat "$c" "$s" $f "$mb"
	done
	# the open of a filled cache: the root and what the journal replays
	dmsetup remove dmb
	i=0
	while [ $i -lt 3 ]; do
		timed dmsetup create dmb --table "0 $osz bcache /dev/mapper/scache /dev/mapper/borigin" ||
			err "$c dm-bcache scale ${s}G: reopen"
		[ $i -gt 0 ] || echo "$(dmb_stat dmb nodes_read)" >"$B/tmp/t.opennodes"
		dmsetup remove dmb
		i=$((i + 1))
	done >"$B/tmp/t.open"
	out "SC $c $s open_s $(median1 <"$B/tmp/t.open")"
	out "SC $c $s open_nodes_read $(cat "$B/tmp/t.opennodes")"
	dmsetup remove scache
	dmsetup mknodes
	say "  ${s} GiB: $(grep "^SC $c $s " "$B/results.txt" | cut -d' ' -f4- | tr '\n' ' ')"
}

scale_job() {
	local c=$1 s f
	[ -n "$SCALE_DISK" ] || { err "$c dm-bcache scale: no scale disk"; return 1; }
	if [ -n "$SCALE_NODE_CACHE_MB" ]; then
		echo "$SCALE_NODE_CACHE_MB" >/sys/module/dm_bcache/parameters/node_cache_mb ||
			err "$c dm-bcache scale: node_cache_mb"
	fi
	out "SC $c 0 node_cache_mb $(cat /sys/module/dm_bcache/parameters/node_cache_mb)"
	out "SC $c 0 cache_delay_ms $SCALE_CACHE_DELAY"
	for s in $SCALE_GB; do
		for f in $SCALE_FORMATS; do
			if [ "$SCALE_FORMATS" = "$f" ]; then
				scale_one "$c" "$s" "$f" "$s"
			else
				scale_one "$c" "$s" "$f" "${s}v$f"
			fi
			save
		done
	done
}
