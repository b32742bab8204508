# shellcheck shell=sh disable=SC3043 # busybox ash has local
# Helpers for dm-bcache guest scenarios (busybox ash). /init sources this
# before the scenario script, so a scenario just calls these functions.
#
#   pass DESC                  record a passed check
#   fail DESC                  record a failed check (the boot fails)
#   check DESC CMD [ARGS...]   pass iff CMD exits 0; its output is shown on failure
#   check_fails DESC CMD...    pass iff CMD exits non-zero; its output (the
#                              error message) is always shown
#   check_eq DESC EXP ACT      pass iff the strings EXP and ACT are equal
#   skip WHY                   record a skip and end this boot's script (exit 0)
#   crash_now                  unclean reset now: no sync, no unmount
#   disk NAME                  print the /dev path of the virtio disk NAME
#   info MSG...                print MSG in order with the markers and the kernel log
#
#   $BOOT   this boot's index, 1..$BOOTS      $BOOTS  the scenario's boot count
#   $DMB_TEST  the scenario name
#
# Markers go to the kernel log (/dev/kmsg), so they come out on the console
# whole and in order with the kernel's own messages:
#   @@CHECK PASS|FAIL desc, @@SKIP why, @@BOOT-CRASH k checks=n failed=m,
#   @@BOOT-DONE k checks=n failed=m (printed by /init), and "@@| " details
#   (a failed command, its output, expected/actual values).

DMB_STATE=/tmp/dmb
mkdir -p "$DMB_STATE"

# One line to the console via the kernel log (falls back to stdout).
_dmb_say() {
	if [ -w /dev/kmsg ]; then
		printf '<5>%s\n' "$*" >/dev/kmsg 2>/dev/null && return 0
	fi
	printf '%s\n' "$*"
}

# Show a command's captured output in order with the markers. Every line
# starts with "@@| ", so that tests/run neither takes a command's output for
# a kernel problem nor misses it: it prints these lines before a FAIL.
_dmb_detail() {
	_dmb_say "@@| $*"
}

_dmb_show() {
	[ -s "$1" ] || return 0
	while IFS= read -r _dmb_line || [ -n "$_dmb_line" ]; do
		_dmb_detail "  $_dmb_line"
	done <"$1"
}

_dmb_count() {
	if [ -f "$DMB_STATE/$1" ]; then
		wc -l <"$DMB_STATE/$1" | tr -d ' '
	else
		echo 0
	fi
}

info() {
	_dmb_say "@@INFO $*"
}

pass() {
	echo "$1" >>"$DMB_STATE/checks"
	_dmb_say "@@CHECK PASS $1"
}

fail() {
	echo "$1" >>"$DMB_STATE/checks"
	echo "$1" >>"$DMB_STATE/failed"
	_dmb_say "@@CHECK FAIL $1"
}

check() {
	local _dmb_desc _dmb_out _dmb_rc
	_dmb_desc=$1
	shift
	_dmb_out=$(mktemp "$DMB_STATE/out.XXXXXX")
	if "$@" >"$_dmb_out" 2>&1; then
		rm -f "$_dmb_out"
		pass "$_dmb_desc"
	else
		_dmb_rc=$?
		_dmb_detail "\$ $* (exit $_dmb_rc)"
		_dmb_show "$_dmb_out"
		rm -f "$_dmb_out"
		fail "$_dmb_desc"
	fi
}

check_fails() {
	local _dmb_desc _dmb_out _dmb_rc
	_dmb_desc=$1
	shift
	_dmb_out=$(mktemp "$DMB_STATE/out.XXXXXX")
	if "$@" >"$_dmb_out" 2>&1; then
		_dmb_detail "\$ $* (exit 0, expected failure)"
		_dmb_show "$_dmb_out"
		rm -f "$_dmb_out"
		fail "$_dmb_desc"
	else
		_dmb_rc=$?
		_dmb_detail "\$ $* (exit $_dmb_rc, as expected)"
		_dmb_show "$_dmb_out"
		rm -f "$_dmb_out"
		pass "$_dmb_desc"
	fi
}

check_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		_dmb_detail "expected: '$2'"
		_dmb_detail "actual:   '$3'"
		fail "$1"
	fi
}

skip() {
	echo "$*" >>"$DMB_STATE/skipped"
	_dmb_say "@@SKIP $*"
	exit 0
}

crash_now() {
	_dmb_say "@@BOOT-CRASH ${BOOT:-1} checks=$(_dmb_count checks) failed=$(_dmb_count failed)"
	# Let the console drain (printk output is synchronous; the tty's is not).
	sleep 0.2
	echo b >/proc/sysrq-trigger
	sleep 10
	fail "crash_now: still running 10s after sysrq-b"
	exit 1
}

disk() {
	for _dmb_d in /sys/block/vd*; do
		[ -f "$_dmb_d/serial" ] || continue
		if [ "$(cat "$_dmb_d/serial")" = "$1" ]; then
			echo "/dev/${_dmb_d##*/}"
			return 0
		fi
	done
	# Fallback: position in the scenario's "# disks:" list (first is vda).
	_dmb_i=0
	for _dmb_n in $(echo "${DMB_DISKS:-}" | tr ',' ' '); do
		if [ "$_dmb_n" = "$1" ]; then
			_dmb_l=$(echo abcdefghijklmnopqrstuvwxyz | cut -c$((_dmb_i + 1)))
			[ -b "/dev/vd$_dmb_l" ] && echo "/dev/vd$_dmb_l" && return 0
		fi
		_dmb_i=$((_dmb_i + 1))
	done
	echo "disk: no virtio disk named '$1' (disks: ${DMB_DISKS:-none})" >&2
	return 1
}
