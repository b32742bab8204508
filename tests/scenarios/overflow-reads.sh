# Reads go on while a checkpoint holds the journal. After a journal
# overflow, the checkpoint that follows holds the journal: the index may
# not change until it ends. The old code held the btree lock throughout,
# so every read waited for the whole checkpoint; now only changes wait,
# and a read waits for one node's write at most.
# The overflow is forced (fail_journal_every), and the cache sits on
# dm-delay, which holds each write for WRITE_MS: the checkpoint's node,
# bucket array and superblock writes take several times that. A read hit
# issued while the first of them is in flight must complete before the
# checkpoint does.
# disks: cache=32M origin=64M
# timeout: 300
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=0ff1a9c0-5ca1-4e00-8d00-0000000000e1
P=/sys/module/dm_bcache/parameters
WRITE_MS=5000
dmb_load
check "dm-delay" modprobe dm-delay
sz=$(blockdev --getsz "$cache")
check "format" make-bcache -q "$cache"
check "the delay device" dmsetup create ov_delay --table "0 $sz linear $cache 0"
check "create" dmb_create c /dev/mapper/ov_delay "$origin" origin_uuid $U
check "no bypass" dmsetup message c 0 sequential_cutoff 0

check "origin data" dd if=/dev/urandom of=/dev/mapper/c bs=1M count=4 \
	oflag=direct
check "fill" dd if=/dev/mapper/c of=/dev/null bs=64k count=64 iflag=direct
check "checkpoint" dmsetup message c 0 checkpoint
h0=$(dmb_stat c read_hits)
check "hits" dd if=/dev/mapper/c of=/dev/null bs=64k count=64 iflag=direct
check "they were hits" test "$(dmb_stat c read_hits)" -gt "$h0"

check "hold cache writes" dmsetup reload ov_delay --table \
	"0 $sz delay $cache 0 0 $cache 0 $WRITE_MS"
check "hold cache writes: resume" dmsetup resume ov_delay
# dm-delay's status: the reads, writes and flushes it holds.
held_writes() {
	dmsetup status ov_delay | awk '{ print $5 + $6 }'
}
check_eq "nothing held" 0 "$(held_writes)"

# A write over cached data (not in the first 4 KiB: the fingerprint's)
# punches a hole; its journal entry finds the ring "full".
check "the next entry overflows" sh -c "echo 1 >$P/fail_journal_every"
dd if=/dev/urandom of=/tmp/w bs=4k count=1 2>/dev/null
(dd if=/tmp/w of=/dev/mapper/c bs=4k seek=100 oflag=direct 2>/tmp/w.err
	echo $? >/tmp/w.rc) &
wpid=$!
n=0
while [ "$(held_writes)" -eq 0 ] && [ $n -lt 60 ]; do
	sleep 1
	n=$((n + 1))
done
check "the checkpoint writes" test "$(held_writes)" -gt 0
c0=$(dmb_stat c checkpoints)
h0=$(dmb_stat c read_hits)
t0=$(date +%s)
check "a read during the checkpoint" dd if=/dev/mapper/c of=/tmp/r bs=64k \
	skip=32 count=1 iflag=direct
info "the read took $(($(date +%s) - t0)) s"
check_eq "it did not wait for the checkpoint" "$c0" "$(dmb_stat c checkpoints)"
check "it was a hit" test "$(dmb_stat c read_hits)" -gt "$h0"
check "it read the right data" sh -c "dd if=$origin bs=64k skip=32 count=1 \
	iflag=direct 2>/dev/null | cmp -s - /tmp/r"
check "the journal may go on" sh -c "echo 0 >$P/fail_journal_every"

wait $wpid
check_eq "the write succeeded" 0 "$(cat /tmp/w.rc)"
cat /tmp/w.err
check "the checkpoint ended" test "$(dmb_stat c checkpoints)" -gt "$c0"
check "the write reads back" sh -c "dd if=/dev/mapper/c bs=4k skip=100 \
	count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/w"
check "release cache writes" dmsetup reload ov_delay --table \
	"0 $sz linear $cache 0"
check "release cache writes: resume" dmsetup resume ov_delay
check "remove" dmb_remove c
check "remove the delay device" dmsetup remove ov_delay
