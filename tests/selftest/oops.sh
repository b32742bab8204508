# A kernel oops panics the guest (oops=panic): no @@BOOT-DONE, kernel problem.
# expect: FAIL boot 1: no @@BOOT-DONE, kernel problem
check "guest is up" true
insmod /tests/selftest/dmb_selftest.ko mode=oops
pass "not reached"
