#!/bin/bash
# Host: bcachectl against a fake dmsetup (no kernel, no root needed): the
# table lines it builds, stable names, status parsing, errors. The real
# thing runs in QEMU: tests/scenarios/tools-bcachectl.sh.
set -u
CTL=${DMB_TOP:?}/dmsetup-tables/bcachectl
dir=$(mktemp -d /tmp/tools-bcachectl.XXXXXX)
trap 'rm -rf "$dir"' EXIT
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

mkdir -p "$dir/bin" "$dir/state" "$dir/disk"
export STATE=$dir/state
# dmsetup: devices are files STATE/NAME holding their table; messages and
# kernel log lines are appended to STATE/messages and STATE/dmesg.
cat >"$dir/bin/dmsetup" <<'EOF'
#!/bin/bash
S=$STATE
case $1 in
info) [ -f "$S/dev.$2" ] ;;
table) [ -f "$S/dev.$2" ] && cat "$S/dev.$2" ;;
status)
	[ -f "$S/dev.$2" ] || exit 1
	if grep -q ' bcache ' "$S/dev.$2"; then
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

if command -v shellcheck >/dev/null 2>&1; then
	run 0 "shellcheck -s sh" shellcheck -s sh "$CTL"
fi
if command -v busybox >/dev/null 2>&1; then
	run 0 "busybox sh parses it" busybox sh -n "$CTL"
fi

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
