#!/bin/bash
# Host: bcachectl against a fake dmsetup (no kernel, no root needed): the
# table lines it builds, stable names, status parsing, errors, and the
# Prometheus text of "bcachectl metrics" (checked strictly, and against the
# example in Documentation/dm-bcache.rst, "Metrics for Prometheus").
# The real thing runs in QEMU:
# tests/scenarios/tools-bcachectl.sh.
set -u
CTL=${DMB_TOP:?}/dmsetup-tables/bcachectl
dir=$(mktemp -d /tmp/tools-bcachectl.XXXXXX)
trap 'rm -rf "$dir"' EXIT
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

mkdir -p "$dir/bin" "$dir/state" "$dir/disk"
export STATE=$dir/state
# dmsetup: devices are files STATE/dev.NAME holding their table; a
# bcache device's status is STATE/status.NAME if there is one, else a fixed
# line; messages and kernel log lines are appended to STATE/messages and
# STATE/dmesg.
cat >"$dir/bin/dmsetup" <<'EOF'
#!/bin/bash
S=$STATE
case $1 in
info) [ -f "$S/dev.$2" ] ;;
table) [ -f "$S/dev.$2" ] && cat "$S/dev.$2" ;;
status)
	[ -f "$S/dev.$2" ] || exit 1
	if [ -f "$S/status.$2" ]; then
		cat "$S/status.$2"
	elif grep -q ' bcache ' "$S/dev.$2"; then
		echo "0 262144 bcache 2 8 1024 35/127 8870 2335 1024 0 1846 0 writethrough 0" \
			"2b9be873-3089-4682-8949-dd66c3372222 ok 1 1 0 79 34528 0 0 0" \
			"42 96/4096 3 0 0 5 17 12 4 9 6 731 2 3 9" \
			"sequential_cutoff 4194304 cache_priority_initial 8192 cache_priority_hit 32" \
			"cache_priority_seek 512 cache_priority_rescale 1048576" \
			"writeback_percent 10 writeback_running 1 rewrite_fragmented 1" \
			"verify_csums 1"
	else
		echo "0 262144 linear"
	fi ;;
create)
	[ "$3" = --table ] || exit 9
	if [ "$2" = fails ]; then
		echo "[  12.345678] device-mapper: table: 254:3: bcache: cache device has no dm-bcache superblock (bad magic)" >>"$S/dmesg"
		echo "device-mapper: reload ioctl on fails  failed: Invalid argument" >&2
		exit 1
	fi
	[ -f "$S/dev.$2" ] && exit 1
	echo "$4" >"$S/dev.$2" ;;
remove) [ -f "$S/dev.$2" ] && rm "$S/dev.$2" ;;
mknodes) exit 0 ;;
message)
	[ -f "$S/dev.$2" ] || exit 1
	shift
	echo "$*" >>"$S/messages"
	[ "$3" != sequential_cutoff ] || [ "$4" -lt 99999999 ] ;;
ls)
	n=0
	for f in "$S"/dev.*; do
		[ -f "$f" ] || continue
		if [ "${3:-}" != bcache ] || grep -q ' bcache ' "$f"; then
			printf '%s\t(254:%d)\n' "${f##*/dev.}" $n
			n=$((n + 1))
		fi
	done
	[ $n -gt 0 ] || echo "No devices found" ;;
*) exit 9 ;;
esac
EOF
cat >"$dir/bin/blockdev" <<'EOF'
#!/bin/sh
[ "$1" = --getsz ] && echo 262144
EOF
cat >"$dir/bin/probe-bcache" <<'EOF'
#!/bin/sh
[ "$1" = "$FAKE_CACHE" ] && exit 0
echo "probe-bcache: $1: no dm-bcache superblock (bad magic)" >&2
exit 1
EOF
cat >"$dir/bin/dmesg" <<'EOF'
#!/bin/sh
[ -f "$STATE/dmesg" ] && cat "$STATE/dmesg"
exit 0
EOF
chmod +x "$dir"/bin/*
export PATH=$dir/bin:$PATH

# run RC DESC CMD...: exit status RC; output in $dir/out
run() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >"$dir/out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "$desc (exit $rc)"
	else
		bad "$desc: exit $rc, expected $want: $*"
		sed 's/^/     | /' "$dir/out"
	fi
}
has() {
	if grep -Eq -- "$2" "$dir/out"; then ok "$1"; else
		bad "$1: no /$2/ in the output"
		sed 's/^/     | /' "$dir/out"
	fi
}
eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}

run 0 "help" "$CTL" help
has "help lists the commands" "create NAME CACHE ORIGIN"
run 2 "no command" "$CTL"
run 2 "unknown command" "$CTL" frobnicate
run 2 "create: missing arguments" "$CTL" create c
run 2 "create: bad uuid" "$CTL" create c /dev/null /dev/null --uuid 1234
has "bad uuid: says what is expected" "invalid UUID '1234'"
run 2 "create: nil uuid" "$CTL" create c /dev/null /dev/null --uuid 00000000-0000-0000-0000-000000000000
run 2 "create: bad name" "$CTL" create a/b /dev/null /dev/null
run 1 "create: missing cache" "$CTL" create c /nonexistent /dev/null
has "missing cache: named" "cache device /nonexistent does not exist"
run 1 "create: cache not a block device" "$CTL" create c /dev/null /dev/null
has "not a block device: named" "cache device /dev/null is not a block device"

# Two block device nodes to stand for the cache and the origin: only
# stat()ed and resolved here; every tool that would open them is a fake.
mapfile -t blk < <(find /dev -maxdepth 1 -type b 2>/dev/null | sort | head -n 2)
if [ "${#blk[@]}" -lt 2 ]; then
	echo "note: fewer than two block device nodes in /dev: create tests skipped"
else
	CACHE=${blk[0]} ORIGIN=${blk[1]}
	export FAKE_CACHE=$CACHE
	U=0bcb5f5e-5d6e-4f7a-9d51-8f1b2a3c4d5e

	# no /dev/disk links: the paths as given
	export BCACHECTL_DISK_DIR=$dir/disk
	run 0 "create, ephemeral" "$CTL" create c "$CACHE" "$ORIGIN"
	eq "table: the given paths, no options" "0 262144 bcache $CACHE $ORIGIN" "$(cat "$STATE/dev.c")"
	has "create prints the table" "^created /dev/mapper/c: 0 262144 bcache $CACHE $ORIGIN$"
	run 1 "create: the name exists" "$CTL" create c "$CACHE" "$ORIGIN"
	has "exists: named" "a device named 'c' exists already"
	run 1 "create: cache is the origin" "$CTL" create d "$CACHE" "$CACHE"
	run 1 "create: unformatted cache" "$CTL" create d "$ORIGIN" "$CACHE"
	has "unformatted: probe's reason and the fix" "is not a dm-bcache cache device \($ORIGIN: no dm-bcache superblock \(bad magic\)\); format it with make-bcache"
	run 1 "create: the kernel refuses" "$CTL" create fails "$CACHE" "$ORIGIN"
	has "refused: the kernel's reason is shown" "kernel: device-mapper: table: 254:3: bcache: cache device has no dm-bcache superblock"

	# stable names: by-dm-bcache for the cache; by-id (never dm-name-*) for the origin
	mkdir -p "$dir/disk/by-id" "$dir/disk/by-uuid" "$dir/disk/by-dm-bcache"
	ln -s "$CACHE" "$dir/disk/by-dm-bcache/$U"
	ln -s "$ORIGIN" "$dir/disk/by-id/dm-name-origin"
	ln -s "$ORIGIN" "$dir/disk/by-uuid/1111-2222"
	run 0 "create with --uuid: by-uuid when there is no by-id" "$CTL" create p "$CACHE" "$ORIGIN" --uuid "${U^^}"
	eq "table: stable names, origin_uuid lower case" \
		"0 262144 bcache $dir/disk/by-dm-bcache/$U $dir/disk/by-uuid/1111-2222 2 origin_uuid $U" \
		"$(cat "$STATE/dev.p")"
	run 2 "create --mode writeback without --uuid" "$CTL" create w "$CACHE" "$ORIGIN" --mode writeback
	run 2 "create --mode: unknown mode" "$CTL" create w "$CACHE" "$ORIGIN" --mode fast
	run 0 "create --mode writeback --uuid" "$CTL" create w "$CACHE" "$ORIGIN" --uuid "$U" --mode writeback
	eq "table: origin_uuid and cache_mode" \
		"0 262144 bcache $dir/disk/by-dm-bcache/$U $dir/disk/by-uuid/1111-2222 4 origin_uuid $U cache_mode writeback" \
		"$(cat "$STATE/dev.w")"
	rm "$STATE/dev.w"
	ln -s "$ORIGIN" "$dir/disk/by-id/ata-SLOW_DISK_1"
	ln -s "$ORIGIN" "$dir/disk/by-id/wwn-0x5000c500a1b2c3d4"
	run 0 "create --uuid new: by-id, wwn first" "$CTL" create n "$CACHE" "$ORIGIN" --uuid new
	new=$(sed -n 's/.* origin_uuid //p' "$STATE/dev.n")
	eq "table: wwn name" "0 262144 bcache $dir/disk/by-dm-bcache/$U $dir/disk/by-id/wwn-0x5000c500a1b2c3d4 2 origin_uuid $new" \
		"$(cat "$STATE/dev.n")"
	if [[ $new =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]; then
		ok "generated uuid is v4: $new"
	else
		bad "generated uuid '$new'"
	fi
	has "the generated uuid is printed with advice" "origin_uuid $new is .* pass '--uuid $new'"

	echo "0 262144 linear $ORIGIN 0" >"$STATE/dev.lin"
	run 0 "list" "$CTL" list
	eq "list: the bcache devices only" "c n p" "$(tr '\n' ' ' <"$dir/out" | sed 's/ $//')"

	run 0 "status" "$CTL" status c
	eq "status: 36 fields, the tunables count and 9 tunables" 46 "$(wc -l <"$dir/out")"
	has "status: version first" "^version 2$"
	has "status: buckets" "^buckets 35/127$"
	has "status: read_hits" "^read_hits 8870$"
	has "status: mode" "^mode writethrough$"
	has "status: origin_uuid" "^origin_uuid 2b9be873-3089-4682-8949-dd66c3372222$"
	has "status: invalidations" "^invalidations 0$"
	has "status: rewritten" "^rewritten 0$"
	has "status: deferred" "^deferred 5$"
	has "status: nodes_evicted" "^nodes_evicted 12$"
	has "status: nodes_read_nolock" "^nodes_read_nolock 4$"
	has "status: compacted_nolock" "^compacted_nolock 6$"
	has "status: inserts_shared" "^inserts_shared 731$"
	has "status: csum_errors" "^csum_errors 2$"
	has "status: format, the last fixed field" "^format 3$"
	has "status: tunables" "^tunables 9$"
	has "status: the last tunable" "^verify_csums 1$"
	has "status: a tunable" "^cache_priority_rescale 1048576$"
	eq "status: field order" "version block_size bucket_size buckets read_hits" \
		"$(head -n 5 "$dir/out" | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"
	run 0 "status FIELD" "$CTL" status c hit_ratio
	eq "status FIELD: the value alone" 79 "$(cat "$dir/out")"
	run 0 "status TUNABLE" "$CTL" status c sequential_cutoff
	eq "status TUNABLE: the value" 4194304 "$(cat "$dir/out")"
	run 1 "status: unknown field" "$CTL" status c nosuch
	has "unknown field: lists the fields" "no status field 'nosuch' \(fields: version"
	run 1 "status of a linear device" "$CTL" status lin
	has "linear: refused" "'lin' is not a dm-bcache device"
	run 1 "status of a missing device" "$CTL" status nosuch
	has "missing: named" "no device-mapper device named 'nosuch'"

	: >"$STATE/messages"
	run 0 "set a tunable" "$CTL" set c sequential_cutoff 8388608
	run 1 "set: unknown tunable" "$CTL" set c bogus 1
	has "unknown tunable: lists them" "unknown tunable 'bogus' \(tunables: sequential_cutoff cache_priority_initial"
	run 1 "set: not a number" "$CTL" set c sequential_cutoff 4M
	run 1 "set: the kernel refuses" "$CTL" set c sequential_cutoff 999999999
	run 2 "set: missing value" "$CTL" set c sequential_cutoff
	run 0 "invalidate" "$CTL" invalidate c
	run 0 "gc" "$CTL" gc c
	run 0 "flush" "$CTL" flush c
	run 0 "mode" "$CTL" mode c writethrough
	run 2 "mode: missing mode" "$CTL" mode c
	run 1 "invalidate a linear device" "$CTL" invalidate lin
	eq "messages sent" "c 0 sequential_cutoff 8388608|c 0 sequential_cutoff 999999999|c 0 invalidate|c 0 gc|c 0 flush|c 0 cache_mode writethrough" \
		"$(paste -sd'|' "$STATE/messages")"

	run 1 "remove a linear device" "$CTL" remove lin
	run 0 "remove" "$CTL" remove c
	has "remove: says so" "^removed c$"
	run 1 "remove again" "$CTL" remove c
	"$CTL" remove n >/dev/null && "$CTL" remove p >/dev/null && rm "$STATE/dev.lin"
	run 0 "list, none left" "$CTL" list
	eq "list: empty" "" "$(cat "$dir/out")"
fi

# --- metrics ----------------------------------------------------------------
# promcheck FILE: the Prometheus text exposition rules, strictly; prints
# what is wrong, and the number of samples last.
promcheck() {
	awk '
	function err(m) { printf "line %d: %s: %s\n", NR, m, $0; bad++ }
	function close_fam(f) { if (f != "" && !nsamp[f]) err("family " f " has no sample") }
	/^# HELP / {
		if (!($3 ~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/)) err("bad name")
		if (help[$3]++) err("second HELP of " $3)
		if (nsamp[$3]) err("HELP after a sample of " $3)
		if (NF < 4) err("empty HELP")
		if ($3 != cur) { if (done[$3]) err($3 " again after other families"); close_fam(cur); done[cur] = 1; cur = $3 }
		next
	}
	/^# TYPE / {
		if (NF != 4 || $4 !~ /^(counter|gauge)$/) err("bad TYPE")
		if (type[$3]) err("second TYPE of " $3)
		type[$3] = $4
		if (nsamp[$3]) err("TYPE after a sample of " $3)
		if ($4 == "counter" && $3 !~ /_total$/) err("counter not named _total")
		if ($4 == "gauge" && $3 ~ /_total$/) err("gauge named _total")
		if ($3 != cur) { if (done[$3]) err($3 " again after other families"); close_fam(cur); done[cur] = 1; cur = $3 }
		next
	}
	/^#/ || /^$/ { err("not a HELP, TYPE or sample line"); next }
	{
		lv = "\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
		pair = "[a-zA-Z_][a-zA-Z0-9_]*=" lv
		if ($0 !~ ("^[a-zA-Z_:][a-zA-Z0-9_:]*\\{" pair "(," pair ")*\\} [^ ]+$")) { err("not name{labels} value"); next }
		name = $0; sub(/\{.*/, "", name)
		series = $0; sub(/ [^ ]+$/, "", series)
		v = $0; sub(/.* /, "", v)
		if (v !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) err("value not numeric")
		if (name !~ /^dm_bcache_/) err("not dm_bcache_")
		if (!help[name] || !type[name]) err("sample before the HELP and TYPE of " name)
		if (type[name] == "counter" && v < 0) err("negative counter")
		if (series !~ /[{,]device="/) err("no device label")
		if (seen[series]++) err("duplicate series")
		if (name != cur) err("sample of " name " within family " cur)
		nsamp[name]++; n++
	}
	END { close_fam(cur); print n + 0 " samples"; exit bad > 0 }' "$1"
}
# metrics RC DESC: run "bcachectl metrics", stdout in $dir/out, stderr in
# $dir/err; the exit status must be RC and the output pass promcheck.
metrics() {
	local rc
	"$CTL" metrics >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ "$rc" -eq "$1" ]; then ok "$2 (exit $rc)"; else
		bad "$2: exit $rc, expected $1"
		sed 's/^/     | /' "$dir/err"
	fi
	if promcheck "$dir/out" >"$dir/check"; then
		ok "$2: the output passes the strict checker ($(tail -n 1 "$dir/check"))"
	else
		bad "$2: the output fails the strict checker:"
		sed 's/^/     | /' "$dir/check"
	fi
}
# The checker itself: a good text passes, each broken one fails.
G='# HELP dm_bcache_a_total A.
# TYPE dm_bcache_a_total counter
dm_bcache_a_total{device="x",s="q\"\\\n"} 1
# HELP dm_bcache_b B.
# TYPE dm_bcache_b gauge
dm_bcache_b{device="x"} 2.5e3'
echo "$G" >"$dir/prom"
if promcheck "$dir/prom" >/dev/null; then ok "promcheck: a good text passes"; else bad "promcheck rejects a good text"; fi
while IFS='|' read -r why from to; do
	echo "$G" | sed "$from" >"$dir/prom"
	[ -n "$to" ] && echo "$to" >>"$dir/prom"
	if promcheck "$dir/prom" >/dev/null; then bad "promcheck: passes $why"; else ok "promcheck: fails $why"; fi
done <<'EOF'
a sample before its HELP and TYPE|1,2d
a second TYPE|$s/$/\n# TYPE dm_bcache_b gauge/
a family split|$s/$/\ndm_bcache_a_total{device="y"} 1/
a counter not named _total|s/a_total/a/g
a gauge named _total|s/dm_bcache_b/dm_bcache_b_total/g
a value that is not a number|s/} 1$/} one/
a sample without labels|s/{device="x"}//
a duplicate series|$s/$/\ndm_bcache_b{device="x"} 3/
a bad escape in a label|s/q\\"/q\\t/
a family without samples|$s/$/\n# HELP dm_bcache_c C.\n# TYPE dm_bcache_c gauge/
a blank line|1s/^/\n/
another prefix|s/dm_bcache_b/node_b/g
EOF

sample() { # NAME{LABELS}: its value
	S=$1 awk '{ s = ENVIRON["S"] } index($0, s " ") == 1 { print substr($0, length(s) + 2) }' "$dir/out"
}

rm -f "$STATE"/dev.* "$STATE"/status.*
metrics 0 "metrics, no devices"
eq "metrics, no devices: no output" "" "$(cat "$dir/out" "$dir/err")"
echo "0 262144 linear /dev/sdz 0" >"$STATE/dev.lin"
metrics 0 "metrics, only a linear device"
eq "metrics, only a linear device: no output" "" "$(cat "$dir/out" "$dir/err")"

# Two devices: "data", the fixed status line; "home", on another cache,
# writeback with dirty data, its cache set degraded. Their tables as the
# kernel prints them, devices by major:minor.
echo "0 262144 bcache 254:0 254:16 2 origin_uuid 2b9be873-3089-4682-8949-dd66c3372222" >"$STATE/dev.data"
echo "0 524288 bcache 254:48 254:32 4 origin_uuid 7d1c4e0a-5b2f-4c3d-9e8f-a1b2c3d4e5f6 cache_mode writeback" >"$STATE/dev.home"
echo "0 524288 bcache 2 8 1024 37/255 120 30 4 250 0 2048 writeback 0" \
	"7d1c4e0a-5b2f-4c3d-9e8f-a1b2c3d4e5f6 degraded 2 9 1 80 3000 1 2 12" \
	"57 210/4096 5 640 0 0 9 0 0 3 1 95 0 3 9" \
	"sequential_cutoff 4194304 cache_priority_initial 8192 cache_priority_hit 32" \
	"cache_priority_seek 512 cache_priority_rescale 1048576" \
	"writeback_percent 10 writeback_running 1 rewrite_fragmented 1" \
	"verify_csums 1" >"$STATE/status.home"
metrics 0 "metrics, two devices"
eq "metrics: nothing on stderr" "" "$(cat "$dir/err")"
L='device="data",origin_uuid="2b9be873-3089-4682-8949-dd66c3372222",cache="254:0"'
H='device="home",origin_uuid="7d1c4e0a-5b2f-4c3d-9e8f-a1b2c3d4e5f6",cache="254:48"'
eq "metrics: read hits" 8870 "$(sample "dm_bcache_read_hits_total{$L}")"
eq "metrics: write misses" 250 "$(sample "dm_bcache_write_misses_total{$H}")"
eq "metrics: filled, bytes" $((34528 * 512)) "$(sample "dm_bcache_filled_bytes_total{$L}")"
eq "metrics: written back, bytes" $((640 * 512)) "$(sample "dm_bcache_written_back_bytes_total{$H}")"
eq "metrics: dirty, bytes" $((2048 * 512)) "$(sample "dm_bcache_dirty_bytes{$H}")"
eq "metrics: csum errors" 2 "$(sample "dm_bcache_csum_errors_total{$L}")"
eq "metrics: buckets used" 37 "$(sample "dm_bcache_buckets_used{$H}")"
eq "metrics: gc runs" 1 "$(sample "dm_bcache_gc_runs_total{$H}")"
eq "metrics: btree nodes" 9 "$(sample "dm_bcache_btree_nodes{$H}")"
eq "metrics: buckets capacity" 255 "$(sample "dm_bcache_buckets_capacity{$H}")"
eq "metrics: journal used, bytes" $((96 * 512)) "$(sample "dm_bcache_journal_used_bytes{$L}")"
eq "metrics: journal size, bytes" $((4096 * 512)) "$(sample "dm_bcache_journal_size_bytes{$L}")"
eq "metrics: format version" 3 "$(sample "dm_bcache_format_version{$L}")"
eq "metrics: state, one series per value" "0 1 0" \
	"$(for v in ok degraded failed; do sample "dm_bcache_state{$H,state=\"$v\"}"; done | paste -sd' ')"
eq "metrics: mode, one series per value" "1 0 0 0" \
	"$(for v in writethrough writeback writearound none; do sample "dm_bcache_mode{$L,mode=\"$v\"}"; done | paste -sd' ')"
eq "metrics: every family, in order" "read_hits_total read_misses_total write_hits_total write_misses_total bypassed_total filled_bytes_total written_back_bytes_total retries_total cache_errors_total csum_errors_total invalidations_total checkpoints_total gc_runs_total dirty_bytes buckets_used buckets_capacity journal_used_bytes journal_size_bytes btree_depth btree_nodes format_version state mode" \
	"$(sed -n 's/^# TYPE dm_bcache_\([^ ]*\) .*/\1/p' "$dir/out" | paste -sd' ')"
eq "metrics: 2 devices x (21 + 3 + 4) series" 56 "$(grep -vc '^#' "$dir/out")"
eq "metrics: the linear device is not there" 0 "$(grep -c 'device="lin"' "$dir/out")"

# The admin guide's example is this output, abridged: its lines are lines
# of the output, in order; "..." stands for lines left out.
insequence() { # EXAMPLE FILE: prints the first line of EXAMPLE not found
	awk 'NR == FNR { if ($0 != "...") want[++n] = $0; next }
		i < n && $0 == want[i + 1] { i++ }
		END { if (i < n) { print want[i + 1]; exit 1 } }' <(echo "$1") "$2"
}
DOC=$DMB_TOP/Documentation/dm-bcache.rst
for f in "$DOC"; do
	doc=$(awk '$0 == ".. begin metrics example" { on = 1; next }
		$0 == ".. end metrics example" { on = 0 }
		on && /^   [^ ]/ && !/^   # bcachectl / { sub(/^   /, ""); print }' "$f" 2>/dev/null)
	[ -n "$doc" ] || continue
	if miss=$(insequence "$doc" "$dir/out"); then
		ok "${f#"$DMB_TOP"/}: the example is the output ($(echo "$doc" | grep -cvx '\.\.\.') lines of it)"
	else
		bad "${f#"$DMB_TOP"/}: the example's line is not in the output (or out of order): $miss"
	fi
	break
done
[ -n "$doc" ] || echo "note: no '.. begin metrics example' in the guide: the example is not checked"

# A device whose status does not parse: skipped, with a message, exit 1.
echo "0 262144 bcache /dev/vda /dev/sdx" >"$STATE/dev.bad"
echo "0 262144 bcache 2 8 1024 35/127 lots 2335" >"$STATE/status.bad"
echo "0 262144 bcache /dev/vda /dev/sdw" >"$STATE/dev.new"
echo "0 262144 bcache 3 8 1024 35/127 1 2 3 4 5 6 writethrough 0 x ok" >"$STATE/status.new"
metrics 1 "metrics, two devices that do not parse"
has_err() {
	if grep -Eq -- "$2" "$dir/err"; then ok "$1"; else
		bad "$1: no /$2/ on stderr"
		sed 's/^/     | /' "$dir/err"
	fi
}
has_err "unparsable: named, with the reason" "^bcachectl: metrics: bad skipped: the status line has 6 fields, expected 36$"
has_err "another status version: named" "^bcachectl: metrics: new skipped: status format version 3, this tool knows 2$"
eq "unparsable: not in the output" 0 "$(grep -Ec 'device="(bad|new)"' "$dir/out")"
eq "unparsable: the others are" 56 "$(grep -vc '^#' "$dir/out")"
echo "0 262144 bcache 2 8 1024 35/127 8870 x 1024 0 1846 0 writethrough 0" \
	"2b9be873-3089-4682-8949-dd66c3372222 ok 1 1 0 79 34528 0 0 0" \
	"42 96/4096 3 0 0 5 17 12 4 9 6 731 2 3 9" >"$STATE/status.bad"
echo "0 262144 bcache 2 8 1024 35/127 8870 1 1024 0 1846 0 writethrough 0" \
	"2b9be873-3089-4682-8949-dd66c3372222 fine 1 1 0 79 34528 0 0 0" \
	"42 96/4096 3 0 0 5 17 12 4 9 6 731 2 3 9" >"$STATE/status.new"
metrics 1 "metrics, a field that is not a number, an unknown state"
has_err "not a number: named" "^bcachectl: metrics: bad skipped: read_misses is \"x\", not a number$"
has_err "unknown state: named" "^bcachectl: metrics: new skipped: unknown state \"fine\"$"
rm -f "$STATE"/dev.bad "$STATE"/status.bad "$STATE"/dev.new "$STATE"/status.new

# Two bcache targets in one device: a start label tells them apart. A
# quote and a backslash in a name are escaped.
printf '0 100 bcache 254:0 254:80\n100 100 bcache 254:0 254:96\n' >"$STATE/dev.two"
{ dmsetup status data | sed 's/^0 262144 /0 100 /'; dmsetup status data | sed 's/^0 262144 /100 100 /'; } >"$STATE/status.two"
cp "$STATE/dev.data" "$STATE/dev.q\"u\\ote"
metrics 0 "metrics, a device of two targets, a quote in a name"
eq "two targets: a series each" "8870 8870" \
	"$(for t in 0 100; do sample "dm_bcache_read_hits_total{${L/data/two},start=\"$t\"}"; done | paste -sd' ')"
eq "a quote and a backslash in a name: escaped" 8870 \
	"$(sample 'dm_bcache_read_hits_total{device="q\"u\\ote",origin_uuid="2b9be873-3089-4682-8949-dd66c3372222",cache="254:0"}')"
rm -f "$STATE"/dev.* "$STATE"/status.*
run 2 "metrics: no arguments" "$CTL" metrics data

if command -v shellcheck >/dev/null 2>&1; then
	run 0 "shellcheck -s sh" shellcheck -s sh "$CTL"
fi
if command -v busybox >/dev/null 2>&1; then
	run 0 "busybox sh parses it" busybox sh -n "$CTL"
fi

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
