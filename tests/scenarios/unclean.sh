# After an unclean shutdown (a reset with no sync) the journal is replayed:
# what was cached before the crash is hit again, and nothing stale is
# served, not even for data overwritten just before the reset (a write
# that punched cached data reaches the origin only once the hole is in the
# journal). An ephemeral origin (no origin_uuid) keeps nothing.
# disks: cache=64M origin=64M other=16M
# boots: 3
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
other=$(disk other)
A=cccccccc-cccc-4ccc-8ccc-cccccccccccc
hot() { fio --name=h --filename=/dev/mapper/c --rw=randread --bs=4k \
	--size=8M --randrepeat=1 --direct=1 --output=/tmp/h; }
dmb_load
case $BOOT in
1)
	check "format" make-bcache -q "$cache"
	check "origin data" fio --name=p --filename="$origin" --rw=write --bs=64k \
		--size=64M --verify=crc32c --do_verify=0 --output=/tmp/p
	check "create" dmb_create c "$cache" "$origin" origin_uuid $A
	check "ephemeral origin" dmb_create e "$cache" "$other"
	check "warm" hot
	check "warm again" hot
	check "warm the ephemeral one" dd if=/dev/mapper/e of=/dev/null bs=4k \
		count=512 iflag=direct
	check "hits before the crash" test "$(dmb_stat c read_hits)" -gt 1000
	check "write some" fio --name=w --filename=/dev/mapper/c --rw=randwrite \
		--bs=4k --size=8M --io_size=2M --direct=1 --output=/tmp/w
	# Cached data overwritten right before the reset, no flush after it.
	check "overwrite cached data" dd if=/dev/urandom of=/dev/mapper/c bs=4k \
		seek=100 count=256 oflag=direct
	crash_now
	;;
2)
	check "superblock says dirty" sh -c "bcache-super-show $cache | grep -q 'sb.flags	dirty'"
	n=$(dmb_journal_entries "$cache")
	check "create after the crash" dmb_create c "$cache" "$origin" origin_uuid $A
	check "the kernel replayed the $n journal entries bcache-check found" dmb_replayed "$n"
	check "reread" hot
	check "data from before the crash was hit" test "$(dmb_stat c read_hits)" -gt 1000
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
	check "ephemeral: create" dmb_create e "$cache" "$other"
	check "ephemeral: read" dd if=/dev/mapper/e of=/dev/null bs=4k count=512 \
		iflag=direct
	check_eq "ephemeral: nothing kept" 0 "$(dmb_stat e read_hits)"
	check "ephemeral: equals origin" dmb_same /dev/mapper/e "$other"
	check "remove ephemeral" dmb_remove e
	# And once more, right after a replay and more overwrites.
	check "overwrite again" dd if=/dev/urandom of=/dev/mapper/c bs=4k \
		seek=1000 count=64 oflag=direct
	crash_now
	;;
3)
	n=$(dmb_journal_entries "$cache")
	check "create after the second crash" dmb_create c "$cache" "$origin" origin_uuid $A
	check "the kernel replayed the $n journal entries bcache-check found" dmb_replayed "$n"
	check "reread" hot
	check "still hits" test "$(dmb_stat c read_hits)" -gt 1000
	check "device equals origin" dmb_same /dev/mapper/c "$origin"
	check "remove" dmb_remove c
	check "superblock says clean" sh -c "bcache-super-show $cache | grep -q 'sb.flags	clean'"
	check "bcache-check is happy" bcache-check "$cache"
	;;
esac
