# A hot random set stays cached through a sequential scan twice the size
# of the cache: the scan bypasses it.
# disks: cache=32M origin=160M
# timeout: 600
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format" make-bcache -q -b 128k "$cache"
check "create" dmb_create c "$cache" "$origin"
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k \
	--size=8M --randrepeat=1 --norandommap --io_size=16M --direct=1 --output=/tmp/h; }
check "warm the hot set" hot
check "warm it again" hot
b0=$(dmb_stat c bypassed)
check "sequential scan of 64 MiB (2x the cache)" \
	dd if=/dev/mapper/c of=/dev/null bs=128k skip=128 count=512 iflag=direct
b1=$(dmb_stat c bypassed)
info "bypassed $b0 -> $b1"
check "the scan bypassed (>= 450 of 512 reads)" test $((b1 - b0)) -ge 450
h0=$(dmb_stat c read_hits); m0=$(dmb_stat c read_misses)
check "hot set again" hot
h1=$(dmb_stat c read_hits); m1=$(dmb_stat c read_misses)
info "hot set after scan: hits +$((h1 - h0)) misses +$((m1 - m0))"
check "hot set hit ratio >= 0.9 after the scan" \
	test $(((h1 - h0) * 10)) -ge $(((h1 - h0 + m1 - m0) * 9))

check "cutoff 0 turns bypass off" dmsetup message c 0 sequential_cutoff 0
b2=$(dmb_stat c bypassed)
check "scan again" dd if=/dev/mapper/c of=/dev/null bs=128k skip=128 count=64 iflag=direct
check_eq "nothing bypassed" "$b2" "$(dmb_stat c bypassed)"
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
