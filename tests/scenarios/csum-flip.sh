# Cached data changed on the cache device behind the module's back (a bit
# flipped in a data bucket, written straight to the disk) is caught by its
# checksum (format version 3, issue #14): a read of clean data returns the
# origin's bytes, counts csum_errors, logs it, and drops the key; so does
# a read of a part of a key (its whole range read and verified); a read of
# dirty data fails with EIO, never with the origin's older bytes, and
# writeback will not copy it; verify_csums 0 reads without checking; a
# check that fails in the reader's pages is confirmed in the module's own
# before anything is counted. A
# version 2 cache has no checksums: the scenario says so and stops.
# disks: cache=64M origin=64M
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
A=f11bf11b-0000-4f1b-8f1b-f11bf11bf11b
KiB=1024

dmb_load
check "format" make-bcache -q "$cache"
version=$(bcache-super-show -u "$cache" | awk -F'\t' '$1 == "sb.version" { print $2 }')
if [ "$version" = 2 ]; then
	info "format version 2: no data checksums, nothing to test"
	exit 0
fi
bsz=$(bcache-super-show -u "$cache" | awk -F'\t' '$1 == "bucket_size" { print $2 }' | cut -d' ' -f1)
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=1M --size=64M \
	--verify=crc32c --do_verify=0 --output=/tmp/p
check "create" dmb_create c "$cache" "$origin" origin_uuid $A
check "no bypass" dmsetup message c 0 sequential_cutoff 0

# rd OFF_KIB LEN_KIB [DEV]: O_DIRECT read into /tmp/rd
rd() {
	dd if="${3:-/dev/mapper/c}" of=/tmp/rd bs=${2}k skip=$(($1 / $2)) count=1 \
		iflag=direct 2>/tmp/rd.err
}
# same OFF_KIB LEN_KIB: the target reads what the origin holds
same() {
	rd "$1" "$2" && cp /tmp/rd /tmp/rd.c && rd "$1" "$2" "$origin" && cmp -s /tmp/rd.c /tmp/rd
}
# where OFF_KIB: the byte on the cache device holding that origin byte,
# from the index as a checkpoint wrote it
where() {
	dmsetup message c 0 checkpoint || return 1
	bcache-dump --btree "$cache" | awk -v s=$(($1 * 2)) -v bsz="$bsz" '
		$1 == "key" && $3 <= s && s < $4 && $8 == "live" {
			split($5, l, "+"); printf "%d\n", l[1] * bsz + (l[2] + s - $3) * 512; exit }'
}
# flip BYTE: change one byte of the cache device, around the module
flip() {
	local blk=$(($1 / 4096))
	dd if="$cache" of=/tmp/blk bs=4096 skip=$blk count=1 iflag=direct 2>/dev/null &&
	b=$(od -An -tu1 -j $(($1 % 4096)) -N 1 /tmp/blk | tr -d ' ') &&
	printf "$(printf '\\%03o' $((b ^ 1)))" |
		dd of=/tmp/blk bs=1 seek=$(($1 % 4096)) conv=notrunc 2>/dev/null &&
	dd if=/tmp/blk of="$cache" bs=4096 seek=$blk count=1 oflag=direct conv=notrunc 2>/dev/null
}
errs() { dmb_stat c csum_errors; }

check_eq "status: format 3" 3 "$(dmb_stat c format)"
check_eq "status: verify_csums 1" 1 "$(dmsetup status c | sed -n 's/.* verify_csums \([01]\).*/\1/p')"
# Clean data: 64 KiB keys (filled by 64 KiB reads) over the first 4 MiB.
check "fill 4 MiB in 64k reads" fio --name=f --filename=/dev/mapper/c --rw=read --bs=64k \
	--size=4M --direct=1 --output=/tmp/f
check "hits" same 0 64

# 0. A check that fails in the reader's pages (fail_csum_every: as if the
# reader had changed them under the read) is confirmed by a second read
# into the module's own memory, which matches: the right bytes are
# returned and nothing is counted, for a lone hit and gathered pieces.
P=/sys/module/dm_bcache/parameters
e0=$(errs)
echo 1 >$P/fail_csum_every
check "a whole-key read, its check failing" same 0 64
check "a read gathered from 4 keys, every check failing" same 256 256
# Many at once: 4 readers of 1 MiB (16 keys each, every one read again),
# more second reads than their pool holds buffers, all waiting their turn.
check "4 readers of 1 MiB at once, every check failing" fio --name=v \
	--filename=/dev/mapper/c --rw=read --bs=1M --size=4M --direct=1 \
	--ioengine=libaio --iodepth=4 --numjobs=4 --loops=2 \
	--verify=crc32c --verify_only --output=/tmp/v
echo 0 >$P/fail_csum_every
check_eq "nothing counted" "$e0" "$(errs)"

# caught DESC AT_KIB FLIP READ_KIB READ_LEN AGAIN_KIB AGAIN_LEN RANGE: one
# byte changed FLIP bytes past the cached copy of origin KiB AT_KIB; a read
# of READ_LEN KiB at READ_KIB returns the origin's bytes, is counted once
# and logged with its checksummed range (origin sectors RANGE+128); then a
# read of AGAIN_LEN KiB at AGAIN_KIB counts nothing more (dropped)
caught() {
	local at e0
	at=$(where "$2")
	check "$1: the key located" test -n "$at"
	check "$1: a byte of it changed" flip $((at + $3))
	e0=$(errs)
	check "$1: read, the origin's bytes" same "$4" "$5"
	check_eq "$1: counted" $((e0 + 1)) "$(errs)"
	check "$1: logged with the range" \
		dmesg_has "checksum error: slot 0 sectors $8+128 member 0 bucket"
	check "$1: read again, the origin's bytes" same "$6" "$7"
	check_eq "$1: not counted again, dropped" $((e0 + 1)) "$(errs)"
}

# 1. A whole key read: the bio's own pages verified.
caught "whole key" 128 100 128 64 128 64 256
# 2. A part of a key: the whole 64 KiB range read and verified; the
# range's other parts are dropped with it.
caught "part of a key" 512 $((60 * KiB)) 516 4 560 16 1024
# 2b. A read gathered from 4 keys, the second of them bad.
caught "gathered, second key" $((2 * KiB + 64)) 5 $((2 * KiB)) 256 $((2 * KiB)) 256 4224

# 3. verify_csums 0: nothing is checked (the flipped byte is read).
at=$(where 1024)
check "flip a byte of the key of 1 MiB" flip $((at + 10))
check "verify_csums 0" dmsetup message c 0 verify_csums 0
e0=$(errs)
check_fails "unverified, the changed byte is read" same 1024 64
check_eq "nothing counted" "$e0" "$(errs)"
check "verify_csums 1" dmsetup message c 0 verify_csums 1
check "verified again: the origin's bytes" same 1024 64
check_eq "counted" $((e0 + 1)) "$(errs)"

# 4. Dirty data has no other copy: a read of it fails, never with the
# origin's older bytes, and writeback will not copy it to the origin.
check "writeback" dmsetup message c 0 cache_mode writeback
check "held" dmsetup message c 0 writeback_running 0
check "dirty writes at 8 MiB" fio --name=w --filename=/dev/mapper/c --rw=write --bs=64k \
	--offset=8M --size=1M --direct=1 --buffer_pattern=0xd1 --output=/tmp/w
check "dirty" test "$(dmb_stat c dirty)" -gt 0
at=$(where $((8 * KiB + 64)))
rd $((8 * KiB + 64)) 64 "$origin" && cp /tmp/rd /tmp/rd.origin
check "flip a byte of a dirty key" flip $((at + 7))
e0=$(errs)
check_fails "a read of it fails" rd $((8 * KiB + 64)) 64
check "with EIO" grep -q "Input/output error" /tmp/rd.err
check_eq "counted" $((e0 + 1)) "$(errs)"
check_fails "a 4k read of a part of it fails too" rd $((8 * KiB + 96)) 4
check_fails "a 256k read gathered over it fails too" rd $((8 * KiB)) 256
check "its neighbours read" rd $((8 * KiB)) 64
check_fails "flush: writeback refuses to copy it" dmsetup message c 0 flush
check "logged" dmesg_has "writeback of slot 0 failed: -74"
check "still dirty" test "$(dmb_stat c dirty)" -gt 0
check "the origin kept its older bytes" sh -c \
	"dd if='$origin' bs=64k skip=$((8 * 16 + 1)) count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/rd.origin"
check "overwritten" fio --name=o --filename=/dev/mapper/c --rw=write --bs=64k \
	--offset=$((8 * 1024 + 64))k --size=64k --direct=1 --buffer_pattern=0xd2 --output=/tmp/o
new_data() { rd $((8 * KiB + 64)) 64 && od -An -tx1 -N 2 /tmp/rd | grep -q 'd2 d2'; }
check "reads the new data" new_data
check "flush now" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"

# 5. Writeback of dirty keys that are parts of their range (a later write
# cut the first in two): each part's whole range is read and verified.
check "held again" dmsetup message c 0 writeback_running 0
check "a dirty 64k write at 12 MiB" fio --name=w --filename=/dev/mapper/c --rw=write --bs=64k \
	--offset=12M --size=64k --direct=1 --buffer_pattern=0xd3 --output=/tmp/w
check "16k of its middle rewritten" fio --name=w --filename=/dev/mapper/c --rw=write --bs=16k \
	--offset=$((12 * 1024 + 16))k --size=16k --direct=1 --buffer_pattern=0xd4 --output=/tmp/w
at=$(where $((12 * KiB + 48)))
check "flip a byte of the cut key's back part" flip $((at + 3))
e0=$(errs)
check_fails "flush: writeback refuses the parts" dmsetup message c 0 flush
check "counted" test "$(errs)" -gt "$e0"
check "logged with the whole range" dmesg_has "checksum error: slot 0 sectors 24576+128 member 0 bucket"
check "the rewritten middle reads" rd $((12 * KiB + 16)) 16
check "the 64k overwritten" fio --name=w --filename=/dev/mapper/c --rw=write --bs=64k \
	--offset=12M --size=64k --direct=1 --buffer_pattern=0xd5 --output=/tmp/w
check "flush now" dmsetup message c 0 flush
check_eq "nothing dirty" 0 "$(dmb_stat c dirty)"
check "remove" dmb_remove c
check "bcache-check --data: the flipped clean keys were dropped" bcache-check --data "$cache"
