#!/bin/bash
# Host: make install DESTDIR=... installs the expected files; the man
# pages render; every tool has --help. (dkms.conf: tests/host/dkms.sh.)
set -u
TOP=${DMB_TOP:?}
dest=$(mktemp -d /tmp/tools-install.XXXXXX)
work=$(mktemp -d /tmp/tools-install-work.XXXXXX)
trap 'rm -rf "$dest" "$work"' EXIT
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

# KVER as the top Makefile has it (vm/config.mk)
# shellcheck source=vm/env.sh
. "$TOP/vm/env.sh"

if flock /tmp/dm-bcache-tools-build.lock \
	make -s -C "$TOP" install DESTDIR="$dest" >"$work/install.log" 2>&1; then
	ok "make install DESTDIR=$dest"
else
	bad "make install failed"
	sed 's/^/     | /' "$work/install.log"
fi

want=(usr/sbin/make-bcache usr/sbin/bcache-super-show usr/sbin/bcache-check
	usr/sbin/bcache-dump usr/sbin/bcache-writeback usr/sbin/probe-bcache usr/sbin/bcachectl
	usr/share/man/man8/make-bcache.8 usr/share/man/man8/bcache-super-show.8
	usr/share/man/man8/bcache-check.8 usr/share/man/man8/bcache-dump.8
	usr/share/man/man8/bcache-writeback.8
	usr/share/man/man8/bcachectl.8 usr/share/man/man8/probe-bcache.8
	usr/lib/udev/rules.d/69-dm-bcache.rules)
if [ -f "$TOP/dm-bcache/dm-bcache.ko" ]; then
	want+=("lib/modules/$KVER/extra/dm-bcache.ko")
else
	echo "note: dm-bcache.ko is not built: its install is not checked"
fi
for f in "${want[@]}"; do
	if [ -f "$dest/$f" ]; then ok "installed $f"; else bad "missing $f"; fi
done
extra=$(cd "$dest" && find . -type f | sed 's|^\./||' | sort |
	comm -23 - <(printf '%s\n' "${want[@]}" | sort))
if [ -z "$extra" ]; then ok "nothing else installed"; else bad "unexpected files: $extra"; fi
for f in "$dest"/usr/sbin/*; do
	if [ -x "$f" ]; then ok "${f##*/} is executable"; else bad "${f##*/} is not executable"; fi
	# the installed copy runs and documents itself
	if "$f" --help >"$work/help" 2>&1 && grep -q '^Usage' "$work/help"; then
		ok "${f##*/} --help"
	else
		bad "${f##*/} --help"
		sed 's/^/     | /' "$work/help"
	fi
done
for f in "$dest"/usr/share/man/man8/*.8; do
	if [ "$(stat -c %a "$f")" != 644 ]; then
		bad "${f##*/}: mode $(stat -c %a "$f")"
	fi
	if command -v groff >/dev/null 2>&1; then
		if LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$f" >"$work/groff" 2>&1 && [ ! -s "$work/groff" ]; then
			ok "${f##*/} renders without warnings"
		else
			bad "${f##*/}: groff warnings"
			sed 's/^/     | /' "$work/groff"
		fi
	fi
done

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
