# crash_now in the last boot is a failure (only earlier boots may crash).
# expect: FAIL boot 1: crashed in the last boot
pass "about to crash"
crash_now
