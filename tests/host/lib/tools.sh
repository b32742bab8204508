# shellcheck shell=bash
# Host tool suites (tools-check*.sh): the tools built, a scratch directory
# ($dir, the current one, gone at exit), and the check helpers. Source it
# with LIB_NAME set to the suite's name.
T=${DMB_TOP:?}/bcache-tools
# serialised with the other suites of ours that build here (tools-install)
flock /tmp/dm-bcache-tools-build.lock make -s -C "$T" all tests/fixture || exit 1
PATH=$T:$T/tests:$PATH
dir=$(mktemp -d "/tmp/${LIB_NAME:?}.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
npass=0 nfail=0

ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

# run RC DESC CMD...: CMD must exit RC; its output is kept in ./out
run() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >out 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "$desc (exit $rc)"
	else
		bad "$desc: exit $rc, expected $want: $*"
		sed 's/^/     | /' out
	fi
}

# has DESC PATTERN: the last run's output matches the extended regexp
has() {
	if grep -Eq -- "$2" out; then
		ok "$1"
	else
		bad "$1: no /$2/ in the output"
		sed 's/^/     | /' out
	fi
}

hasnt() {
	if grep -Eq -- "$2" out; then
		bad "$1: /$2/ in the output"
		sed 's/^/     | /' out
	else
		ok "$1"
	fi
}

count() { # count PATTERN: lines of ./out matching
	grep -Ec -- "$1" out
}

eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}

