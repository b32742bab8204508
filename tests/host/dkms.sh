#!/bin/bash
# Host: the real dkms builds dm-bcache.ko from dkms.conf for the pinned
# kernel (KVER and KDIR of vm/config.mk). 'dkms add' and 'dkms build' run
# on private trees under a temporary directory (--sourcetree, --dkmstree,
# --installtree; the module signing key and certificate there too), so
# nothing in /usr/src, /var/lib/dkms or /lib/modules is touched, which is
# checked. The module is never installed, and never loaded.
#
# dkms has no option for the signing key: it takes mok_signing_key and
# mok_certificate from /etc/dkms/framework.conf, where they are commented
# out by default, else from the environment; unset, 'dkms build' would
# create /var/lib/dkms/mok.key. So both are set here, to files in the
# temporary directory (dkms creates them with openssl and signs with
# them).
set -u
TOP=${DMB_TOP:?}
work=$(mktemp -d /tmp/dkms-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }
show() { sed 's/^/     | /' "$@"; }
finish() {
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
	exit
}

# KVER and KDIR as the top Makefile has them (vm/config.mk)
# shellcheck source=vm/env.sh
. "$TOP/vm/env.sh"

if ! command -v dkms >/dev/null 2>&1; then
	bad "dkms is not installed (apt-get install dkms; 'make deps' installs it)"
	finish
fi
if [ ! -d "$KDIR/include" ]; then
	bad "no kernel headers at KDIR=$KDIR ('make deps' installs linux-headers-$KVER)"
	finish
fi
echo "note: $(dkms --version), kernel $KVER, headers $KDIR"

conf=$TOP/dkms.conf
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$conf")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$conf")
# .version = {0, 1, 0} in the target_type
tver=$(sed -n 's/^[[:space:]]*\.version[[:space:]]*=[[:space:]]*{[[:space:]]*\([0-9]*\),[[:space:]]*\([0-9]*\),[[:space:]]*\([0-9]*\)[[:space:]]*}.*/\1.\2.\3/p' \
	"$TOP/dm-bcache/target.c")
if [ "$name" = dm-bcache ] && [ -n "$ver" ]; then
	ok "dkms.conf: $name $ver"
else
	bad "dkms.conf: PACKAGE_NAME '$name', PACKAGE_VERSION '$ver'"
	finish
fi
if [ "$ver" = "$tver" ]; then
	ok "PACKAGE_VERSION is the target's version (dm-bcache/target.c)"
else
	bad "dkms.conf's PACKAGE_VERSION $ver, the target's .version ${tver:-not found}"
fi

# What dkms could write to when it is not told otherwise.
snapshot() {
	{
		find /usr/src /lib/modules -maxdepth 1 -printf '%p %y %l\n'
		find /var/lib/dkms "/lib/modules/$KVER" /etc/dkms -printf '%p %y %s %T@ %l\n'
	} 2>/dev/null | LC_ALL=C sort
}
snapshot >"$work/before"
loaded() { grep -c '^dm_bcache ' /proc/modules; }
[ -r /proc/modules ] && loaded_before=$(loaded)

# The source tree as dkms.conf's header says to lay it out:
# <source tree>/dm-bcache-<version>/{dkms.conf,dm-bcache/}, sources only.
src=$work/src/$name-$ver
mkdir -p "$src/dm-bcache"
cp "$conf" "$src/"
cp "$TOP"/dm-bcache/*.[ch] "$TOP"/dm-bcache/Kbuild "$TOP"/dm-bcache/Makefile "$src/dm-bcache/"
rm -f "$src"/dm-bcache/*.mod.c

tree=$work/dkms
mkdir -p "$tree"
export mok_signing_key=$work/mok.key mok_certificate=$work/mok.pub
dk() {
	dkms --sourcetree "$work/src" --dkmstree "$tree" --installtree "$work/install" \
		--kernelsourcedir "$KDIR" -k "$KVER" -m "$name" -v "$ver" "$@"
}

if dk add >"$work/add.log" 2>&1; then
	ok "dkms add"
else
	bad "dkms add failed"
	show "$work/add.log"
fi
if [ "$(readlink "$tree/$name/$ver/source")" = "$src" ]; then
	ok "dkms add: $tree/$name/$ver/source is the source tree"
else
	bad "dkms add: no source link in the private dkms tree"
fi

t0=$EPOCHREALTIME
if dk build >"$work/build.log" 2>&1; then
	ok "dkms build ($(printf '%.0f' "$(echo "$EPOCHREALTIME - $t0" | bc)")s)"
else
	bad "dkms build failed"
	show "$work/build.log"
	for f in "$tree/$name/$ver/build/make.log" "$tree/$name/$ver/$KVER"/*/log/make.log; do
		[ -f "$f" ] && tail -n 30 "$f" | show
	done
fi

status=$(dk status 2>&1)
if echo "$status" | grep -q "^$name/$ver, $KVER, [^:]*: built$"; then
	ok "dkms status: $status"
else
	bad "dkms status: '$status' (want '$name/$ver, $KVER, ARCH: built')"
fi

ko=$(find "$tree/$name/$ver/$KVER" -path '*/module/dm-bcache.ko*' 2>/dev/null | head -n 1)
if [ -n "$ko" ] && [ -s "$ko" ]; then
	ok "built: ${ko#"$work"/}"
	vermagic=$(modinfo -F vermagic "$ko")
	if [ "${vermagic%% *}" = "$KVER" ]; then
		ok "vermagic: $vermagic"
	else
		bad "vermagic '$vermagic': not for $KVER"
	fi
	# the whole vermagic (SMP, preempt, modversions ...) as the guest
	# kernel's own modules have it
	ref=$(find "$KROOT/lib/modules/$KVER/kernel/drivers/md" -name 'dm-mod.ko*' 2>/dev/null | head -n 1)
	if [ -n "$ref" ]; then
		want=$(modinfo -F vermagic "$ref")
		if [ "$vermagic" = "$want" ]; then
			ok "vermagic is that of the pinned kernel's own dm-mod.ko"
		else
			bad "vermagic '$vermagic', the pinned kernel's dm-mod.ko has '$want'"
		fi
	else
		echo "note: no unpacked guest kernel in $KROOT: the full vermagic is not compared"
	fi
	if [ "$(modinfo -F name "$ko")" = dm_bcache ] && [ "$(modinfo -F license "$ko")" = GPL ]; then
		ok "modinfo: dm_bcache, GPL, depends $(modinfo -F depends "$ko")"
	else
		bad "modinfo: name '$(modinfo -F name "$ko")', license '$(modinfo -F license "$ko")'"
	fi
	if [ -s "$mok_signing_key" ]; then
		signer=$(modinfo -F signer "$ko")
		if [ -n "$signer" ]; then
			ok "signed with the private key ($signer)"
		else
			bad "dkms made a signing key but the module is not signed"
		fi
	else
		echo "note: dkms made no signing key (openssl or sign-file missing?): module not signed"
	fi
else
	bad "no dm-bcache.ko in $tree/$name/$ver/$KVER"
	find "$tree" | show
fi
if [ -f "$(find "$tree/$name/$ver/$KVER" -path '*/log/make.log' 2>/dev/null | head -n 1)" ]; then
	ok "the build log is kept in the private dkms tree"
else
	bad "no make.log in the private dkms tree"
fi
if [ ! -e "$work/install" ]; then
	ok "nothing installed (no install tree created)"
else
	bad "dkms wrote to the install tree: $(find "$work/install" | head -n 5 | tr '\n' ' ')"
fi

snapshot >"$work/after"
if cmp -s "$work/before" "$work/after"; then
	ok "/usr/src, /var/lib/dkms, /lib/modules/$KVER, /etc/dkms untouched"
else
	bad "dkms changed system trees:"
	diff "$work/before" "$work/after" | head -n 20 | show
fi
if [ ! -r /proc/modules ]; then
	echo "note: no /proc/modules here: the host's loaded modules are not compared"
elif [ "$(loaded)" = "$loaded_before" ]; then
	ok "the host's loaded modules: dm_bcache as before ($loaded_before)"
else
	bad "dm_bcache was loaded into the host's kernel"
fi
finish
