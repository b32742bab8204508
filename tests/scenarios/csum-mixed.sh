# A deferred read over dirty data whose keys are parts of their
# checksummed ranges (format version 3, issue #14): with node_cache_mb=0
# the leaves are gone after a checkpoint, so a large read is deferred and
# served as pieces (bch_read_mixed()), which cannot be cut, so each dirty
# piece that is a part of its range reads that range through a bounce of
# its own, many in one bio. Every byte read must be the last one written,
# the origin's where nothing was. A version 2 cache has no checksums and
# no bounces: the same reads check the pieces alone.
# disks: cache=64M origin=64M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=3c3d3e3f-0000-4c3d-8e3f-3c3d3e3f4041
st() { dmb_stat c "$1"; }

check "modprobe dm-bcache node_cache_mb=0" modprobe dm-bcache node_cache_mb=0
# 64 KiB buckets: leaves of about 1300 keys, so this makes a tree.
check "format with 64 KiB buckets" make-bcache -q -b 64k "$cache"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=1M --size=64M \
	--buffer_pattern=0x0a1b2c3d --output=/tmp/p
# What the target must read: the origin, then every write made through it.
check "reference copy of the origin's first 24 MiB" \
	dd if="$origin" of=/tmp/ref bs=1M count=24 iflag=direct
check "create in writeback" dmb_create c "$cache" "$origin" origin_uuid $U \
	cache_mode writeback
check "no bypass" dmsetup message c 0 sequential_cutoff 0
check "writeback paused" dmsetup message c 0 writeback_running 0

# wr OFF_SECTORS LEN_SECTORS: random bytes written to the target and the
# reference alike
wr() {
	head -c $(($2 * 512)) /dev/urandom >/tmp/w &&
	dd if=/tmp/w of=/dev/mapper/c bs=512 seek="$1" count="$2" oflag=direct \
		conv=notrunc 2>/dev/null &&
	dd if=/tmp/w of=/tmp/ref bs=512 seek="$1" count="$2" conv=notrunc 2>/dev/null
}

# 64 KiB dirty writes over 16 of the 24 MiB (every third 64 KiB skipped:
# the origin's there), then 4 KiB ones inside them: each cuts a 64 KiB key
# into parts of its checksummed range.
n=0
for i in $(seq 0 383); do
	[ $((i % 3)) = 2 ] && continue
	wr $((i * 128)) 128 || n=$((n + 1))
done
check_eq "64 KiB dirty writes" 0 "$n"
n=0
for i in $(seq 0 999); do
	wr $(( ($(od -An -tu4 -N4 /dev/urandom) % (24 * 256)) * 8 )) 8 || n=$((n + 1))
done
check_eq "4 KiB writes over them" 0 "$n"
check "dirty" test "$(st dirty)" -gt 0

check "checkpoint: every leaf clean, then evicted" dmsetup message c 0 checkpoint
check "the tree has leaves under a root" test "$(st btree_depth)" -ge 2
d0=$(st deferred)
# 1 MiB reads, each over up to 16 cut keys of dirty data and origin gaps
n=0
for i in $(seq 0 23); do
	dd if=/dev/mapper/c of=/tmp/rd bs=1M skip=$i count=1 iflag=direct 2>/dev/null &&
	dd if=/tmp/ref of=/tmp/rr bs=1M skip=$i count=1 2>/dev/null &&
	cmp -s /tmp/rd /tmp/rr || { n=$((n + 1)); info "MiB $i differs"; }
done
check_eq "every 1 MiB read is the last data written, or the origin's" 0 "$n"
check "reads were deferred" test "$(st deferred)" -gt "$d0"
check_eq "no checksum error" 0 "$(st csum_errors)"
check_eq "no cache error" 0 "$(st cache_errors)"

check "writeback on, flushed" sh -c \
	"dmsetup message c 0 writeback_running 1 && dmsetup message c 0 flush"
check "remove" dmb_remove c
check "the origin holds it all" sh -c \
	"dd if='$origin' bs=1M count=24 iflag=direct 2>/dev/null | cmp -s - /tmp/ref"
