# A reread is a hit; data read from the cache is the origin's; partial
# hits split correctly; status counters move as documented.
# disks: cache=64M origin=128M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format" make-bcache -q "$cache"
check "origin gets a pattern" fio --name=p --filename="$origin" --rw=write \
	--bs=64k --size=128M --verify=pattern --verify_pattern=0x5a5a1234 \
	--do_verify=0 --output=/tmp/p
check "origin: random data at 40M" dd if=/dev/urandom of="$origin" bs=64k seek=640 count=16 \
	oflag=direct
check "create" dmb_create c "$cache" "$origin"

# 4k random reads of 8 MiB, twice: the second pass hits.
rd() { fio --name=r --filename=/dev/mapper/c --rw=randread --bs=4k \
	--offset="$1" --size="$2" --randrepeat=1 --direct=1 --output=/tmp/r; }
check "first pass" rd 0 8M
m1=$(dmb_stat c read_misses); h1=$(dmb_stat c read_hits)
check "first pass missed" test "$m1" -gt 0
sleep 1
check "second pass" rd 0 8M
h2=$(dmb_stat c read_hits); m2=$(dmb_stat c read_misses)
info "hits $h1 -> $h2, misses $m1 -> $m2"
check "second pass hit (>= 90% of 2048 reads)" test $((h2 - h1)) -ge 1843
check "hit ratio reported" test "$(dmb_stat c hit_ratio)" -gt 0
check "filled sectors reported" test "$(dmb_stat c filled_sectors)" -ge 16384

# Partial hits: a 64k read over cached and uncached 4k blocks.
check "cache every other 4k block of 1 MiB at 16M" sh -c '
	i=0; while [ $i -lt 256 ]; do
		dd if=/dev/mapper/c of=/dev/null bs=4k skip=$((4096 + i)) count=1 iflag=direct 2>/dev/null
		i=$((i + 2)); done'
sleep 1
check "1 MiB at 16M equals the origin (64k reads)" sh -c "
	dd if=/dev/mapper/c bs=64k skip=256 count=16 iflag=direct 2>/dev/null | md5sum >/tmp/a
	dd if=$origin bs=64k skip=256 count=16 iflag=direct 2>/dev/null | md5sum >/tmp/b
	cmp /tmp/a /tmp/b"
check "whole device equals the origin" dmb_same /dev/mapper/c "$origin"

# A read over many cached keys is served in one pass: 1 MiB cached by
# 256 4k reads (in random order: no sequential bypass), read back with
# one 1 MiB read, counts a hit per pass through dm, not one per key.
check "cache 1 MiB at 32M in 4k pieces" fio --name=k --filename=/dev/mapper/c \
	--rw=randread --bs=4k --offset=32M --size=1M --direct=1 --output=/tmp/k
sleep 1
h1=$(dmb_stat c read_hits); r1=$(dmb_stat c retries)
check "1 MiB at 32M equals the origin (one 1 MiB read)" sh -c "
	dd if=/dev/mapper/c bs=1M skip=32 count=1 iflag=direct 2>/dev/null | md5sum >/tmp/a
	dd if=$origin bs=1M skip=32 count=1 iflag=direct 2>/dev/null | md5sum >/tmp/b
	cmp /tmp/a /tmp/b"
h2=$(dmb_stat c read_hits)
info "1 MiB over 256 keys: $((h2 - h1)) hits, retries $r1 -> $(dmb_stat c retries)"
check "served in at most 4 passes (256 without gathering)" \
	test $((h2 - h1)) -ge 1 -a $((h2 - h1)) -le 4

# A read served in many pieces is rewritten as one extent: the next read
# of the range takes a cache read per bucket it spans (format 3: per key
# of 64 KiB), not one per piece.
# (Random data: a misplaced block shows. fio: busybox dd's buffer is not
# aligned for O_DIRECT, and a buffered read is split by read-ahead.)
# bios, not requests: the virtio disk's queue merges pieces adjacent on it
cache_reads() { awk '{ print $1 + $2 }' "/sys/block/${cache#/dev/}/stat"; }
read1m() { fio --name=m --filename=/dev/mapper/c --rw=read --bs=1M \
	--offset="${1:-40}M" --size=1M --direct=1 --output=/tmp/m; }
cache4k() { fio --name=k --filename=/dev/mapper/c --rw=randread --bs=4k \
	--offset="$1M" --size=1M --direct=1 --output=/tmp/k; }
same40() { blockdev --flushbufs /dev/mapper/c && sh -c "
	dd if=/dev/mapper/c bs=64k skip=640 count=16 2>/dev/null | md5sum >/tmp/a
	dd if=$origin bs=64k skip=640 count=16 iflag=direct 2>/dev/null | md5sum >/tmp/b
	cmp /tmp/a /tmp/b"; }
check "cache 1 MiB of random data at 40M in 4k pieces" cache4k 40
sleep 1
c1=$(cache_reads); w1=$(dmb_stat c rewritten)
check "one 1 MiB read" read1m
c2=$(cache_reads)
info "1 MiB over 256 keys: $((c2 - c1)) cache reads"
check "served by >= 200 cache reads (one a key)" test $((c2 - c1)) -ge 200
sleep 1
check_eq "rewritten: the 2048 sectors" $((w1 + 2048)) "$(dmb_stat c rewritten)"
check "the 1 MiB still equals the origin" same40
c2=$(cache_reads)
check "the same 1 MiB read again" read1m
c3=$(cache_reads)
info "1 MiB rewritten: $((c3 - c2)) cache reads"
# A cache read per bucket the extent spans; in format 3, whose keys hold
# at most 64 KiB (one checksum each), one per key: 16 keys of 64 KiB.
max=4
[ "$(bcache-super-show -u "$cache" | awk -F'\t' '$1 == "sb.version" { print $2 }')" = 3 ] &&
	max=$((16 + 4))
check "now served by at most $max cache reads" test $((c3 - c2)) -le $max
check_eq "not rewritten again" $((w1 + 2048)) "$(dmb_stat c rewritten)"
check "reread equals the origin" same40

# The tunable: off, the same kind of read is left in its pieces; on
# again, the next read rewrites it.
check "rewrite_fragmented 0" dmsetup message c 0 rewrite_fragmented 0
check_eq "... shown by status" 0 "$(dmb_tunable c rewrite_fragmented)"
check "cache 1 MiB at 48M in 4k pieces" cache4k 48
sleep 1
w2=$(dmb_stat c rewritten)
check "a 1 MiB read at 48M" read1m 48
sleep 1
check_eq "off: not rewritten" "$w2" "$(dmb_stat c rewritten)"
check "rewrite_fragmented 1" dmsetup message c 0 rewrite_fragmented 1
check "the 1 MiB read at 48M again" read1m 48
sleep 1
check_eq "on: rewritten" $((w2 + 2048)) "$(dmb_stat c rewritten)"
check_fails "rewrite_fragmented 2 is refused" dmsetup message c 0 rewrite_fragmented 2

# Writes: overwrite cached data, read the new data back.
check "overwrite 4 MiB of the cached range" fio --name=o --filename=/dev/mapper/c \
	--rw=randwrite --bs=4k --size=4M --verify=crc32c --direct=1 --output=/tmp/o
check "write hits counted" test "$(dmb_stat c write_hits)" -gt 0
check "reread of overwritten range verifies" fio --name=o --filename=/dev/mapper/c \
	--rw=randwrite --bs=4k --size=4M --verify=crc32c --verify_only=1 \
	--direct=1 --output=/tmp/o2
check "whole device still equals the origin" dmb_same /dev/mapper/c "$origin"
info "status: $(dmsetup status c)"
info "table: $(dmsetup table c)"
check "remove" dmb_remove c
