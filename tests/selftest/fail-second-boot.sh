# A failure in boot 2 of 2 is reported against boot 2.
# boots: 2
# expect: FAIL boot 2: 1 of 1 checks failed
check_eq "passes in boot 1 only" 1 "$BOOT"
