# Power cuts: 20 hard resets (sysrq-b, no sync) in the middle of a
# workload through a persistent slot. Each boot reloads the target over
# the cut cache, checks every block (device = origin in writethrough, and
# every write acknowledged by an fsync before the cut is there: the model
# of acknowledged writes is on a disk of its own, written with O_DIRECT
# and fdatasync after each batch; dmb-crashload), then starts the workload
# again and cuts the power after a random short time. Data read before a
# cut must be hit after it (needs the journal). Totals accumulate on the
# tally disk; the last boot checks them.
# Mode: DMB_CACHE_MODE (default writethrough; power-cut-writeback.sh).
# disks: cache=24M origin=16M model=32M tally=1M
# boots: 21
# timeout: 120
. /tests/guest/dmb.sh

MODE=${DMB_CACHE_MODE:-writethrough}
U=c2c2c2c2-c2c2-4c2c-8c2c-c2c2c2c2c2c2
REGION=16       # MiB: the whole origin, and it fits the cache
cache=$(disk cache)
origin=$(disk origin)
model=$(disk model)
tally=$(disk tally)
opts="origin_uuid $U"
[ "$MODE" = writethrough ] || opts="$opts cache_mode $MODE"
CUTS=$((BOOTS - 1))

# The tally: "cuts lost stale corrupt hitcuts hits", one line.
tally_read() { dd if="$tally" bs=512 count=1 iflag=direct 2>/dev/null | tr -d '\0' | head -n 1; }
tally_write() { printf '%s\n' "$*" | dd of="$tally" bs=512 count=1 conv=sync,fsync 2>/dev/null; }

dmb_load
if [ "$BOOT" = 1 ]; then
	check "format" make-bcache -q -b 64k "$cache"
	check "model of acknowledged writes" dmb-crashload init -m "$model" -s $REGION -S 11
	tally_write 0 0 0 0 0 0
	# shellcheck disable=SC2086 # $opts: several words
	if ! dmb_create c "$cache" "$origin" $opts 2>/tmp/create.err; then
		if [ "$MODE" != writethrough ] &&
			dmesg | tail -n 20 | grep -i "cache_mode\|$MODE" | grep -qi "not supported\|refused\|unknown"; then
			skip "the constructor refuses cache_mode $MODE: $(dmesg | grep -i "$MODE" | tail -n 1)"
		fi
		_dmb_show /tmp/create.err
		fail "create ($opts)"
		exit 0
	fi
	pass "create ($opts)"
else
	# shellcheck disable=SC2086
	check "the target loads after cut $((BOOT - 1))" dmb_create c "$cache" "$origin" $opts
	[ -b /dev/mapper/c ] || exit 0
	check "the cut was unclean" dmesg_has "not shut down cleanly"
	# Nothing is dropped: not even a crash amid our own writes to the
	# origin's first 4 KiB may look like a changed origin (fp-writing).
	check_fails "cut $((BOOT - 1)): the slot's data was kept" dmesg_has "cached data invalidated"
fi
dmsetup message c 0 sequential_cutoff 0

# Everything, right after the reload: the first reads of this boot.
if [ "$MODE" = writethrough ]; then
	out=$(dmb-crashload verify -d /dev/mapper/c -o "$origin" -m "$model" 2>/tmp/verify.err)
else
	out=$(dmb-crashload verify -d /dev/mapper/c -m "$model" 2>/tmp/verify.err)
fi
rc=$?
hits=$(dmb_stat c read_hits)
l=$(echo "$out" | sed -n 's/.* lost=\([0-9]*\).*/\1/p')
s=$(echo "$out" | sed -n 's/.* stale=\([0-9]*\).*/\1/p')
c=$(echo "$out" | sed -n 's/.* corrupt=\([0-9]*\).*/\1/p')
info "boot $BOOT: ${out:-verify printed nothing}; read_hits $hits"
if [ -z "$l" ] || [ -z "$s" ] || [ -z "$c" ]; then
	_dmb_show /tmp/verify.err
	fail "verify ran (exit $rc)"
	l=0 s=0 c=0
fi
if [ "$rc" != 0 ]; then
	_dmb_show /tmp/verify.err
fi
# shellcheck disable=SC2046 # the tally's fields
set -- $(tally_read)
if [ "$BOOT" -gt 1 ]; then
	h=0
	[ "$hits" -gt 0 ] && h=1
	set -- $(($1 + 1)) $(($2 + l)) $(($3 + s)) $(($4 + c)) $(($5 + h)) $(($6 + hits))
	tally_write "$@"
	check_eq "cut $((BOOT - 1)): no acknowledged write lost" 0 "$l"
	check_eq "cut $((BOOT - 1)): no stale read (device = origin)" 0 "$s"
	check_eq "cut $((BOOT - 1)): no corrupt block" 0 "$c"
fi

if [ "$BOOT" -lt "$BOOTS" ]; then
	dmb_workload "$model"
	t=$(awk -v s="$BOOT" 'BEGIN { srand(s * 7919); printf "%.2f", 0.1 + rand() * 1.4 }')
	sleep "$t"
	if kill -0 $pid 2>/dev/null; then
		pass "the workload is still running at the cut (no stale read in it)"
	else
		_dmb_show /tmp/run.log
		fail "the workload is still running at the cut (no stale read in it)"
	fi
	info "cut $BOOT after ${t}s more, at: $(tail -n 1 /tmp/run.log); used, hits, misses: $(dmsetup status c | cut -d' ' -f7-9)"
	crash_now
fi

# The last boot: the totals.
# shellcheck disable=SC2046
set -- $(tally_read)
info "TOTAL cuts $1, lost flushed writes $2, stale reads $3, corrupt blocks $4, cuts after which cached data was hit $5 (read hits $6)"
check_eq "cuts" "$CUTS" "$1"
check_eq "no acknowledged write lost over $1 cuts" 0 "$2"
check_eq "no stale read over $1 cuts" 0 "$3"
check_eq "no corrupt block over $1 cuts" 0 "$4"
# Needs the journal: until then every cut invalidates the cache.
check_eq "data read before each cut was hit after it (cuts with read hits)" "$1" "$5"
if [ "$MODE" = writethrough ]; then
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
else
	check "write back all dirty data (flush message)" dmsetup message c 0 flush
	check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
	check "the origin holds every acknowledged write" \
		dmb-crashload verify -d "$origin" -m "$model"
fi
check "clean remove" dmb_remove c
[ "$MODE" = writethrough ] || exit 0

# Self-check: the verification catches an acknowledged write that the
# origin lost (changed behind the closed cache; not its first 4 KiB).
b=$(dmb-crashload pick -m "$model")
check "self-check: block $b of the origin loses its write" \
	dd if=/dev/zero of="$origin" bs=4k seek="$b" count=1 oflag=direct conv=notrunc
# shellcheck disable=SC2086
check "self-check: create" dmb_create c "$cache" "$origin" $opts
dmb-crashload verify -d /dev/mapper/c -o "$origin" -m "$model" >/tmp/caught.out 2>&1
rc=$?
_dmb_show /tmp/caught.out
check "self-check: the verification reports the lost write (exit $rc)" \
	sh -c "[ $rc != 0 ] && grep -q ' lost=[1-9]' /tmp/caught.out"
check "self-check: remove" dmb_remove c
