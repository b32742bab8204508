#!/bin/bash
# dm-bcache benchmark rig: dm-bcache side by side with the raw cache device,
# the raw origin, mainline bcache, dm-cache (smq) and dm-writecache, all in
# ONE QEMU guest boot (TCG), on identical devices, one contender after
# another, each set up fresh. Prints ratios; asserts nothing.
#
#   make bench            (or bench/run.sh)
#   bench/run.sh --report only redo the report from the last run's results
#
# Environment (all optional):
#   BENCH_CASES=brd-hdd,brd-fast,shm-fast   cases to run, in order:
#       brd-hdd   cache: brd ramdisk; origin: dm-delay (BENCH_DELAY_MS) over a
#                 virtio disk: zipf from cold, random writes, 90/10, the scan
#       brd-fast  cache: brd; origin: the same, no delay: the hit-path and
#                 sequential jobs (cached data: the origin's speed does not
#                 matter), CPU per IO, the metadata memory
#       shm-fast  cache: a virtio disk on a file in /dev/shm; origin as
#                 brd-fast: hit path and cached sequential read
#       scale     dm-bcache only: caches of BENCH_SCALE_GB on a sparse virtio
#                 disk, filled with 4k extents: metadata memory, open,
#                 checkpoint and GC times, hit latency during checkpoints
#                 (bench/guest/scale.sh; not in the default cases)
#   BENCH_CONTENDERS=raw-cache,raw-origin,dm-linear,dm-bcache,bcache,dm-cache,dm-writecache
#                         contenders to run, in order (a subset for a quick look;
#                         also dm-bcache-nocsum, verify_csums 0, and dm-bcache-v2,
#                         format 2: what checking data checksums costs;
#                         keep raw-cache: every ratio is to it)
#   BENCH_JOBS=hit,seq1m  only these jobs of each case (default: all)
#   BENCH_PROFILE=1       also profile the 4k hit path (brd-fast) with perf
#                         in the guest (the host's perf is copied in); the
#                         reports land in guest/bench/raw/*.profile.*.txt
#   BENCH_DELAY_MS=8      origin read and write delay of the *-hdd cases
#   BENCH_REPS=3          repetitions of every measured job (median reported)
#   BENCH_RT=3            seconds per repetition
#   BENCH_ZIPF_RT=15      seconds of the zipf-from-cold run
#   BENCH_CACHE_MB=128    cache size
#   BENCH_SCALE_GB=1,4    cache sizes of the scale case, GiB (the sparse
#                         disk under $BUILD/bench takes up to the largest)
#   BENCH_SCALE_LAT_RT=10 seconds of each latency run of the scale case
#   BENCH_SCALE_FORMATS=3 on-disk format versions of the scale case's caches
#                         (2,3: each size in both, side by side; its rows
#                         are then named 4v2, 4v3, ...)
#   BENCH_NODE_CACHE_MB=  dm-bcache's node_cache_mb in the scale case (the
#                         index's memory budget; default: the module's)
#   BENCH_SCALE_CACHE_DELAY_MS=0  the scale case's cache device behind
#                         dm-delay (reads and writes): a slower cache, where
#                         what waits for a node read shows
#   BENCH_SMP=2 BENCH_MEM=4G BENCH_TIMEOUT=2400   the guest
#   V=1                   stream the whole console (default: progress lines)
#
# Output in $BUILD/bench/: report.md, *.png (gnuplot), results.txt (raw
# numbers), console.log, guest/ (the guest's fio outputs and dmesg).
set -uo pipefail
{ # read whole: editing this file mid-run is safe
# shellcheck source=vm/env.sh
. "$(dirname "$0")/../vm/env.sh"
TOP=$DMB_TOP
OUT=$BUILD/bench
V=${V:-0}
CASES=${BENCH_CASES:-brd-hdd,brd-fast,shm-fast}
CONTENDERS=${BENCH_CONTENDERS:-raw-cache,raw-origin,dm-linear,dm-bcache,bcache,dm-cache,dm-writecache}
DELAY=${BENCH_DELAY_MS:-8}
REPS=${BENCH_REPS:-3}
RT=${BENCH_RT:-3}
ZRT=${BENCH_ZIPF_RT:-15}
CACHE_MB=${BENCH_CACHE_MB:-128}
SMP=${BENCH_SMP:-2}
MEM=${BENCH_MEM:-4G}
TIMEOUT=${BENCH_TIMEOUT:-2400}
JOBS=${BENCH_JOBS:-}
PROFILE=${BENCH_PROFILE:-0}
SCALE_GB=${BENCH_SCALE_GB:-1,4}
SCALE_LAT_RT=${BENCH_SCALE_LAT_RT:-10}
SCALE_FORMATS=${BENCH_SCALE_FORMATS:-3}
NODE_CACHE_MB=${BENCH_NODE_CACHE_MB:-}
SCALE_CACHE_DELAY=${BENCH_SCALE_CACHE_DELAY_MS:-0}
ORIGIN_MB=1024

die() { echo "bench/run.sh: error: $*" >&2; exit 2; }
for v in DELAY REPS RT ZRT CACHE_MB SMP TIMEOUT SCALE_LAT_RT SCALE_CACHE_DELAY; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v} is not a number"
done
[[ $CASES =~ ^[a-z,-]+$ ]] || die "bad BENCH_CASES=$CASES"
[[ $CONTENDERS =~ ^[a-z0-9,-]+$ ]] || die "bad BENCH_CONTENDERS=$CONTENDERS"
[[ $JOBS =~ ^[a-z0-9,-]*$ ]] || die "bad BENCH_JOBS=$JOBS"
[[ $PROFILE =~ ^[01]$ ]] || die "BENCH_PROFILE must be 0 or 1"
[[ $SCALE_GB =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad BENCH_SCALE_GB=$SCALE_GB"
[[ $SCALE_FORMATS =~ ^[23](,[23])?$ ]] || die "bad BENCH_SCALE_FORMATS=$SCALE_FORMATS"
[[ $NODE_CACHE_MB =~ ^(-1|[0-9]*)$ ]] || die "bad BENCH_NODE_CACHE_MB=$NODE_CACHE_MB"
# the scale case's disk holds its largest cache; the origin 80% of that
SCALE_MAX=$(tr ',' '\n' <<<"$SCALE_GB" | sort -n | tail -n 1)
[[ ,$CASES, == *,scale,* ]] || SCALE_MAX=1
ORIGIN_MB=$((SCALE_MAX * 1024 > ORIGIN_MB ? SCALE_MAX * 1024 : ORIGIN_MB))
if [ "$PROFILE" = 1 ]; then
	command -v perf >/dev/null || die "BENCH_PROFILE=1 needs perf on the host (apt-get install linux-perf)"
	[ -z "$JOBS" ] || JOBS+=,profile
fi
if [ "$CACHE_MB" -lt 96 ] || [ "$CACHE_MB" -gt 192 ]; then
	die "BENCH_CACHE_MB must be 96..192 (the working sets and the 2x scan are laid out for it)"
fi

if [ "${1:-}" = --report ]; then
	exec "$TOP/bench/report.sh" "$OUT"
elif [ -n "${1:-}" ]; then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
fi

# --- build: the harness's kernel and initramfs, plus the bench script ------
[ -f "$KROOT/boot/vmlinuz-$KVER" ] || die "no guest kernel in $KROOT: run 'make deps'"
make -s -C "$TOP" all >/dev/null || die "make all failed"
img=$BUILD/initramfs.cpio.gz
stale=
[ -f "$img" ] || stale=1
for f in "$TOP/dm-bcache/dm-bcache.ko" "$TOP/vm/mkinitramfs.sh" "$TOP"/bcache-tools/*; do
	[ -f "$f" ] && [ -f "$img" ] && [ "$f" -nt "$img" ] && stale=1
done
if [ -n "$stale" ]; then
	"$TOP/vm/mkinitramfs.sh" || die "vm/mkinitramfs.sh failed"
fi
command -v gnuplot >/dev/null || echo "bench/run.sh: warning: no gnuplot: no plots" >&2

mkdir -p "$OUT"
rm -rf "$OUT/guest" "$OUT"/*.png "$OUT/report.md" "$OUT/results.txt"
# The guest's initrd: the base image, then (as tests/run does) an overlay
# with /init, tests/guest, the static test tools and /tests/bench.
INITRD=$OUT/.initrd-$$.cpio
SHMIMG=/dev/shm/dmb-bench-cache-$$.img
SHMREF=/dev/shm/dmb-bench-ref-$$.img
SCALEIMG=$OUT/.scale-$$.img
ov=$OUT/.overlay-$$
QPID=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ -n "$QPID" ] && kill "$QPID" 2>/dev/null
	rm -rf "$INITRD" "$SHMIMG" "$SHMREF" "$SCALEIMG" "$ov"
}
trap cleanup EXIT
trap 'echo "bench/run.sh: interrupted" >&2; exit 130' INT TERM
mkdir -p "$ov/tests/bench"
cp -r "$TOP/tests/guest" "$ov/tests/guest"
cp "$TOP/tests/guest/init" "$ov/init"
chmod 0755 "$ov/init"
cp "$TOP"/bench/guest/*.sh "$ov/tests/bench/"
if [ -d "$BUILD/tools" ]; then
	mkdir -p "$ov/usr/local/bin"
	cp "$BUILD"/tools/* "$ov/usr/local/bin/"
fi
if [ "$PROFILE" = 1 ]; then
	# perf and every library it links (the overlay wins over the base image)
	perf=$(readlink -f "$(command -v perf)")
	for f in "$perf" $(ldd "$perf" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		d=$f
		[ "${f#/lib/}" = "$f" ] || d=/usr$f # the image's /lib is a link to usr/lib
		mkdir -p "$ov$(dirname "$d")"
		cp -L "$f" "$ov$d"
	done
	mkdir -p "$ov/usr/bin"
	[ "$perf" = /usr/bin/perf ] || ln -sf "$perf" "$ov/usr/bin/perf"
fi
{
	zcat "$img"
	(cd "$ov" && find . -print0 | LC_ALL=C sort -z |
		cpio --null --create --format=newc --owner=0:0 --quiet)
} >"$INITRD" || die "building $INITRD failed"
rm -rf "$ov"

# --- disks: origin (a file under $BUILD), the shm cache, the results -------
rm -f "$OUT/origin.img" "$OUT/results.img"
truncate -s "${ORIGIN_MB}M" "$OUT/origin.img"
truncate -s 256M "$OUT/results.img"
truncate -s "${CACHE_MB}M" "$SHMIMG" "$SHMREF" || die "cannot create $SHMIMG"
truncate -s "${SCALE_MAX}G" "$SCALEIMG" || die "cannot create $SCALEIMG"

kernel=$BUILD/vmlinux-$KVER
if [ ! -s "$kernel" ] || [ "$kernel" -ot "$KROOT/boot/vmlinuz-$KVER" ]; then
	kernel=$KROOT/boot/vmlinuz-$KVER
fi
QEMU=(qemu-system-x86_64 -accel tcg -cpu max -m "$MEM" -smp "$SMP"
	-nographic -no-reboot -nic none -kernel "$kernel" -initrd "$INITRD")
i=0
for d in "origin:$OUT/origin.img" "shmcache:$SHMIMG" "shmref:$SHMREF" "results:$OUT/results.img" \
	"scale:$SCALEIMG"; do
	QEMU+=(-drive "file=${d#*:},if=none,id=d$i,format=raw,cache=writeback,discard=unmap"
		-device "virtio-blk-pci,drive=d$i,serial=${d%%:*}")
	i=$((i + 1))
done
# tsc=reliable: TCG's vCPUs' TSCs are not in step, so the guest would fall
# back to the HPET, and every clock read (the block layer takes one for
# each bio it submits, fio several per IO) would be an MMIO exit costing
# as much as a small IO: dm's extra submit would be charged ~10% for
# what costs nothing on real hardware, where the TSC is the clocksource.
append="console=ttyS0 panic=-1 oops=panic printk.devkmsg=on mitigations=off tsc=reliable"
[[ $kernel == *vmlinuz* ]] && append+=" edd=off"
append+=" dmb.test=${BENCH_GUEST_SCRIPT:-bench} dmb.suite=bench dmb.boot=1 dmb.boots=1"
append+=" dmb.disks=origin,shmcache,shmref,results,scale dmb.timeout=$TIMEOUT"
append+=" bench.cases=$CASES bench.delay=$DELAY bench.reps=$REPS bench.rt=$RT"
append+=" bench.zrt=$ZRT bench.cache_mb=$CACHE_MB bench.contenders=$CONTENDERS"
append+=" bench.profile=$PROFILE${JOBS:+ bench.jobs=$JOBS}"
append+=" bench.scale_gb=$SCALE_GB bench.scale_lat_rt=$SCALE_LAT_RT"
append+=" bench.scale_formats=$SCALE_FORMATS"
append+=" bench.scale_cache_delay=$SCALE_CACHE_DELAY"
append+="${NODE_CACHE_MB:+ bench.node_cache_mb=$NODE_CACHE_MB}"
QEMU+=(-append "$append")
printf '%q ' "${QEMU[@]}" >"$OUT/qemu.cmd"
echo >>"$OUT/qemu.cmd"

# --- run the guest ----------------------------------------------------------
echo "bench/run.sh: one guest ($SMP CPUs, $MEM, TCG), cases $CASES; console: $OUT/console.log"
start=$EPOCHREALTIME
: >"$OUT/console.log"
timeout -k 5 "$TIMEOUT" "${QEMU[@]}" </dev/null >"$OUT/console.log" 2>"$OUT/qemu.err" &
QPID=$!
if [ "$V" = 1 ]; then
	tail -n +1 -f --pid="$QPID" "$OUT/console.log" &
else
	tail -n +1 -f --pid="$QPID" "$OUT/console.log" |
		grep --line-buffered -a -E '@@BENCH|@@CHECK FAIL|@@BOOT-DONE|Kernel panic|BUG:|WARNING:' |
		sed -u 's/\r$//; s/^\[[ 0-9.]*\] //; s/^@@BENCH //' &
fi
wait "$QPID"
rc=$?
QPID=
wait
secs=$(echo "$EPOCHREALTIME - $start" | bc)
printf 'bench/run.sh: guest ended after %.0fs (exit %d)\n' "$secs" "$rc"
tr -d '\r' <"$OUT/console.log" >"$OUT/.console"
mv "$OUT/.console" "$OUT/console.log"
[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "bench/run.sh: the guest timed out after ${TIMEOUT}s: partial results" >&2
grep -aq '@@BOOT-DONE' "$OUT/console.log" || echo "bench/run.sh: warning: no @@BOOT-DONE in the console" >&2

mkdir -p "$OUT/guest"
if ! tar -xf "$OUT/results.img" -C "$OUT/guest" 2>/dev/null || [ ! -f "$OUT/guest/bench/results.txt" ]; then
	die "no results came back from the guest (see $OUT/console.log)"
fi
cp "$OUT/guest/bench/results.txt" "$OUT/results.txt"
rm -f "$OUT/origin.img" "$OUT/results.img"
{
	printf 'V guest_seconds %.0f\n' "$secs"
	echo "V bcache_tools $(dpkg-query -W -f='${Version}' bcache-tools 2>/dev/null || echo unknown) (Debian's, as make-bcache-mainline)"
	echo "V qemu $(qemu-system-x86_64 --version | head -n 1)"
	echo "V host $(nproc) CPUs, $(uname -r), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$OUT/results.txt"
"$TOP/bench/report.sh" "$OUT"
for f in "$OUT"/guest/bench/raw/*.profile.*.txt; do
	[ -f "$f" ] || continue
	echo "--- $f"
	sed -n '1,25p' "$f"
done
exit
}
