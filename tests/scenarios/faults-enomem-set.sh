# faults-enomem.sh on a cache set of two members (format version 3):
# inserts, checkpoints and the copies of dirty writes fail for want of
# memory while every dirty write takes two copies; no acknowledged write
# is lost, before or after a crash.
# disks: cache=64M origin=128M member1=64M
# boots: 2
# smp: 2
# timeout: 500
# append: dmb.members=2
# shellcheck source=tests/scenarios/faults-enomem.sh
. /tests/scenarios/faults-enomem.sh
