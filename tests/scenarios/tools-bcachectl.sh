# bcachectl drives the target: create (ephemeral, then persistent with a
# generated uuid), status by field name, set, invalidate, gc, list, remove,
# and its errors. The guest has no udev: no /dev/disk links, so bcachectl
# keeps the paths as given.
# disks: cache=64M origin=64M other=64M
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
other=$(disk other)
dmb_load

has_line() {
	echo "$1" | grep -q -- "$2"
}
rd() {
	fio --name=r --filename="/dev/mapper/$1" --rw=randread --bs=4k --size=4M \
		--randrepeat=1 --direct=1 --output=/tmp/r
}

check "bcachectl is installed" sh -c 'command -v bcachectl'
check "bcachectl help" bcachectl help
check "format" make-bcache -q "$cache"
check_fails "create on an unformatted cache" bcachectl create x "$other" "$origin"
check_fails "create with a bad uuid" bcachectl create x "$cache" "$origin" --uuid 1234

out=$(bcachectl create c "$cache" "$origin" 2>&1)
check_eq "create, ephemeral: the table with the paths as given" \
	"created /dev/mapper/c: 0 $(blockdev --getsz "$origin") bcache $cache $origin" "$out"
check "the device exists" test -b /dev/mapper/c
check_eq "list" c "$(bcachectl list)"
check_fails "create over an existing name" bcachectl create c "$cache" "$origin"

# status: the README's fields by name, in order, then the tunables
check "status" sh -c 'bcachectl status c >/tmp/st'
info "status: $(tr '\n' ' ' </tmp/st)"
nf=$(echo $DMB_FIELDS | wc -w)
check_eq "status: the fields in order" "$(echo "$DMB_FIELDS" | tr "\n" " " | sed "s/ $//")" \
	"$(head -n "$nf" /tmp/st | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"
check_eq "status: $nf fields, the tunables count, 9 tunables" $((nf + 10)) "$(wc -l </tmp/st | tr -d ' ')"
check_eq "status version" 2 "$(bcachectl status c version)"
check_eq "status mode" writethrough "$(bcachectl status c mode)"
check "metrics of the real status line" sh -c 'bcachectl metrics >/tmp/prom'
check_eq "metrics: read hits = status's" \
	"$(bcachectl status c read_hits)" \
	"$(sed -n 's/^dm_bcache_read_hits_total{device="c",.*} //p' /tmp/prom)"
check_eq "metrics: the state" 1 \
	"$(sed -n 's/^dm_bcache_state{device="c",.*state="ok".*} //p' /tmp/prom)"
check_eq "status slot = dmsetup's" "$(dmb_stat c slot)" "$(bcachectl status c slot)"
check_eq "status origin_uuid = dmsetup's" "$(dmb_stat c origin_uuid)" "$(bcachectl status c origin_uuid)"
check_eq "status buckets = dmsetup's field 4" "$(dmb_stat c buckets)" "$(bcachectl status c buckets)"
check_fails "status of an unknown field" bcachectl status c nosuch
check_fails "status of a missing device" bcachectl status nosuch

check "first pass" rd c
check "second pass" rd c
check_eq "status read_misses = dmsetup's" "$(dmb_stat c read_misses)" "$(bcachectl status c read_misses)"
hits=$(bcachectl status c read_hits)
info "hits $hits misses $(bcachectl status c read_misses)"
check "the second pass hit" test "$hits" -gt 900

check "set sequential_cutoff" bcachectl set c sequential_cutoff 8388608
check_eq "... is applied" 8388608 "$(dmb_tunable c sequential_cutoff)"
check_eq "... and shown by status" 8388608 "$(bcachectl status c sequential_cutoff)"
check "set cache_priority_hit" bcachectl set c cache_priority_hit 64
check_eq "... is applied" 64 "$(bcachectl status c cache_priority_hit)"
check_fails "set an unknown tunable" bcachectl set c nosuch 1
check_fails "set a value the kernel refuses" bcachectl set c cache_priority_hit 70000
check_fails "set a non-number" bcachectl set c sequential_cutoff 4M

check "invalidate" bcachectl invalidate c
check "a pass after invalidate" rd c
check_eq "... has no hits" "$hits" "$(bcachectl status c read_hits)"
gc0=$(bcachectl status c gc_runs)
check "gc" bcachectl gc c
check_eq "gc_runs went up" "$((gc0 + 1))" "$(bcachectl status c gc_runs)"

check "dmsetup: a linear device" dmsetup create lin --table "0 1024 linear $other 0"
check_fails "remove refuses a linear device" bcachectl remove lin
check_fails "status refuses a linear device" bcachectl status lin
check_eq "list leaves it out" c "$(bcachectl list)"
check "dmsetup remove lin" dmsetup remove lin

check "remove" bcachectl remove c
check_fails "remove again" bcachectl remove c
check_eq "list: nothing" "" "$(bcachectl list)"

# persistent: a generated uuid, kept across a remove
out=$(bcachectl create p "$cache" "$origin" --uuid new 2>&1)
info "$out"
u=$(bcachectl status p origin_uuid)
check "create --uuid new prints the uuid it made" has_line "$out" "^origin_uuid $u is $origin"
check "the table has it" has_line "$(dmsetup table p)" " 2 origin_uuid $u\$"
check "warm p" rd p
check "remove p" bcachectl remove p
check "create p again with --uuid" bcachectl create p "$cache" "$origin" --uuid "$u"
check "a pass after the re-create" rd p
check "... hits: the data persisted" test "$(bcachectl status p read_hits)" -gt 900
check "reads equal the origin" dmb_same /dev/mapper/p "$origin"
check "remove p" bcachectl remove p
check "the cache checks clean afterwards" bcache-check "$cache"
