# A guest that ends without the @@BOOT-DONE marker fails.
# expect: FAIL boot 1: no @@BOOT-DONE
pass "about to power off"
poweroff -f
