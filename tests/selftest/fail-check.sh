# A failing check must fail the scenario.
# expect: FAIL boot 1: 1 of 3 checks failed
check "true passes" true
check "false fails" false
check_eq "strings compare" a a
