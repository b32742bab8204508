# skip ends the scenario as SKIP, not PASS or FAIL.
# boots: 2
# expect: SKIP not applicable in the selftest
pass "before skipping"
skip "not applicable in the selftest"
fail "not reached"
