#!/bin/bash
# Host: dmb-replay-log on synthetic dm-log-writes logs (built here with
# perl, independently of the tool): listing, flush points, marks, replays
# up to an entry or a mark, in one go or in steps, and the logs and
# requests it must refuse.
set -u
bin=${BUILD:-build}/tools/dmb-replay-log
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# t_ok DESC CMD...: CMD must succeed; t_fails DESC CODE CMD...: must exit CODE
t_ok() { local d=$1; shift; if "$@" >"$t/out" 2>"$t/err"; then ok "$d"; else bad "$d (exit $?: $(head -c 300 "$t/err"))"; fi; }
t_fails() {
	local d=$1 want=$2 rc; shift 2
	"$@" >"$t/out" 2>"$t/err"; rc=$?
	if [ "$rc" = "$want" ]; then ok "$d (exit $rc: $(head -n 1 "$t/err"))"; else bad "$d (exit $rc, want $want)"; fi
}
[ -x "$bin" ] || { echo "FAIL $bin is not built (make tools)"; exit 1; }

# mklog OUT NR_ENTRIES SECTORSIZE MAGIC ENTRY...  where ENTRY is
# SECTOR:NR:FLAGS:FILLCHAR[:MARK] (FILLCHAR '-' = no data, e.g. a discard)
mklog() {
	perl -e '
		my ($out, $nr, $ss, $magic, @ents) = @ARGV;
		open(my $f, ">", $out) or die;
		binmode $f;
		my $super = pack("Q<Q<Q<L<", hex($magic), 1, $nr, $ss);
		print $f $super . ("\0" x ($ss - length($super)));
		for my $e (@ents) {
			my ($sec, $n, $flags, $ch, $mark) = split(/:/, $e, 5);
			$mark //= "";
			my $h = pack("Q<Q<Q<Q<", $sec, $n, $flags, length($mark)) . $mark;
			print $f $h . ("\0" x ($ss - length($h)));
			print $f ($ch x ($n * $ss)) if $ch ne "-";
		}' "$@"
}
FLUSH=1 FUA=2 DISCARD=4 MARK=8
M=6a736677736872
# 0: 2 sectors of A at 8, 1: B at 0, 2: flush, 3: mark one, 4: FUA C at 9,
# 5: discard 16..19, 6: mark two, 7: D at 20, 8: flush+FUA with data E at 21,
# then an entry past nr_entries (Z at 0) that must never be replayed.
ENTRIES=(8:2:0:A 0:1:0:B "0:0:$FLUSH:-" "0:0:$MARK:-:one" "9:1:$FUA:C"
	"16:4:$DISCARD:-" "0:0:$MARK:-:two" 20:1:0:D "21:1:$((FLUSH | FUA)):E" 0:1:0:Z)
mklog "$t/log" 9 512 $M "${ENTRIES[@]}"

cat >"$t/list.want" <<EOF
# $t/log: 9 entries, sector size 512
# index	sector	sectors	flags	mark
0	8	2	-
1	0	1	-
2	0	0	FLUSH
3	0	0	MARK	one
4	9	1	FUA
5	16	4	DISCARD
6	0	0	MARK	two
7	20	1	-
8	21	1	FLUSH,FUA
EOF
t_ok "list" "$bin" list "$t/log"
if cmp -s "$t/out" "$t/list.want"; then ok "list output"; else bad "list output"; diff "$t/list.want" "$t/out"; fi
t_ok "list -p" "$bin" list -p "$t/log"
if [ "$(grep -v '^#' "$t/out" | cut -f1 | tr '\n' ' ')" = "2 3 4 6 8 " ]; then ok "list -p shows only FLUSH/FUA/MARK"; else bad "list -p: $(cat "$t/out")"; fi
t_ok "points" "$bin" points "$t/log"
if [ "$(tr '\n' ' ' <"$t/out")" = "2 3 4 6 8 " ]; then ok "points are 2 3 4 6 8"; else bad "points: $(tr '\n' ' ' <"$t/out")"; fi
t_ok "find two" "$bin" find "$t/log" two
if [ "$(cat "$t/out")" = 6 ]; then ok "mark two is entry 6"; else bad "mark two: $(cat "$t/out")"; fi

# The expected images, 32 sectors of 0xee first, built without the tool.
# img OUT CHANGE...   CHANGE is SECTOR:NR:CHAR ('0' = zeros)
img() {
	perl -e '
		my ($out, @ch) = @ARGV;
		my $d = "\xee" x (32 * 512);
		for (@ch) { my ($s, $n, $c) = split /:/;
			substr($d, $s * 512, $n * 512) = ($c eq "0" ? "\0" : $c) x ($n * 512); }
		open(my $f, ">", $out) or die; binmode $f; print $f $d;' "$@"
}
img "$t/base"
img "$t/want3" 8:2:A 0:1:B
img "$t/want6" 8:2:A 0:1:B 9:1:C 16:4:0
img "$t/wantall" 8:2:A 0:1:B 9:1:C 16:4:0 20:1:D 21:1:E
replay_cmp() { # DESC WANT REPLAY-ARGS...
	local d=$1 want=$2; shift 2
	cp "$t/base" "$t/dev"
	if "$bin" replay "$@" "$t/log" "$t/dev" 2>"$t/err" && cmp -s "$t/dev" "$want"; then
		ok "$d"
	else
		bad "$d ($(head -n 1 "$t/err"); $(cmp "$t/dev" "$want" 2>&1))"
	fi
}
replay_cmp "replay up to entry 3" "$t/want3" -e 3
replay_cmp "replay up to mark one (entry 3)" "$t/want3" -m one
replay_cmp "replay up to mark two (FUA write, discard zeroed)" "$t/want6" -m two
replay_cmp "replay all (not the entry past nr_entries)" "$t/wantall" -a
cp "$t/base" "$t/dev"
if "$bin" replay -e 2 "$t/log" "$t/dev" 2>/dev/null &&
	"$bin" replay -s 3 -e 5 "$t/log" "$t/dev" 2>/dev/null &&
	"$bin" replay -s 6 -m two "$t/log" "$t/dev" 2>/dev/null && cmp -s "$t/dev" "$t/want6"; then
	ok "replay in steps (-s) equals one replay"
else
	bad "replay in steps (-s) equals one replay"
fi
cp "$t/base" "$t/dev"
"$bin" replay -e 0 "$t/log" "$t/dev" 2>/dev/null
if cmp -s "$t/dev" <(perl -e 'my $d = "\xee" x (32*512); substr($d, 8*512, 1024) = "A" x 1024; print $d'); then
	ok "replay of entry 0 only"
else
	bad "replay of entry 0 only"
fi
# The verification really compares: a wrong expectation must not pass.
cp "$t/base" "$t/dev"
"$bin" replay -m one "$t/log" "$t/dev" 2>/dev/null
if cmp -s "$t/dev" "$t/want6"; then bad "a replay to mark one differs from mark two's image"; else ok "a replay to mark one differs from mark two's image"; fi

# What must fail, and leave the target alone.
cp "$t/base" "$t/dev"
t_fails "unknown mark" 1 "$bin" replay -m three "$t/log" "$t/dev"
if cmp -s "$t/dev" "$t/base"; then ok "target untouched after an unknown mark"; else bad "target untouched after an unknown mark"; fi
t_fails "entry past the end" 1 "$bin" replay -e 9 "$t/log" "$t/dev"
t_fails "find an unknown mark" 1 "$bin" find "$t/log" nosuch
t_fails "first after last" 1 "$bin" replay -s 5 -e 3 "$t/log" "$t/dev"
truncate -s 4096 "$t/small"
t_fails "target too small" 1 "$bin" replay -a "$t/log" "$t/small"
t_fails "two end points" 2 "$bin" replay -e 3 -m two "$t/log" "$t/dev"
t_fails "no end point" 2 "$bin" replay "$t/log" "$t/dev"
t_fails "unknown command" 2 "$bin" frobnicate "$t/log"
mklog "$t/badmagic" 9 512 6a736677736873 "${ENTRIES[@]}"
t_fails "bad magic" 1 "$bin" list "$t/badmagic"
mklog "$t/badss" 9 1000 $M "${ENTRIES[@]}"
t_fails "bad sector size" 1 "$bin" list "$t/badss"
head -c $((512 * 8)) "$t/log" >"$t/trunc" # ends after entry 3
t_fails "truncated log" 1 "$bin" list "$t/trunc"
cp "$t/base" "$t/dev"
t_fails "replay of a truncated log" 1 "$bin" replay -a "$t/trunc" "$t/dev"
if cmp -s "$t/dev" "$t/base"; then ok "target untouched by a truncated log"; else bad "target untouched by a truncated log"; fi
head -c $((512 * 9 + 100)) "$t/log" >"$t/trunc2" # inside entry 4's data
t_fails "entry data past the end" 1 "$bin" points "$t/trunc2"
mklog "$t/badflags" 1 512 $M 0:1:64:A
t_fails "unknown flags" 1 "$bin" list "$t/badflags"
mklog "$t/more" 12 512 $M "${ENTRIES[@]}"
t_fails "nr_entries past the log" 1 "$bin" points "$t/more"

# 4 KiB sectors: offsets and lengths scale with the log's sector size.
mklog "$t/log4k" 3 4096 $M 1:1:0:X 0:0:$FLUSH:- 0:0:$MARK:-:m
truncate -s 16384 "$t/dev4k"
"$bin" replay -m m "$t/log4k" "$t/dev4k" 2>/dev/null
if cmp -s "$t/dev4k" <(perl -e 'print "\0" x 4096, "X" x 4096, "\0" x 8192'); then
	ok "4 KiB sector log"
else
	bad "4 KiB sector log"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
