# Corrupt the metadata of a cache holding a real index (superblock, both
# bucket array copies, both UUID table copies, the index root) and of a
# crash image whose journal holds entries (the ring, the first entry's
# header) at random, seeded, many times: each load must either fail with
# a clean error or attach and read exactly what the origin has. Never an
# oops or a hang.
# disks: cache=32M origin=64M pristine=32M crashed=32M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
pristine=$(disk pristine)
crashed=$(disk crashed)
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
# A checkpoint, then a few writes: their keys are in the journal and
# nowhere else, however slowly the guest runs. (The ring is 256 KiB; the
# writes above may fill half of it, which starts a checkpoint that empties
# it: under the debug kernel the crash image then had no entries.)
check "checkpoint" dmsetup message c 0 gc
check "a few writes, journaled only" fio --name=j --filename=/dev/mapper/c \
	--rw=randwrite --bs=4k --size=16M --io_size=32k --direct=1 --randseed=7 \
	--output=/tmp/j
# A crash image: entries in the journal since the open's checkpoint.
check "suspend" dmsetup suspend c
sleep 1
check "copy the cache as a crash would leave it" dd if="$cache" of="$crashed" bs=1M \
	iflag=direct conv=fsync
check "resume" dmsetup resume c
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
cshow=$(bcache-super-show "$crashed")
cfield() { echo "$cshow" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
jstart=$(( $(cfield sb.journal_first) * bucket ))
jlen=$(( $(cfield sb.journal_buckets) * bucket ))
jpos=$(( jstart + $(cfield sb.journal_pos) * 512 ))
check "the crash image has journal entries" sh -c \
	"bcache-dump -j $crashed | grep -q '^jset'"
info "journal ring at byte $jstart, $jlen bytes, replay from byte $jpos"
# Regions as "image first_byte length"
regions="$pristine 4096 4096
$pristine 8192 $((prio * 512))
$pristine $((8192 + prio * 512)) $((prio * 512))
$pristine $((8192 + 2 * prio * 512)) $((uuid * 512))
$pristine $((8192 + 2 * prio * 512 + uuid * 512)) $((uuid * 512))
$pristine $((root * 512)) 160
$pristine $((root * 512)) $bucket
$crashed $jpos 4096
$crashed $jstart $jlen"
nregions=$(echo "$regions" | wc -l)

attached=0 refused=0 i=1
while [ $i -le 45 ]; do
	set -- $(echo "$regions" | sed -n "$((i % nregions + 1))p")
	dd if="$1" of="$cache" bs=1M conv=fsync 2>/dev/null
	shift
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
check "a journal was replayed" dmesg_has "journal replayed"
