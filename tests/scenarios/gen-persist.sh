# A bucket whose data was evicted is reused only once its new gen is on
# disk: crash right after the cache evicted a region and reused its
# buckets for others, and the old region's keys, still in the journal
# or the checkpoint on disk where no GC has dropped them yet, must come
# back stale. (Reclaim asks for GC passes, so checkpoints come between:
# the status logged before the crash says how many.)
# If they matched the bucket's old gen, they would return other data.
# disks: cache=16M origin=64M
# boots: 2
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=9e9e9e9e-9e9e-4e9e-8e9e-9e9e9e9e9e9e
rd() {	# rd NAME OFFSET_MIB: 12 MiB of 4k random reads through the target
	fio --name="$1" --filename=/dev/mapper/c --rw=randread --bs=4k \
		--offset="$2M" --size=12M --randrepeat=1 --direct=1 --output=/tmp/"$1"
}
dmb_load
if [ "$BOOT" = 1 ]; then
	check "format: 64k buckets, a 2 MiB journal" make-bcache -q -b 64k -j 32 "$cache"
	check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k \
		--size=64M --verify=crc32c --do_verify=0 --output=/tmp/p
	check "create" dmb_create c "$cache" "$origin" origin_uuid $U
	check "cache everything" dmsetup message c 0 sequential_cutoff 0
	check "region A" rd a 0
	c0=$(dmb_stat c checkpoints)
	check "region B evicts" rd b 16
	check "region C evicts" rd c 32
	info "status: $(dmsetup status c)"
	check "buckets were reused" test "$(dmb_stat c invalidations)" -gt 64
	info "checkpoints since A: $(( $(dmb_stat c checkpoints) - c0 ))"
	crash_now
else
	# The GC that reclaim asks for may have checkpointed after the last fill.
	n=$(dmb_journal_entries "$cache")
	check "create after the crash" dmb_create c "$cache" "$origin" origin_uuid $U
	check "the kernel replayed the $n journal entries bcache-check found" dmb_replayed "$n"
	check "read region A" dd if=/dev/mapper/c of=/tmp/a bs=1M count=12 iflag=direct
	check "origin's region A" dd if="$origin" of=/tmp/oa bs=1M count=12 iflag=direct
	check "region A is the origin's, not what reused its buckets" cmp /tmp/a /tmp/oa
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
	check "remove" dmb_remove c
fi
