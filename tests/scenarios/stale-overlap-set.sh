# stale-overlap.sh on a cache set of two members (format version 3):
# every dirty write has two copies, and reads overlapping writes, mode
# switches, gc, flushes and table reloads must still never return older
# data; writeback leaves one copy of each.
# disks: cache=48M origin=64M member1=48M
# timeout: 420
# smp: 2
# append: dmb.members=2
# shellcheck source=tests/scenarios/stale-overlap.sh
. /tests/scenarios/stale-overlap.sh
