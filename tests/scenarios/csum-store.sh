# Data checksums (format version 3, issue #14): every key that a read
# miss's fill, a writethrough write, a dirty write or a rewrite of pieces
# indexes carries the crc32c of its data, over at most 64 KiB, computed
# over the module's own copy. bcache-check --data reads every live key's
# range back: all must match, none may lack a checksum, and a byte changed
# in one key's data must be found. A version 2 cache (DMB_FORMAT_VERSION=2)
# has no checksums: the check must find none, and no key over 64 KiB then
# proves the bound is version 3's only.
# disks: cache=64M origin=128M
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
A=c5c5c5c5-0000-4c5c-8c5c-c5c5c5c5c5c5

# 6. Buckets of 1 MiB: a 1 MiB write or fill fills a bucket whole (a bio
# of 256 pages, none more). It reformats the cache: last.
big_buckets() {
	check "format, 1 MiB buckets" make-bcache -q --wipe -b 1M "$cache"
	check "create" dmb_create c "$cache" "$origin" origin_uuid $A
	check "no bypass" dmsetup message c 0 sequential_cutoff 0
	f0=$(dmb_stat c filled_sectors)
	check "1m writethrough writes, read back" dmb_io 0 8 write 1m-1m --verify=crc32c
	check "1m read misses" dmb_io 8 8 read 1m-1m
	check_eq "all of it filled" $((f0 + 32768)) "$(dmb_stat c filled_sectors)"
	check "remove" dmb_remove c
	check "bcache-check --data" sh -c "bcache-check --data '$cache' >/tmp/chk"
	check "none mismatched" grep -q "^data: .* 0 mismatched, 0 unreadable" /tmp/chk
}

dmb_load
check "format" make-bcache -q "$cache"
version=$(bcache-super-show -u "$cache" | awk -F'\t' '$1 == "sb.version" { print $2 }')
info "format version $version"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=1M --size=128M \
	--buffer_pattern=0x5a5a --output=/tmp/p
check "create" dmb_create c "$cache" "$origin" origin_uuid $A
check "no bypass" dmsetup message c 0 sequential_cutoff 0

# 1. fills of read misses, 4 KiB to 1 MiB
f0=$(dmb_stat c filled_sectors)
check "read misses, 4k-1m" dmb_io 0 16 randread 4k-1m
check "they filled" test "$(dmb_stat c filled_sectors)" -gt "$f0"
# 2. writethrough writes, 4 KiB to 1 MiB (fio's own data, verified below)
f0=$(dmb_stat c filled_sectors)
check "writethrough writes, 4k-1m, read back" dmb_io 16 16 randwrite 4k-1m --verify=crc32c
check "they filled" test "$(dmb_stat c filled_sectors)" -gt "$f0"
# 2b. writethrough writes whose copy fails now and then (fail_copy_every):
# those are not cached, the rest are, all of it reads back
P=/sys/module/dm_bcache/parameters
f0=$(dmb_stat c filled_sectors)
echo 2 >$P/fail_copy_every
check "writethrough writes, every second copy failing" \
	dmb_io 64 4 randwrite 64k-64k --verify=crc32c --do_verify=0
echo 0 >$P/fail_copy_every
f1=$(dmb_stat c filled_sectors)
info "$((f1 - f0)) of 8192 sectors filled"
# (a write that does not fit what is left of the open bucket, or that
# overlaps one in flight, is not cached either: about 7300 of 8192 are)
if [ "$version" = 2 ]; then
	check "version 2 copies nothing: most filled" test $((f1 - f0)) -gt 6144
else
	check "about half of them filled" test $((f1 - f0)) -gt 1024 -a $((f1 - f0)) -lt 6144
fi
check "all of them read back" dmb_io 64 4 randwrite 64k-64k --verify=crc32c --verify_only
# 3. small reads, then large ones over them: pieces rewritten as one extent
check "4k reads" dmb_io 32 4 randread 4k-4k
r0=$(dmb_stat c rewritten)
check "256k reads over them" dmb_io 32 4 read 256k-256k
check "pieces rewritten" test "$(dmb_stat c rewritten)" -gt "$r0"
# 4. dirty writes, 4 KiB to 1 MiB
check "writeback" dmsetup message c 0 cache_mode writeback
check "held dirty" dmsetup message c 0 writeback_running 0
check "dirty writes, 4k-1m, read back" dmb_io 40 16 randwrite 4k-1m --verify=crc32c
check "they are dirty" test "$(dmb_stat c dirty)" -gt 0
# 4b. 1 MiB dirty writes whose copies all fail (version 3) go to the
# origin; once they are done, nothing of them holds the range: reads of
# it fill. (fio reads nothing back here: its verify pass would be the
# reads that fill.)
if [ "$version" = 3 ]; then
	echo 1 >$P/fail_copy_every
	d0=$(dmb_stat c dirty)
	check "1m dirty writes, every copy failing" \
		dmb_io 56 4 write 1m-1m --verify=crc32c --do_verify=0
	echo 0 >$P/fail_copy_every
	check_eq "none of them dirty" "$d0" "$(dmb_stat c dirty)"
	f0=$(dmb_stat c filled_sectors)
	check "64k reads of them" dmb_io 56 4 read 64k-64k
	check_eq "all of them filled" $((f0 + 8192)) "$(dmb_stat c filled_sectors)"
	check "they read back" dmb_io 56 4 write 1m-1m --verify=crc32c --verify_only
fi
check "remove" dmb_remove c

check "bcache-check --data" sh -c "bcache-check --data '$cache' >/tmp/chk"
cat /tmp/chk
got() { sed -n "s/^data: .*[ (]\([0-9]*\) $1.*/\1/p" /tmp/chk; }
verified=$(sed -n 's/^data: \([0-9]*\) keys* verified.*/\1/p' /tmp/chk)
bcache-dump --btree "$cache" >/tmp/dump
big=$(awk '$1 == "key" && $4 - $3 > 128' /tmp/dump | wc -l)
if [ "$version" = 2 ]; then
	check_eq "version 2: no key verified" 0 "$verified"
	check "version 2: keys without a checksum" test "$(got without)" -gt 0
	check "version 2: keys over 64 KiB (the bound is version 3's)" test "$big" -gt 0
	big_buckets
	exit 0
fi
check "keys verified" test "${verified:-0}" -gt 100
check_eq "none mismatched" 0 "$(got mismatched)"
check_eq "none unreadable" 0 "$(got unreadable)"
check_eq "none without a checksum" 0 "$(got without)"
check_eq "no key over 64 KiB" 0 "$big"
# The removal wrote the dirty data back: its keys are clean now, and
# still carry the checksums of the dirty writes (sectors 40-56 MiB).
dk=$(awk -v a=$((40 * 2048)) -v b=$((56 * 2048)) \
	'$1 == "key" && $3 >= a && $4 <= b && $8 == "live"' /tmp/dump | wc -l)
info "$dk keys of the dirty writes"
check "keys of the dirty writes among them" test "$dk" -gt 0

# 5. One byte of the data of one key of the dirty writes changed on the
# device: found.
bsz=$(bcache-super-show -u "$cache" | awk -F'\t' '$1 == "bucket_size" { print $2 }' | cut -d' ' -f1)
loc=$(awk -v a=$((40 * 2048)) -v b=$((56 * 2048)) \
	'$1 == "key" && $3 >= a && $4 <= b && $8 == "live" { print $5; exit }' /tmp/dump)
at=$(( (${loc%+*} * bsz) + ${loc#*+} * 512 + 1000 ))
b=$(od -An -tu1 -j "$at" -N 1 "$cache" | tr -d ' ')
printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$cache" bs=1 seek="$at" conv=notrunc 2>/dev/null
sync
info "byte $at (key at $loc) changed from $b"
check_fails "bcache-check --data finds it" bcache-check --data "$cache"
check "and says so" sh -c "bcache-check --data '$cache' | grep -q 'data checksum [0-9a-f]*, the key says'"
check "one mismatched" sh -c "bcache-check --data '$cache' | grep -q '^data: .* 1 mismatched'"

big_buckets
