# crash-log-writes.sh in writeback with checkpoints beside the workload:
# a crash at every write of a checkpoint (node sets appended to buckets
# the previous checkpoint names, new nodes, the superblock, the bucket
# gens reclaim writes meanwhile) must keep every acknowledged write and
# read nothing stale (issue #13).
# disks: data=64M log=512M scratch=64M work=64M model=4M durable=64M
# timeout: 1500
DMB_CACHE_MODE=writeback
# two: each window also holds the workload's writes, all of them points
DMB_CRASH_GC=2
# shellcheck source=tests/scenarios/crash-log-writes.sh
. /tests/scenarios/crash-log-writes.sh
