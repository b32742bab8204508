# Every bad table line or bad device is refused with a clear message in
# the kernel log, never an oops; a good table still works afterwards.
# disks: cache=64M origin=128M blank=64M small=8M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
blank=$(disk blank)
small=$(disk small)
dmb_load
check "format the cache" make-bcache -q "$cache"
len=$(blockdev --getsz "$origin")


dmb_refused "no arguments" "expected <cache dev>" "0 $len bcache"
dmb_refused "one argument" "expected <cache dev>" "0 $len bcache $cache"
dmb_refused "missing cache device" "cannot open the cache device" "0 $len bcache /dev/nonexistent $origin"
dmb_refused "missing origin device" "cannot open the origin device" "0 $len bcache $cache /dev/nonexistent"
dmb_refused "unformatted cache" "no dm-bcache superblock" "0 $len bcache $blank $origin"
dmb_refused "same device twice" "same device" "0 $len bcache $cache $cache"
dmb_refused "target longer than origin" "origin device is smaller" "0 $((len + 8)) bcache $cache $origin"
dmb_refused "unknown option" "unknown or incomplete optional argument" "0 $len bcache $cache $origin 1 frobnicate"
dmb_refused "option without value" "unknown or incomplete optional argument" "0 $len bcache $cache $origin 1 origin_uuid"
dmb_refused "bad uuid" "not a valid UUID" "0 $len bcache $cache $origin 2 origin_uuid not-a-uuid"
dmb_refused "null uuid" "null UUID" "0 $len bcache $cache $origin 2 origin_uuid 00000000-0000-0000-0000-000000000000"
dmb_refused "opt count too large" "optional arguments" "0 $len bcache $cache $origin 3 origin_uuid"
dmb_refused "extra arguments" "too many arguments" "0 $len bcache $cache $origin 0 extra"

# A superblock copied onto a smaller device: the device is not what it says.
check "copy superblock to a smaller device" dd if="$cache" of="$small" bs=1M count=8 conv=fsync
dmb_refused "cache smaller than its superblock" "smaller than its superblock says" "0 $len bcache $small $origin"

# Corruptions of a good superblock, one byte each.
check "copy the cache" dd if="$cache" of="$blank" bs=1M conv=fsync
printf 'X' | dd of="$blank" bs=1 seek=$((4096 + 200)) conv=notrunc,fsync 2>/dev/null
dmb_refused "flipped superblock byte" "checksum mismatch" "0 $len bcache $blank $origin"
# Bucket array copies at sectors 16 and 24 (8 sectors each, 128 buckets).
check "copy the cache again" dd if="$cache" of="$blank" bs=1M conv=fsync
printf 'Y' | dd of="$blank" bs=1 seek=$((8192 + 16)) conv=notrunc,fsync 2>/dev/null
printf 'Y' | dd of="$blank" bs=1 seek=$((12288 + 16)) conv=notrunc,fsync 2>/dev/null
dmb_refused "both bucket array copies corrupted" "bucket array checksum mismatch" "0 $len bcache $blank $origin"
check "copy the cache once more" dd if="$cache" of="$blank" bs=1M conv=fsync
printf 'Y' | dd of="$blank" bs=1 seek=$((8192 + 16)) conv=notrunc,fsync 2>/dev/null
dmesg -c >/dev/null
check "one bad bucket array copy: attaches from the other" dmb_create fb "$blank" "$origin"
check "using the other copy, logged" dmesg_has "using the other copy"
check "and it reads the origin" dmb_same /dev/mapper/fb "$origin"
check "remove it" dmb_remove fb
check "wipe the tiny device" dd if=/dev/zero of="$small" bs=1M count=8 conv=fsync
check "brd with a 4 KiB disk" modprobe brd rd_nr=1 rd_size=4
dmb_refused "cache smaller than a superblock" "too small to hold a superblock" "0 $len bcache /dev/ram0 $origin"

# A member of a set of two (format version 3) alone: the table must name
# both (set-two has the rest).
if make-bcache -q --wipe -b 64k "$blank" "$small" 2>/tmp/mk; then
	check_eq "blank is member 0 of the set" 0 \
		"$(bcache-super-show -u "$blank" | awk -F'\t' '$1 == "sb.dev_idx" { print $2 }')"
	dmb_refused "member 0 of a set of two alone" "must name every member" \
		"0 $len bcache $blank $origin"
	dmb_refused "member 1 alone" "names no member 0" \
		"0 $len bcache $small $origin"
else
	check "version 2: a set of several refused" grep -q "needs format version 3" /tmp/mk
fi

check "a good table works afterwards" dmb_create good "$cache" "$origin"
check "read through it" dd if=/dev/mapper/good of=/dev/null bs=64k count=16 iflag=direct
check "remove it" dmb_remove good
check "module unloads" rmmod dm_bcache
