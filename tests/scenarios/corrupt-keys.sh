# Metadata with valid checksums that breaks the on-disk rules: a leaf key
# of an index node pointing into a journal bucket (the rule replay applies
# to journal keys, bcache_ondisk.h), the same key made one no index key
# can be (it does not unpack), and a UUID slot whose epoch is out of
# range. The first two must cost the index (logged, every origin
# invalidated, reads equal the origin), the last must refuse the cache; bcache-check
# must say the same. Never an oops.
# disks: cache=32M origin=64M pristine=32M
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
pristine=$(disk pristine)
A=eeeeeeee-ffff-4fff-8fff-ffffffffffff

# crc32c (standard, as bcache_ondisk.h) of LEN bytes at OFF of FILE
crc32c_of() {
	od -An -v -tu1 -j "$2" -N "$3" "$1" | awk '
	BEGIN {
		for (i = 0; i < 256; i++) {
			c = i
			for (j = 0; j < 8; j++)
				c = and(c, 1) ? xor(rshift(c, 1), 2197175160) : rshift(c, 1)
			t[i] = c
		}
		crc = 4294967295
	}
	{ for (i = 1; i <= NF; i++) crc = xor(t[and(xor(crc, $i), 255)], rshift(crc, 8)) }
	END { printf "%.0f\n", xor(crc, 4294967295) }'
}

get_le() { # FILE OFF N: the N-byte little-endian value at OFF
	od -An -v -tu1 -j "$2" -N "$3" "$1" |
		awk '{ for (i = NF; i >= 1; i--) v = v * 256 + $i } END { printf "%.0f\n", v }'
}

put_le() { # FILE OFF N VALUE
	local i=0 v=$4 s=
	while [ $i -lt "$3" ]; do
		s="$s$(printf '\\%03o' $((v & 255)))"
		v=$((v >> 8))
		i=$((i + 1))
	done
	printf "$s" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

sb_csum() { # FILE: reseal the superblock (crc32c of bytes 4..4095)
	put_le "$1" 4096 4 "$(crc32c_of "$1" 4100 4092)"
}

dmb_load
check "format, 64k buckets" make-bcache -q -b 64k "$cache"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k --size=64M \
	--verify=crc32c --do_verify=0 --output=/tmp/p
check "create" dmb_create c "$cache" "$origin" origin_uuid $A
check "warm 4 MiB" dmb_read /dev/mapper/c 0 4
check "clean close" dmb_remove c
check "keep a pristine copy" dd if="$cache" of="$pristine" bs=1M conv=fsync

show=$(bcache-super-show -u "$cache")
field() { echo "$show" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
bucket=$(( $(field bucket_size | cut -d' ' -f1) ))
jfirst=$(field sb.journal_first)
epoch=$(field slot.0.epoch)
leaf=$(bcache-dump --btree "$cache" | awk '$1 == "node" && $2 == 0 { print $3; exit }')
info "bucket $bucket bytes, journal from bucket $jfirst, a leaf in bucket $leaf, epoch $epoch"
check "a leaf node found" test -n "$leaf"

# 1. The first key of the leaf's first set that has keys (the first may
# be the empty root the open wrote) made to point at the start of the
# journal (gen 0, as make-bcache left it), the set's checksum redone. A
# set is a 32-byte header (nkeys at byte 16) and keys, padded to a block:
# in version 3, 48-byte keys (ptr[0] at byte 16 holds member, gen and
# sector; flags at byte 40); in version 2, 32-byte keys (ptr at 16, gen
# at 24, flags at 25).
block=$(( $(field block_size | cut -d' ' -f1) ))
if [ "$(field sb.version)" = 2 ]; then kb=32 flags_at=25; else kb=48 flags_at=40; fi
base=$((leaf * bucket))
nkeys=$(get_le "$cache" $((base + 16)) 4)
while [ "$nkeys" -eq 0 ]; do
	base=$((base + block))
	nkeys=$(get_le "$cache" $((base + 16)) 4)
done
info "a set of $nkeys keys at byte $base"
check "the set's checksum is what this script computes" test \
	"$(get_le "$cache" "$base" 4)" = "$(crc32c_of "$cache" $((base + 4)) $((28 + kb * nkeys)))"
key=$((base + 32))
kend=$(get_le "$cache" $((key + 8)) 8)
ksize=$(get_le "$cache" $((key + 4)) 4)
put_le "$cache" $((key + 16)) 8 $((jfirst * bucket / 512))	# v3: gen 0, member 0
[ "$kb" = 32 ] && put_le "$cache" $((key + 24)) 1 0
put_le "$cache" $((key + flags_at)) 1 0
put_le "$cache" "$base" 4 "$(crc32c_of "$cache" $((base + 4)) $((28 + kb * nkeys)))"
sync
info "key of sectors $((kend - ksize))-$kend now at cache sector $((jfirst * bucket / 512))"
check_fails "bcache-check flags the key" bcache-check "$cache"
check "bcache-check says why" sh -c \
	"bcache-check '$cache' | grep -q 'leaf key .* points into a journal bucket'"
check "attached" dmb_create c "$cache" "$origin" origin_uuid $A
check "the key refused with a log line" dmesg_has "leaf key (inode .*, end $kend, .*) points into a journal bucket"
check "the index dropped" dmesg_has "cannot load the index (-117): cached data invalidated"
check "the key's sectors read as the origin's" sh -c \
	"cmp -n $((kend * 512)) /dev/mapper/c '$origin'"
check "every read equals the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "the slot's data invalidated (epoch bumped)" test "$(bcache-super-show -u "$cache" |
	awk -F'\t' '$1 == "slot.0.epoch" { print $2 }')" -gt "$epoch"
check "then consistent" bcache-check "$cache"

# 2. The same key made one that no index key can be, the set's checksum
# redone: in version 3, three pointers (nptrs, byte 41, at most 2); in
# version 2, a pointer past the 48 bits of a sector. The set unpacks to
# nothing: the node, and so the index, cannot be loaded (-EUCLEAN), as in 1.
check "back to the pristine copy" dd if="$pristine" of="$cache" bs=1M conv=fsync
dmesg -c >/dev/null	# case 1's lines
if [ "$kb" = 32 ]; then
	put_le "$cache" $((key + 16)) 8 $((1 << 56))
else
	put_le "$cache" $((key + 41)) 1 3
fi
put_le "$cache" "$base" 4 "$(crc32c_of "$cache" $((base + 4)) $((28 + kb * nkeys)))"
sync
check_fails "bcache-check flags the set" bcache-check "$cache"
check "bcache-check says why" sh -c \
	"bcache-check '$cache' | grep -q 'node in bucket $leaf: set [0-9]* holds a key no index key can be'"
check "attached" dmb_create c "$cache" "$origin" origin_uuid $A
check "the set refused with a log line" dmesg_has "node in bucket $leaf: set [0-9]* holds a key no index key can be"
check "the index dropped" dmesg_has "cannot load the index (-117): cached data invalidated"
check "every read equals the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "then consistent" bcache-check "$cache"

# 3. Slot 0's epoch 2^24 above its own, in the current UUID table copy:
# shifted into a key inode it would alias the slot's real epoch.
check "back to the pristine copy" dd if="$pristine" of="$cache" bs=1M conv=fsync
ucur=$(field uuid.current)
uoff=$(( $(field uuid.offset | cut -d' ' -f$((ucur + 1))) * 512 ))
usize=$(( $(field uuid.sectors) * 512 ))
put_le "$cache" $((uoff + 72)) 4 $((epoch + 16777216))
put_le "$cache" $((4096 + 204)) 4 "$(crc32c_of "$cache" "$uoff" "$usize")"
sb_csum "$cache"
sync
check "bcache-super-show reads it" sh -c \
	"bcache-super-show -u '$cache' | grep -q '^slot.0.epoch	$((epoch + 16777216))$'"
check_fails "bcache-check flags the epoch" bcache-check "$cache"
check "bcache-check says why" sh -c \
	"bcache-check '$cache' | grep -q 'UUID slot 0: epoch $((epoch + 16777216)) is out of range'"
check_fails "the cache refused" dmb_create c "$cache" "$origin" origin_uuid $A
dmsetup remove c 2>/dev/null
check "refused with a message" dmesg_has "device-mapper: table:.*UUID table.*epoch"
