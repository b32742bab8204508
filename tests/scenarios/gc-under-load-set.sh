# gc-under-load.sh on a cache set of two members (format version 3): GC
# passes count both copies of every dirty key and drop the stale copies
# of live keys, with IO going on between their leaves; a bucket a pass
# under-counts is freed with data in it, and a read then finds older data.
# disks: cache=32M origin=128M member1=32M
# timeout: 600
# smp: 2
# append: dmb.members=2
# shellcheck source=tests/scenarios/gc-under-load.sh
. /tests/scenarios/gc-under-load.sh
