# check_fails on a command that succeeds must fail; check_eq on different strings too.
# expect: FAIL boot 1: 2 of 3 checks failed
check_fails "false fails as expected" false
check_fails "true does not fail" true
check_eq "different strings" expected actual
