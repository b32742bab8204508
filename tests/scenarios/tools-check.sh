# bcache-check and bcache-dump on what the kernel wrote: the index of a
# clean close checks clean and matches the target's counters; a corrupt
# byte in the root node is found, --repair drops the index, and the
# target then works again, with nothing served from the dropped index.
# Then a crash: the tools take the journal the kernel left for normal, and
# the index they replay from it is the one the kernel replays.
# disks: cache=64M origin=128M
# boots: 2
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
U=7e57c4ec-0000-4000-8000-0000000000c1
dmb_load

# rc_is DESC RC CMD...: CMD exits with RC; its output goes to the log
rc_is() {
	local desc=$1 want=$2 rc line
	shift 2
	"$@" >/tmp/rc.out 2>&1
	rc=$?
	while IFS= read -r line; do info "  $line"; done </tmp/rc.out
	check_eq "$desc (exit $want)" "$want" "$rc"
}
warm() {
	fio --name=r --filename=/dev/mapper/c --rw=randread --bs=4k --size=8M \
		--randrepeat=1 --direct=1 --output=/tmp/r
}
# the live sectors of a dump's keys
live_sectors() {
	awk '$1 == "key" && $NF == "live" { s += $4 - $3 } END { print s + 0 }' "$1"
}
# a dump's live keys, sorted: slot/epoch start end where gen
live_keys() {
	awk '$1 == "key" && $NF == "live" { print $2, $3, $4, $5, $6 }' "$1" | sort
}

if [ "$BOOT" = 2 ]; then
	rc_is "after the crash: no inconsistency" 0 bcache-check -v "$cache"
	check "... it says it was not shut down cleanly" \
		grep -q '^superblock: not shut down cleanly' /tmp/rc.out
	check "... and finds journal entries to replay" \
		grep -Eq '^journal: [0-9]+ entr(y|ies) \(seq' /tmp/rc.out
	check "... replayed into the index" grep -Eq '^index: .* journal keys?$' /tmp/rc.out
	check "bcache-dump of the crashed cache" sh -c "bcache-dump $cache >/tmp/crashed"
	info "crashed: $(grep -c '^jset ' /tmp/crashed) journal entries, $(grep -c '^jkey ' /tmp/crashed) journal keys, $(grep -c '^key .* live$' /tmp/crashed) live keys"
	check "the dump lists journal entries" test "$(grep -c '^jset ' /tmp/crashed)" -gt 0
	check "create after the crash: the kernel replays" dmb_create c "$cache" "$origin" origin_uuid $U
	check "... it says so" dmesg_has "journal replayed"
	check "remove: a clean close writes the replayed index" dmb_remove c
	rc_is "bcache-check after that" 0 bcache-check "$cache"
	check "bcache-dump --btree after it" sh -c "bcache-dump --btree $cache >/tmp/replayed"
	live_keys /tmp/crashed >/tmp/crashed.keys
	live_keys /tmp/replayed >/tmp/replayed.keys
	info "live keys: $(wc -l </tmp/crashed.keys) replayed by the tools, $(wc -l </tmp/replayed.keys) by the kernel"
	check "the tools' replay has live keys" test -s /tmp/crashed.keys
	check "the kernel's replay is the tools' replay" cmp /tmp/crashed.keys /tmp/replayed.keys
	exit 0
fi

check "format" make-bcache -q "$cache"
check "origin gets a pattern" fio --name=p --filename="$origin" --rw=write \
	--bs=64k --size=128M --verify=pattern --verify_pattern=0x5a5a1234 \
	--do_verify=0 --output=/tmp/p
rc_is "a fresh cache checks clean" 0 bcache-check "$cache"

check_eq "probe-bcache --export names the type" ID_FS_TYPE=dm_bcache \
	"$(probe-bcache --export "$cache" | grep '^ID_FS_TYPE=')"
check_eq "probe-bcache --export: ID_FS_UUID is the cache's uuid" \
	"ID_FS_UUID=$(bcache-super-show "$cache" | sed -n 's/^dev\.uuid	//p')" \
	"$(probe-bcache --export "$cache" | grep '^ID_FS_UUID=')"
check_fails "probe-bcache of the origin: not a cache" probe-bcache "$origin"

check "create with origin_uuid" dmb_create c "$cache" "$origin" origin_uuid $U
rc_is "--repair refuses a cache in use" 3 bcache-check --repair "$cache"
check "... saying so" grep -q 'device is in use' /tmp/rc.out
rc_is "a check of a cache in use: dirty, not an error" 0 bcache-check "$cache"
check "... with a note that it is in use" grep -q '^note: .* is in use' /tmp/rc.out
check "warm: 8 MiB of 4k random reads" warm
filled=$(dmb_stat c filled_sectors)
info "filled $filled sectors, status: $(dmsetup status c)"
check "the warm pass filled the cache" test "$filled" -gt 0
check "remove: the clean close writes the index" dmb_remove c

rc_is "bcache-check after a clean close" 0 bcache-check -v "$cache"
check "bcache-dump --btree" sh -c "bcache-dump --btree $cache >/tmp/dump"
info "dump: $(grep -c '^node ' /tmp/dump) node(s), $(grep -c ' live$' /tmp/dump) live key(s); first: $(grep -m1 '^key ' /tmp/dump)"
check "the dump shows live keys" test "$(grep -c ' live$' /tmp/dump)" -gt 0
check_eq "live sectors in the dump = the target's filled_sectors" "$filled" "$(live_sectors /tmp/dump)"
check "bcache-dump --buckets" sh -c "bcache-dump --buckets $cache >/tmp/buckets"
check_eq "bucket summary agrees" "live_sectors $filled" "$(grep '^live_sectors' /tmp/buckets)"
check "bcache-dump --uuids shows the slot" sh -c "bcache-dump --uuids $cache | grep -q '^slot [0-9]* $U '"
epoch0=$(bcache-super-show -u "$cache" | sed -n 's/^slot\.[0-9]*\.epoch	//p')

# The root node from bcache-super-show, e.g.
# "btree.root	bucket 127 gen 0 level 0 (sector 130048, 1024 sectors)":
# the node's seq in the header of its first set (which may hold no key:
# the checkpoint at open writes the root empty), under the set's checksum.
root=$(bcache-super-show "$cache" | sed -n 's/^btree\.root	.*(sector \([0-9]*\),.*/\1/p')
info "root node at sector $root"
check "super-show names the root" test -n "$root"
check "corrupt a byte of the root node" sh -c \
	"printf 'XXXX' | dd of=$cache bs=1 seek=$((root * 512 + 8)) conv=notrunc,fsync 2>/dev/null"
rc_is "bcache-check finds the corruption" 1 bcache-check "$cache"
check "... and says the index cannot be loaded" grep -q '^error: index: cannot be loaded' /tmp/rc.out
rc_is "bcache-check --repair (1: repaired)" 1 bcache-check --repair --force "$cache"
check "... and dropped the index" grep -q '^repair: dropped the index' /tmp/rc.out
rc_is "bcache-check after the repair" 0 bcache-check "$cache"
check "... finds no index" grep -q '^index: none' /tmp/rc.out
epoch1=$(bcache-super-show -u "$cache" | sed -n 's/^slot\.[0-9]*\.epoch	//p')
check_eq "the slot's epoch was bumped" "$((epoch0 + 1))" "$epoch1"

check "create again after the repair" dmb_create c "$cache" "$origin" origin_uuid $U
check "warm again" warm
check_eq "no hits: nothing came from the dropped index" 0 "$(dmb_stat c read_hits)"
check "a second pass hits: the cache works" sh -c 'fio --name=r --filename=/dev/mapper/c \
	--rw=randread --bs=4k --size=8M --randrepeat=1 --direct=1 --output=/tmp/r2'
info "after two passes: hits $(dmb_stat c read_hits) misses $(dmb_stat c read_misses)"
check "the second pass hit" test "$(dmb_stat c read_hits)" -gt 0
check "reads equal the origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
rc_is "bcache-check at the end" 0 bcache-check "$cache"

# Keys in the journal when the cache goes down: fills, overwrites (holes),
# none over the origin's first 4 KiB (whose fingerprint a crash may leave
# stale, which would drop the slot at the next attach).
check "create for the crash" dmb_create c "$cache" "$origin" origin_uuid $U
check "fill" fio --name=f --filename=/dev/mapper/c --rw=randread --bs=4k --size=16M \
	--offset=16M --randrepeat=1 --direct=1 --output=/tmp/f
check "overwrite some" fio --name=w --filename=/dev/mapper/c --rw=randwrite --bs=4k \
	--size=16M --offset=16M --io_size=1M --randrepeat=1 --direct=1 --output=/tmp/w
check "read more" dd if=/dev/mapper/c of=/dev/null bs=4k skip=8192 count=1024 iflag=direct
check "sync" sync
crash_now
