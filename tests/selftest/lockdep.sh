# A lock order inversion (the selftest module's mode=lockdep) must fail the
# scenario. Under the debug kernel lockdep must be what saw it; a kernel
# without lockdep cannot, and the module WARNs instead.
# expect: FAIL boot 1: kernel problem
check "load the module, mode=lockdep" insmod /tests/selftest/dmb_selftest.ko mode=lockdep
check "unload it" rmmod dmb_selftest
if [ -e /proc/lockdep ]; then
	check "lockdep reported the inversion" sh -c 'dmesg | grep -q "WARNING: possible circular locking dependency detected"'
fi
