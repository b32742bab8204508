# make-bcache and bcache-super-show on real block devices in the guest:
# a round trip of every field, and each bad input gives a clean error.
# disks: cache=96M tiny=6M other=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
tiny=$(disk tiny)
# the journal ring (sectors 1024-5119 here) is zeroed: fill it first
check "garbage where the journal goes" dd if=/dev/urandom of="$cache" bs=512 seek=1024 \
	count=4096 conv=fsync
check "make-bcache formats" make-bcache -q -l testcache "$cache"
check "bcache-super-show accepts it" bcache-super-show "$cache"
show=$(bcache-super-show "$cache")
field() { echo "$show" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
check_eq "magic ok" ok "$(field sb.magic)"
v=${DMB_FORMAT_VERSION:-3}
check_eq "version $v" "$v" "$(field sb.version)"
check_eq "label" testcache "$(field dev.label)"
check_eq "flags clean" clean "$(field sb.flags)"
check_eq "default bucket 512k" "524288 (1024 sectors)" "$(field bucket_size)"
check_eq "default block 4k" "4096 (8 sectors)" "$(field block_size)"
check_eq "nbuckets" 192 "$(field nbuckets)"
check_eq "device sectors" "$(blockdev --getsz "$cache")" "$(field device_sectors)"
check_eq "no btree root yet" none "$(field btree.root)"
# the journal: 192 buckets, so the default 4, right after the metadata bucket
check_eq "journal at the first bucket" 1 "$(field sb.journal_first)"
check_eq "journal of 4 buckets by default" 4 "$(field sb.journal_buckets)"
check_eq "journal seq 1" 1 "$(field sb.journal_seq)"
check_eq "journal pos 0" 0 "$(field sb.journal_pos)"
check_eq "data buckets: less the metadata and the journal" 187 "$(field data_buckets)"
check_eq "the ring is zeroed" 0 \
	"$(dd if="$cache" bs=512 skip=1024 count=4096 2>/dev/null | tr -d '\000' | wc -c)"
buckets=$(bcache-dump --buckets "$cache")
check_eq "bucket array: the metadata bucket flagged" "state meta 1" "$(echo "$buckets" | grep '^state meta ')"
check_eq "bucket array: the journal buckets flagged" "state journal 4" "$(echo "$buckets" | grep '^state journal ')"
check_eq "bucket array: the rest free" "state free 187" "$(echo "$buckets" | grep '^state free ')"
check "bcache-check: consistent, with an empty journal" sh -c \
	"bcache-check -v $cache | grep -q '^journal: empty: 4 buckets from bucket 1, nothing to replay at ring sector 0 (seq 1)\$'"
check_eq "probe-bcache: ID_FS_VERSION $v" "ID_FS_VERSION=$v" \
	"$(probe-bcache --export "$cache" | grep '^ID_FS_VERSION=')"

check "make-bcache -b 64k -w 8k" make-bcache -q --wipe -b 64k -w 8k "$(disk other)"
show=$(bcache-super-show "$(disk other)")
check_eq "bucket 64k" "65536 (128 sectors)" "$(field bucket_size)"
check_eq "block 8k" "8192 (16 sectors)" "$(field block_size)"
check "make-bcache -j 16" make-bcache -q --wipe -j 16 "$(disk other)"
show=$(bcache-super-show "$(disk other)")
check_eq "journal of 16 buckets" 16 "$(field sb.journal_buckets)"
check_eq "data buckets: 128 less the metadata and the journal" 111 "$(field data_buckets)"
check_eq "bucket array: 16 journal buckets" "state journal 16" \
	"$(bcache-dump --buckets "$(disk other)" | grep '^state journal ')"
check_fails "journal of 1 bucket refused" make-bcache -q --wipe -j 1 "$(disk other)"
check_fails "journal of 257 buckets refused" make-bcache -q --wipe -j 257 "$(disk other)"
check_fails "journal leaving under 16 data buckets refused" make-bcache -q --wipe -j 112 "$(disk other)"
check_eq "refused formats left the last one" 16 \
	"$(bcache-super-show "$(disk other)" | awk -F'\t' '$1 == "sb.journal_buckets" { print $2 }')"

check_fails "block 2k refused" make-bcache -w 2k "$(disk other)"
check_fails "block 3k refused" make-bcache -w 3k --wipe "$(disk other)"
check_fails "bucket 768k refused" make-bcache -b 768k --wipe "$(disk other)"
check_fails "bucket smaller than block refused" make-bcache -b 4k -w 8k --wipe "$(disk other)"
check_fails "device too small refused" make-bcache "$tiny"
check_fails "reformat without --wipe refused" make-bcache "$cache"
check_eq "refused reformat left the label" testcache \
	"$(bcache-super-show "$cache" | awk -F'\t' '$1 == "dev.label" { print $2 }')"
check_fails "missing device" make-bcache /dev/nonexistent
check_fails "super-show on an unformatted device" bcache-super-show "$tiny"
