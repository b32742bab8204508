# gc-under-load.sh with no index node budget (node_cache_mb=0): every
# leaf not in use is evicted, so writeback's walk, the GC passes and the
# IO path read leaves back all the time. Writeback's walk used to
# livelock here: a hole across a leaf boundary needs both leaves in
# memory, each walk read one while the trim before it evicted the other,
# and a discard over dirty data, held for a batch, waited for ever (3
# runs of 3 before the fix).
# disks: cache=32M origin=128M
# timeout: 1200
# smp: 2
# append: dmb.node_cache_mb=0
. /tests/scenarios/gc-under-load.sh
