#!/bin/bash
# Host: make install DESTDIR=... installs the expected files; the man
# pages render; every tool has --help; dkms.conf builds the module from a
# copy of the sources the way dkms does (built only, never loaded).
set -u
TOP=${DMB_TOP:?}
dest=$(mktemp -d /tmp/tools-install.XXXXXX)
work=$(mktemp -d /tmp/tools-dkms.XXXXXX)
trap 'rm -rf "$dest" "$work"' EXIT
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }

# KVER and KDIR as the top Makefile has them (vm/config.mk)
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
	usr/sbin/bcache-dump usr/sbin/probe-bcache usr/sbin/bcachectl
	usr/share/man/man8/make-bcache.8 usr/share/man/man8/bcache-super-show.8
	usr/share/man/man8/bcache-check.8 usr/share/man/man8/bcache-dump.8
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

# dkms.conf: what dkms itself does, minus installing. dkms copies the source
# tree to $dkms_tree/$PACKAGE_NAME/$PACKAGE_VERSION/build and runs MAKE[0]
# there with $kernel_source_dir set.
conf=$TOP/dkms.conf
if bash -n "$conf"; then ok "dkms.conf parses"; else bad "dkms.conf: syntax"; fi
# shellcheck disable=SC2034 # the variables dkms.conf uses
if (
	kernel_source_dir=/lib/modules/KVER/build dkms_tree=/var/lib/dkms
	# shellcheck source=/dev/null
	. "$conf"
	[ "$PACKAGE_NAME" = dm-bcache ] && [ "${BUILT_MODULE_NAME[0]}" = dm-bcache ] &&
		[ "${DEST_MODULE_LOCATION[0]}" = /kernel/drivers/md ] &&
		[[ ${MAKE[0]} == "make -C /lib/modules/KVER/build M=/var/lib/dkms/dm-bcache/0.1.0/build/dm-bcache modules" ]]
); then
	ok "dkms.conf: dm-bcache, built with the kernel's build dir, to /kernel/drivers/md"
else
	bad "dkms.conf: names"
fi
if [ -d "$KDIR" ]; then
	build=$work/tree/dm-bcache/0.1.0/build
	mkdir -p "$build/dm-bcache"
	cp "$conf" "$build/"
	cp "$TOP"/dm-bcache/*.[ch] "$TOP"/dm-bcache/Kbuild "$TOP"/dm-bcache/Makefile "$build/dm-bcache/"
	rm -f "$build"/dm-bcache/*.mod.c
	# shellcheck disable=SC2034 # the variables dkms.conf uses
	if (
		kernel_source_dir=$KDIR
		dkms_tree=$work/tree
		# shellcheck source=/dev/null
		. "$build/dkms.conf"
		cd "$build" && eval "${MAKE[0]}" &&
			[ -f "${BUILT_MODULE_LOCATION[0]}${BUILT_MODULE_NAME[0]}.ko" ]
	) >"$work/dkms.log" 2>&1; then
		ok "dkms.conf's MAKE builds ${KDIR##*/}'s dm-bcache.ko from a copy of the sources"
	else
		bad "dkms.conf's MAKE failed"
		tail -n 20 "$work/dkms.log" | sed 's/^/     | /'
	fi
else
	echo "note: no kernel headers at $KDIR: the dkms build is not checked"
fi

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
