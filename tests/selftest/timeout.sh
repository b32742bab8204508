# A hung guest is killed at its timeout and fails.
# timeout: 25
# expect: FAIL boot 1: timed out after 25s
pass "about to hang"
sleep 1000
