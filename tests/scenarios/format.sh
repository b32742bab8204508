# make-bcache and bcache-super-show on real block devices in the guest:
# a round trip of every field, and each bad input gives a clean error.
# disks: cache=96M tiny=6M other=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
tiny=$(disk tiny)
check "make-bcache formats" make-bcache -q -l testcache "$cache"
check "bcache-super-show accepts it" bcache-super-show "$cache"
show=$(bcache-super-show "$cache")
field() { echo "$show" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
check_eq "magic ok" ok "$(field sb.magic)"
check_eq "version 1" 1 "$(field sb.version)"
check_eq "label" testcache "$(field dev.label)"
check_eq "flags clean" clean "$(field sb.flags)"
check_eq "default bucket 512k" "524288 (1024 sectors)" "$(field bucket_size)"
check_eq "default block 4k" "4096 (8 sectors)" "$(field block_size)"
check_eq "nbuckets" 192 "$(field nbuckets)"
check_eq "device sectors" "$(blockdev --getsz "$cache")" "$(field device_sectors)"
check_eq "no btree root yet" none "$(field btree.root)"

check "make-bcache -b 64k -w 8k" make-bcache -q --wipe -b 64k -w 8k "$(disk other)"
show=$(bcache-super-show "$(disk other)")
check_eq "bucket 64k" "65536 (128 sectors)" "$(field bucket_size)"
check_eq "block 8k" "8192 (16 sectors)" "$(field block_size)"

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
