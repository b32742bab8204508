# crash-log-writes.sh in writeback mode: after each replayed crash point
# the target must hold every acknowledged write (the origin may lag).
# Skipped while the constructor refuses cache_mode writeback.
# disks: data=64M log=512M scratch=64M work=64M model=4M
# timeout: 900
DMB_CACHE_MODE=writeback
# shellcheck source=tests/scenarios/crash-log-writes.sh
. /tests/scenarios/crash-log-writes.sh
