# power-cut.sh in writeback mode: after every cut the target must hold
# every acknowledged write (the origin may lag behind it).
# Skipped while the constructor refuses cache_mode writeback.
# disks: cache=24M origin=16M model=32M tally=1M
# boots: 21
# timeout: 120
DMB_CACHE_MODE=writeback
# shellcheck source=tests/scenarios/power-cut.sh
. /tests/scenarios/power-cut.sh
