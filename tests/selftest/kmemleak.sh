# A leaked allocation (the selftest module's mode=leak) must fail the
# scenario. Under the debug kernel, /init's kmemleak scan at the end of the
# boot must be what reports it; a kernel without kmemleak cannot, and the
# module WARNs instead.
# expect: FAIL boot 1: kernel problem
check "load the module, mode=leak" insmod /tests/selftest/dmb_selftest.ko mode=leak
check "unload it" rmmod dmb_selftest
# kmemleak reports only objects older than 5 s
sleep 6
