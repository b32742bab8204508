# An out-of-bounds read (the selftest module's mode=oob) must fail the
# scenario. Under the debug kernel (KERNEL=debug) KASAN must be what saw it;
# a kernel without KASAN cannot, and the module WARNs instead.
# expect: FAIL boot 1: kernel problem
check "load the module, mode=oob" insmod /tests/selftest/dmb_selftest.ko mode=oob
check "unload it" rmmod dmb_selftest
if grep -q ' kasan_report$' /proc/kallsyms; then
	check "KASAN reported the read" sh -c 'dmesg | grep -q "BUG: KASAN: slab-out-of-bounds in dmb_selftest"'
fi
