# Corrupt the metadata of a cache holding a real index (superblock, both
# bucket array copies, both UUID table copies, the index root) at random,
# seeded, many times: each load must either fail with a clean error or
# attach and read exactly what the origin has. Never an oops or a hang.
# disks: cache=32M origin=64M pristine=32M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
pristine=$(disk pristine)
A=ffffffff-ffff-4fff-8fff-ffffffffffff
dmb_load
check "format, 64k buckets" make-bcache -q -b 64k "$cache"
check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k --size=64M \
	--verify=crc32c --do_verify=0 --output=/tmp/p
check "create" dmb_create c "$cache" "$origin" origin_uuid $A
check "warm 16 MiB at random (an index of several nodes)" fio --name=h \
	--filename=/dev/mapper/c --rw=randread --bs=4k --size=16M --randrepeat=1 \
	--direct=1 --output=/tmp/h
check "some writes" fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k \
	--size=16M --io_size=2M --direct=1 --output=/tmp/w
info "index: depth $(dmb_stat c btree_depth), $(dmb_stat c btree_nodes) nodes"
check "clean close" dmb_remove c
check "keep a pristine copy" dd if="$cache" of="$pristine" bs=1M conv=fsync

show=$(bcache-super-show "$cache")
field() { echo "$show" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
bucket=$(( $(field bucket_size | cut -d' ' -f1) ))
root=$(field btree.root | sed -n 's/.*sector \([0-9]*\).*/\1/p')
prio=$(field prio.sectors)
uuid=$(field uuid.sectors)
info "root at sector $root, prio copies $prio sectors, uuid copies $uuid sectors"
check "the index root is known" test -n "$root"
# Regions as "first_byte length"
regions="4096 4096
8192 $((prio * 512))
$((8192 + prio * 512)) $((prio * 512))
$((8192 + 2 * prio * 512)) $((uuid * 512))
$((8192 + 2 * prio * 512 + uuid * 512)) $((uuid * 512))
$((root * 512)) 160
$((root * 512)) $bucket"

attached=0 refused=0 i=1
while [ $i -le 40 ]; do
	dd if="$pristine" of="$cache" bs=1M conv=fsync 2>/dev/null
	set -- $(echo "$regions" | sed -n "$((i % 7 + 1))p")
	what="case $i: region $1+$2"
	# 1..4 random bytes in the region, seeded by the case number.
	awk -v seed=$i -v base=$1 -v len=$2 'BEGIN { srand(seed);
		n = 1 + int(rand() * 4);
		for (j = 0; j < n; j++) printf "%d %d\n", base + int(rand() * len), int(rand() * 256) }' |
	while read -r off val; do
		printf "$(printf '\\%03o' "$val")" | dd of="$cache" bs=1 seek="$off" conv=notrunc 2>/dev/null
	done
	sync
	if dmb_create c "$cache" "$origin" origin_uuid $A 2>/dev/null; then
		attached=$((attached + 1))
		check "$what: attached, reads equal the origin" dmb_same /dev/mapper/c "$origin"
		check "$what: remove" dmb_remove c
	else
		refused=$((refused + 1))
		dmsetup remove c 2>/dev/null
		check "$what: refused with a message" sh -c "dmesg | tail -n 3 | grep -q 'device-mapper: table:.*bcache'"
	fi
	i=$((i + 1))
done
info "$attached attached, $refused refused"
check "some cases attached and some were refused" test "$attached" -gt 0 -a "$refused" -gt 0
check "a damaged index was dropped, not used" dmesg_has "cannot load the index"
check "a damaged metadata copy was fallen back from" dmesg_has "using the other copy"
