# A malformed header is reported, without booting.
# disks: bad=huge
# expect: FAIL header: bad disk 'bad=huge' in '# disks:' (want name=SIZE, name of at most 20 [A-Za-z0-9_-])
pass "never runs"
