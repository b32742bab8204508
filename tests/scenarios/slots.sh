# One cache serves 256 origins at once, each in its own slot; the 257th
# is refused cleanly; all of them read their own data.
# disks: cache=64M origin=80M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format" make-bcache -q "$cache"
check "origin gets distinct blocks" fio --name=p --filename="$origin" --rw=write \
	--bs=4k --size=80M --verify=crc32c --do_verify=0 --output=/tmp/p
# 257 origins: 256 KiB slices of one disk (each a device of its own).
check "257 slices" sh -c '
	i=0; while [ $i -lt 257 ]; do
		echo "0 512 linear '"$origin"' $((i * 512))" | dmsetup create s$i || exit 1
		i=$((i + 1)); done'
dmsetup mknodes
check "256 targets on one cache" sh -c '
	i=0; while [ $i -lt 256 ]; do
		dmsetup create b$i --table "0 512 bcache '"$cache"' /dev/mapper/s$i" || exit 1
		i=$((i + 1)); done'
dmsetup mknodes
dmesg -c >/dev/null
check_fails "the 257th is refused" dmsetup create b256 --table "0 512 bcache $cache /dev/mapper/s256"
check "with a clear message" dmesg_has "all UUID slots of the cache set are in use"
check_eq "slots 0..255 all used once" 256 "$(i=0; while [ $i -lt 256 ]; do
	dmsetup status b$i | cut -d' ' -f15; i=$((i + 1)); done | sort -u | wc -l)"
check "each reads its own data, twice (the second time from the cache)" sh -c '
	for pass in 1 2; do
		i=0; while [ $i -lt 256 ]; do
			dd if=/dev/mapper/b$i bs=64k iflag=direct 2>/dev/null | md5sum >/tmp/x
			dd if=/dev/mapper/s$i bs=64k iflag=direct 2>/dev/null | md5sum >/tmp/y
			cmp -s /tmp/x /tmp/y || { echo "b$i differs"; exit 1; }
			i=$((i + 1)); done; done'
check "hits on the second pass" test "$(dmb_stat b100 read_hits)" -gt 0
check "remove all" sh -c '
	i=0; while [ $i -lt 256 ]; do dmsetup remove b$i || exit 1; i=$((i + 1)); done
	i=0; while [ $i -lt 257 ]; do dmsetup remove s$i || exit 1; i=$((i + 1)); done'
check "cache clean" sh -c "bcache-super-show $cache | grep -q 'sb.flags	clean'"
check "module unloads" rmmod dm_bcache
