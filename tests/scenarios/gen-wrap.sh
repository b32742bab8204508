# A tiny cache under heavy churn: every bucket's 8-bit generation wraps
# many times over; GC must keep up (gen - last_gc < 64) and no key of an
# earlier round may ever come back to life.
# disks: cache=3M origin=48M
# timeout: 900
. /tests/guest/dmb.sh

cache=$(disk cache)
origin=$(disk origin)
dmb_load
check "format with 64k buckets" make-bcache -q -b 64k "$cache"
nb=$(bcache-super-show "$cache" | awk -F'\t' '$1 == "data_buckets" { print $2 }')
check "create" dmb_create c "$cache" "$origin"
check "churn, 2 threads" dmb-stress -d /dev/mapper/c -o "$origin" -s 40 -n 16000 -t 2 -S 11
inv=$(dmb_stat c invalidations)
info "status: $(dmsetup status c)"
info "$inv invalidations over $nb data buckets"
check "gens wrapped: more than 256 invalidations per bucket" test "$inv" -gt $((nb * 256))
check "gc kept up" test "$(dmb_stat c gc_runs)" -ge 4
check "hits happened" test "$(dmb_stat c read_hits)" -gt 500
check "device equals origin" dmb_same /dev/mapper/c "$origin"
check "remove" dmb_remove c
check "recreate" dmb_create c "$cache" "$origin"
check "churn after reload" dmb-stress -d /dev/mapper/c -o "$origin" -s 40 -n 4000 -t 2 -S 12 -I
check "remove again" dmb_remove c
