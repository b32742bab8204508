# shellcheck shell=bash
# Sourced by the vm/ and tests/ scripts. Takes KVER, KDIR, BUILD and KROOT
# from the environment (make exports them) and, when a script is run by
# hand, from vm/config.mk, the one place the kernel is pinned.
DMB_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${KVER:-}" ] || [ -z "${KDIR:-}" ] || [ -z "${BUILD:-}" ] || [ -z "${KROOT:-}" ]; then
	if ! command -v make >/dev/null 2>&1; then
		echo "error: KVER/KDIR/BUILD/KROOT unset and 'make' is missing to read vm/config.mk" >&2
		exit 1
	fi
	# shellcheck disable=SC2016 # make syntax, not shell
	eval "$(printf '%s\n' 'include vm/config.mk' \
		'$(info KVER='"'"'$(KVER)'"'"' KDIR='"'"'$(KDIR)'"'"' BUILD='"'"'$(BUILD)'"'"' KROOT='"'"'$(KROOT)'"'"')' \
		'all: ; @:' | make -s --no-print-directory -C "$DMB_TOP" -f -)"
fi
export KVER KDIR BUILD KROOT
