# The admin guide, Documentation/dm-bcache.rst: its example output comes
# from this scenario, and this scenario checks that the guide still
# describes the target: the status line has exactly the fields listed
# below (the guide's, in its order; tests/host/docs.sh keeps the lists
# equal to the guide's tables), each meaning what the guide says, then the
# tunables; every message and optional argument the guide lists is
# accepted. A field added to the status line fails here until the guide
# and DOC_FIELDS have it. Boot 1 ends with a crash while the cache holds
# dirty data (writeback); boot 2 shows what the journal brings back.
#
# The examples are the "@@INFO ex:" lines of the console logs:
#   sed -n 's/^.*@@INFO ex: \{0,1\}//p' build/tests/docs-example/console-1.log
#   sed -n 's/^.*@@INFO ex: \{0,1\}//p' build/tests/docs-example/console-2.log
# disks: cache=64M origin=256M
# boots: 2
# timeout: 600
# shellcheck shell=sh disable=SC3043 # busybox ash has local
. /tests/guest/dmb.sh

# --- the guide's lists (tests/host/docs.sh compares them with it) -----
# Status fields after "<start> <len> bcache", in order, up to the count
# of tunables. (A new field goes at the end of this list.)
DOC_FIELDS='version block_size bucket_size buckets read_hits read_misses
write_hits write_misses bypassed dirty mode slot origin_uuid state
btree_depth btree_nodes gc_runs hit_ratio filled_sectors retries
cache_errors invalidations journal_seq journal_used checkpoints
written_back rewritten deferred nodes_read nodes_evicted
nodes_read_nolock node_compactions
compacted_nolock inserts_shared csum_errors format'
# The "key value" pairs that follow the count of tunables, in order.
DOC_TUNABLES='sequential_cutoff cache_priority_initial cache_priority_hit
cache_priority_seek cache_priority_rescale writeback_percent
writeback_running rewrite_fragmented verify_csums'
# Messages besides the tunables.
DOC_MESSAGES='invalidate gc checkpoint flush cache_mode'
# Optional table arguments.
DOC_ARGS='origin_uuid cache_mode'
# ----------------------------------------------------------------------

cache=$(disk cache)
origin=$(disk origin)
U=0b5e55ed-c0de-4a11-8bad-d0c5e8a3b1e5
dmb_load

# ex CMD: show "# CMD" and its output as example lines; CMD is a shell
# command line. Its exit status is returned.
ex() {
	local rc line
	info "ex: # $1"
	sh -c "$1" >/tmp/ex.out 2>&1
	rc=$?
	while IFS= read -r line || [ -n "$line" ]; do
		info "ex: $line"
	done </tmp/ex.out
	[ $rc -eq 0 ] || info "ex: (exit status $rc)"
	return $rc
}
blank() {
	info "ex:"
}
# a list's words on one line, and their number
# shellcheck disable=SC2086 # splitting wanted
flat() {
	echo $1
}
words() {
	flat "$1" | wc -w | tr -d ' '
}
# field N of the status line after "<start> <len> bcache" (N from 1)
sfield() {
	dmsetup status data | awk -v n="$1" '{ print $(n + 3) }'
}
# a status field by the guide's name
sf() {
	local i=1 f
	for f in $DOC_FIELDS; do
		[ "$f" = "$1" ] && sfield $i && return 0
		i=$((i + 1))
	done
	echo "no field $1" >&2
	return 1
}
is_num() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
}
# The status line against the guide: the number of fields, the count of
# tunables where the guide says, the tunables' names in order.
check_layout() {
	local st nf nt want names
	st=$(dmsetup status data)
	nf=$(words "$DOC_FIELDS")
	nt=$(echo "$st" | awk -v n="$nf" '{ print $(n + 4) }')
	check "status field $((nf + 1)) is the count of tunables ($nt)" is_num "$nt"
	check_eq "the guide's tunables count" "$(words "$DOC_TUNABLES")" "$nt"
	want=$((3 + nf + 1 + 2 * $(words "$DOC_TUNABLES")))
	check_eq "words in the status line: 3 + the guide's $nf fields + count + 2 x tunables (a new field? add it to Documentation/dm-bcache.rst and DOC_FIELDS)" \
		"$want" "$(echo "$st" | wc -w | tr -d ' ')"
	names=$(echo "$st" | awk -v n="$nf" -v t="$nt" '{
		for (i = 0; i < t; i++) printf "%s%s", (i ? " " : ""), $(n + 5 + 2 * i) }')
	check_eq "the tunables, in the guide's order" "$(flat "$DOC_TUNABLES")" "$names"
}

# 4k random writes in writeback mode, with fio's checksums, to verify later:
# wb NAME OFFSET SIZE [FIO ARGS...]
wb() {
	local name="$1" off="$2" size="$3"
	shift 3
	fio --name="$name" --filename=/dev/mapper/data --rw=randwrite --bs=4k \
		--offset="$off" --size="$size" --randrepeat=1 --direct=1 \
		--verify=crc32c --do_verify=0 --output=/tmp/wb "$@"
}
# wb_verify NAME OFFSET SIZE DEVICE: DEVICE holds what "wb NAME ..." wrote
wb_verify() {
	fio --name="$1" --filename="$4" --rw=randwrite --bs=4k --offset="$2" \
		--size="$3" --randrepeat=1 --direct=1 --verify=crc32c \
		--verify_only=1 --output=/tmp/wbv
}
# the writeback table line over the whole origin
wb_table() {
	echo "0 $(blockdev --getsz "$origin") bcache $cache $origin 4 origin_uuid $U cache_mode writeback"
}

# --- boot 2: after the crash that ends boot 1 ----------------------------
after_crash() {
	local d n
	check "bcache-super-show after the crash" ex \
		"bcache-super-show $cache | grep -E '^(sb.flags|sb.journal|btree.root)'"
	check "superblock says dirty" sh -c "bcache-super-show $cache | grep -q 'sb.flags	dirty'"
	blank
	check "bcache-check after the crash" ex "bcache-check $cache"
	blank
	check "bcache-dump --journal (head)" ex "bcache-dump --journal $cache | head -n 6"
	blank
	n=$(dmb_journal_entries "$cache")
	check "create in writeback after the crash" ex "dmsetup create data --table '$(wb_table)'"
	dmsetup mknodes data
	check "status after the crash (example)" ex "dmsetup status data"
	blank
	check "the journal had entries to replay ($n)" test "$n" -gt 0
	check "the kernel replayed them all" dmb_replayed "$n"
	k=$(dmesg | sed -n 's/.*journal replayed: [0-9]* entries, \([0-9]*\) keys.*/\1/p')
	check "... at least the 64 keys of the last writes (${k:-none})" test "${k:-0}" -ge 64
	d=$(sf dirty)
	check "dirty data survived the crash ($d sectors left)" test "$d" -gt 0
	# The open from the bucket states counts the replayed keys on top of
	# the checkpoint's count (the 256 KiB rewritten) until a GC pass.
	check "... at most the 4 MiB written before it, and the 256 KiB again" \
		test "$d" -le $((8192 + 512))
	check "reads return what was written before the crash" wb_verify wb2 224M 4M /dev/mapper/data
	check "and before that" wb_verify wb1 192M 8M /dev/mapper/data
	check "flush (example)" ex "dmsetup message data 0 flush"
	check "bcachectl status data dirty (example)" ex "bcachectl status data dirty"
	check_eq "nothing dirty after flush" 0 "$(sf dirty)"
	check "the origin has it all" wb_verify wb2 224M 4M "$origin"
	check "... and the first 8 MiB" wb_verify wb1 192M 8M "$origin"
	check_layout
	check "remove" ex "dmsetup remove data"
	blank
	check "the kernel's messages after the crash" ex \
		"dmesg | grep -v @@ | grep 'device-mapper: .*bcache' | sed 's/^\[[^]]*\] //'"
	check "bcache-check after the clean close" bcache-check "$cache"
}
if [ "$BOOT" -eq 2 ]; then
	after_crash
	exit 0
fi

# --- format, inspect ---------------------------------------------------
check "make-bcache" ex "make-bcache -l fast $cache"
blank
check "bcache-super-show" ex "bcache-super-show $cache"
blank
check "probe-bcache" ex "probe-bcache $cache"
check "probe-bcache --export" ex "probe-bcache --export $cache"
blank
data_buckets=$(bcache-super-show "$cache" | sed -n 's/^data_buckets	//p')
journal_buckets=$(bcache-super-show "$cache" | sed -n 's/^sb.journal_buckets	//p')

# --- create, IO --------------------------------------------------------
len=$(blockdev --getsz "$origin")
check "create (persistent)" ex "dmsetup create data --table '0 $len bcache $cache $origin 2 origin_uuid $U'"
dmsetup mknodes data
check "origin gets a pattern through the target" fio --name=p --filename=/dev/mapper/data \
	--rw=write --bs=1M --size=256M --direct=1 --output=/tmp/p
rd() {
	fio --name=r --filename=/dev/mapper/data --rw=randread --bs=4k --size=32M \
		--randrepeat=1 --direct=1 --output=/tmp/r
}
check "4k random reads of 32 MiB" rd
check "... twice" rd
check "4k random writes over 4 MiB of it" fio --name=w --filename=/dev/mapper/data \
	--rw=randwrite --bs=4k --size=4M --direct=1 --output=/tmp/w
check "a 64 MiB sequential read" dd if=/dev/mapper/data of=/dev/null bs=1M count=64 \
	skip=128 iflag=direct
sleep 1
check "dmsetup table" ex "dmsetup table data"
check "dmsetup status" ex "dmsetup status data"
blank
check "bcachectl status" ex "bcachectl status data"
blank

# --- the status line, field by field, as the guide describes it --------
check_layout
check_eq "version" 2 "$(sf version)"
check_eq "block_size: sectors (make-bcache's 4 KiB default)" 8 "$(sf block_size)"
check_eq "bucket_size: sectors (512 KiB)" 1024 "$(sf bucket_size)"
b=$(sf buckets)
check "buckets is used/total" sh -c "echo '$b' | grep -Eqx '[0-9]+/[0-9]+'"
check_eq "buckets: total = the data buckets bcache-super-show counts (no journal)" \
	"$data_buckets" "${b#*/}"
check "buckets: some used" test "${b%/*}" -gt 0
h=$(sf read_hits) m=$(sf read_misses)
check "read_hits: the second pass hit" test "$h" -ge 4096
check "read_misses: the first pass missed" test "$m" -ge 4096
check "write_hits: the writes overwrote cached data" test "$(sf write_hits)" -gt 0
check "write_misses: the pattern's writes" test "$(sf write_misses)" -gt 0
check "bypassed: the sequential read" test "$(sf bypassed)" -gt 0
check_eq "dirty: 0 in writethrough" 0 "$(sf dirty)"
check_eq "mode" writethrough "$(sf mode)"
check "slot: a number" is_num "$(sf slot)"
check_eq "origin_uuid: the table's" $U "$(sf origin_uuid)"
check_eq "state" ok "$(sf state)"
check "btree_depth >= 1" test "$(sf btree_depth)" -ge 1
check "btree_nodes >= 1" test "$(sf btree_nodes)" -ge 1
check "gc_runs >= 1 once a checkpoint followed the open's (it runs the pass the open asks for)" \
	sh -c "test $(sf checkpoints) -lt 2 || test $(sf gc_runs) -ge 1"
check_eq "hit_ratio = read_hits * 100 / (read_hits + read_misses)" \
	$((h * 100 / (h + m))) "$(sf hit_ratio)"
check "filled_sectors: at least the second pass's" test "$(sf filled_sectors)" -ge 65536
check_eq "retries" 0 "$(sf retries)"
check_eq "cache_errors" 0 "$(sf cache_errors)"
check "invalidations: a number" is_num "$(sf invalidations)"
check "journal_seq: the IO's keys went through the journal" test "$(sf journal_seq)" -gt 1
j=$(sf journal_used)
check "journal_used is used/total" sh -c "echo '$j' | grep -Eqx '[0-9]+/[0-9]+'"
check_eq "journal_used: total = the journal's buckets, in sectors" \
	"$((journal_buckets * 1024))" "${j#*/}"
check "journal_used: used <= total" test "${j%/*}" -le "${j#*/}"
check "checkpoints >= 1: one at open" test "$(sf checkpoints)" -ge 1
check_eq "written_back: 0 in writethrough" 0 "$(sf written_back)"
check_eq "bcachectl's names are the guide's" "$(flat "$DOC_FIELDS") tunables $(flat "$DOC_TUNABLES")" \
	"$(bcachectl status data | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"

# --- messages ------------------------------------------------------------
# every tunable takes its own value back
for t in $DOC_TUNABLES; do
	v=$(dmb_tunable data "$t")
	check "message $t $v" dmsetup message data 0 "$t" "$v"
done
for msg in $DOC_MESSAGES; do
	case $msg in
	cache_mode)
		check "message cache_mode writeback" dmsetup message data 0 cache_mode writeback
		check_eq "mode writeback" writeback "$(sf mode)"
		check "message cache_mode writethrough" dmsetup message data 0 cache_mode writethrough
		;;
	*) check "message $msg" dmsetup message data 0 "$msg" ;;
	esac
done
check_fails "an unknown message is refused" dmsetup message data 0 nosuch 1
check_fails "a tunable out of range is refused" dmsetup message data 0 cache_priority_hit 65535
g=$(sf gc_runs) c=$(sf checkpoints)
check "message gc (example)" ex "dmsetup message data 0 gc"
check "gc_runs went up" test "$(sf gc_runs)" -ge $((g + 1))
check "checkpoints went up" test "$(sf checkpoints)" -ge $((c + 1))
g=$(sf gc_runs) c=$(sf checkpoints)
check "message checkpoint" dmsetup message data 0 checkpoint
check "checkpoints went up again" test "$(sf checkpoints)" -ge $((c + 1))
check_eq "a checkpoint with no GC due runs no pass" "$g" "$(sf gc_runs)"
# invalidate (sent above) dropped the cached data: a pass misses, the
# next one hits
h=$(sf read_hits)
check "a pass after invalidate" rd
check_eq "... no hits" "$h" "$(sf read_hits)"
check "another pass" rd
check "... hits" test "$(sf read_hits)" -ge $((h + 4096))
check "message sequential_cutoff" ex "dmsetup message data 0 sequential_cutoff 8388608"
check "message cache_mode" ex "dmsetup message data 0 cache_mode writearound"
check "table after the messages" ex "dmsetup table data"
check_eq "mode after the message" writearound "$(sf mode)"
check_eq "sequential_cutoff after the message" 8388608 "$(dmb_tunable data sequential_cutoff)"
check_layout
check "remove" ex "dmsetup remove data"
blank

# --- the offline tools, after the clean close ---------------------------
check "bcache-check" ex "bcache-check -v $cache"
blank
check "bcache-dump --uuids" ex "bcache-dump --uuids $cache"
blank
check "bcache-dump --buckets" ex "bcache-dump --buckets $cache"
blank
check "bcache-dump --btree (head)" ex "bcache-dump --btree $cache | head -n 6"
blank

# --- persistence: the same uuid finds its data again ----------------------
check "bcachectl create again with the uuid" ex "bcachectl create data $cache $origin --uuid $U"
check "a pass" rd
check "hits at once" test "$(sf read_hits)" -ge 4096
check "hit ratio (example)" ex "bcachectl status data hit_ratio"
check "bcachectl list" ex "bcachectl list"
check "bcachectl remove" ex "bcachectl remove data"
blank
check_fails "cache_mode writeback without origin_uuid is refused" \
	dmsetup create t --table "0 $len bcache $cache $origin 2 cache_mode writeback"
check "the kernel's messages" ex "dmesg | grep -v @@ | grep 'device-mapper: .*bcache' | sed 's/^\[[^]]*\] //'"
blank

# --- the optional arguments -------------------------------------------
for a in $DOC_ARGS; do
	case $a in
	origin_uuid) line="0 $len bcache $cache $origin 2 origin_uuid $U" ;;
	cache_mode) line="0 $len bcache $cache $origin 2 cache_mode none" ;;
	*) line="0 $len bcache $cache $origin 1 $a" ;;
	esac
	check "table argument $a" dmsetup create t --table "$line"
	check "remove" dmsetup remove t
done
check_fails "an unknown argument is refused" dmsetup create t --table "0 $len bcache $cache $origin 2 nosuch 1"
check "an ephemeral table" dmsetup create t --table "0 $len bcache $cache $origin"
check_fails "... refuses the message cache_mode writeback" dmsetup message t 0 cache_mode writeback
check "remove" dmsetup remove t

# --- writeback, then a crash with dirty data ------------------------------
check "create in writeback" ex "dmsetup create data --table '$(wb_table)'"
dmsetup mknodes data
check_eq "mode writeback" writeback "$(sf mode)"
check "pause writeback (example)" ex "dmsetup message data 0 writeback_running 0"
check "8 MiB of 4k random writes" wb wb1 192M 8M
d=$(sf dirty)
check "dirty: the writes ($d sectors)" test "$d" -gt 0
check "... at most the 8 MiB" test "$d" -le 16384
check "status with dirty data (example)" ex "dmsetup status data"
check_eq "written_back: nothing while paused" 0 "$(sf written_back)"
check "reads return the new data" wb_verify wb1 192M 8M /dev/mapper/data
check_fails "the origin does not have it yet" wb_verify wb1 192M 8M "$origin"
check "flush (example)" ex "dmsetup message data 0 flush"
check "bcachectl status data dirty written_back (example)" ex \
	"bcachectl status data | grep -E '^(dirty|written_back) '"
check_eq "nothing dirty after flush" 0 "$(sf dirty)"
check_eq "written_back: what was dirty" "$d" "$(sf written_back)"
check "the origin has it now" wb_verify wb1 192M 8M "$origin"
check "4 MiB more, then fsync" wb wb2 224M 4M --end_fsync=1
# The crash must find keys in the journal, but those writes may have
# filled it past half, and the checkpoint that starts then empties it
# (when, depends on the speed of the run). So: let any checkpoint under
# way end, take one now, and write 256 KiB of the dirty data again, the
# same bytes (dirty stays the same): 64 journal keys, far from half.
check "no checkpoint for a second" dmb_settle data
check "message gc: a checkpoint" dmsetup message data 0 gc
c=$(sf checkpoints)
check "read back 256 KiB of them" dd if=/dev/mapper/data of=/tmp/again bs=4k \
	skip=$((224 * 256)) count=64 iflag=direct
check "... write them again, fsync" dd if=/tmp/again of=/dev/mapper/data bs=4k \
	seek=$((224 * 256)) count=64 oflag=direct conv=fsync
j=$(sf journal_used)
check "the journal holds keys ($j)" test "${j%/*}" -gt 0
check_eq "no checkpoint since" "$c" "$(sf checkpoints)"
check "dirty before the crash (example)" ex "bcachectl status data dirty"
check_layout
blank
crash_now
