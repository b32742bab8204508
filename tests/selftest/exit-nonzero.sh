# A scenario script that exits non-zero fails its boot.
# expect: FAIL boot 1: 1 of 2 checks failed
pass "before the exit"
exit 3
