# power-cut-writeback.sh on a cache set of two members (format version
# 3): every dirty write has two copies, and after every cut the target
# holds every acknowledged write.
# disks: cache=24M origin=16M model=32M tally=1M member1=24M
# boots: 21
# timeout: 120
# append: dmb.members=2
DMB_CACHE_MODE=writeback
# shellcheck source=tests/scenarios/power-cut.sh
. /tests/scenarios/power-cut.sh
