# A kernel WARN (from a deliberately warning test module) must fail the
# scenario even though every check passes.
# expect: FAIL boot 1: kernel problem
check "load the warning module" insmod /tests/selftest/dmb_selftest.ko
check "unload it" rmmod dmb_selftest
