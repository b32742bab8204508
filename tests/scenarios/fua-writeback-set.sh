# fua-writeback.sh on a cache set of two members (format version 3): FUA
# writes acknowledged once both copies are written and the key is
# durable; every acknowledged write survives a crash.
# disks: cache=64M origin=128M member1=64M
# boots: 2
# smp: 2
# timeout: 400
# append: dmb.members=2
# shellcheck source=tests/scenarios/fua-writeback.sh
. /tests/scenarios/fua-writeback.sh
