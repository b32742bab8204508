#!/bin/bash
# Build the debug guest kernel of 'make test KERNEL=debug': Debian's
# linux-source (the same 6.1 code as the pinned kernel) configured small
# (allnoconfig + vm/debug.config: KASAN, lockdep, kmemleak, DEBUG_LIST, ...),
# dm-bcache.ko built against it, and its own initramfs. Outputs, all under
# $BUILD/debug (never in git) except the image and initramfs:
#   src/linux-source-6.1   the unpacked source (once)
#   obj/                   the kernel build tree (O=), KDIR of the modules
#   root/                  boot/vmlinuz-REL, lib/modules/REL (modules_install)
#   mod/                   a copy of dm-bcache/ and the debug dm-bcache.ko
#   kernel.env             KVER/KDIR/KROOT/DMB_KO/... read by tests/run
#   $BUILD/vmlinux-REL     the uncompressed kernel (QEMU boots it via PVH)
#   $BUILD/initramfs-debug.cpio.gz
#
#   vm/debug-kernel.sh [STEP...]   steps: kernel module initramfs (default all);
#                                  config only unpacks and configures
#
# 'kernel' reconfigures when vm/debug.config changes and rebuilds
# incrementally (ccache when installed); 'module' rebuilds the debug
# dm-bcache.ko from the current dm-bcache/ sources. Nothing here is ever
# loaded into the host's kernel.
set -euo pipefail
# shellcheck source=vm/env.sh
. "$(dirname "$0")/env.sh"

die() { echo "debug-kernel.sh: error: $*" >&2; exit 1; }
say() { echo "debug-kernel.sh: $*"; }

TOP=$DMB_TOP
D=$BUILD/debug
TARBALL=/usr/src/linux-source-6.1.tar.xz
SRC=$D/src/linux-source-6.1
OBJ=$D/obj
DROOT=$D/root
MOD=$D/mod
FRAG=$TOP/vm/debug.config
ENVF=$D/kernel.env
JOBS=${JOBS:-$(nproc)}

# ---------------------------------------------------------------------------
deps() {
	local missing=() t
	for t in bc flex bison pahole; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ -f /usr/include/gelf.h ] || missing+=(libelf-dev)
	[ -f /usr/include/openssl/opensslv.h ] || missing+=(libssl-dev)
	command -v ccache >/dev/null || missing+=(ccache)
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing build dependencies (missing: ${missing[*]})"
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y ccache bc flex bison libelf-dev libssl-dev dwarves ||
			say "warning: apt-get install failed"
	fi
	for t in bc flex bison pahole; do
		command -v "$t" >/dev/null || die "$t missing (apt-get install bc flex bison dwarves)"
	done
	[ -f /usr/include/gelf.h ] || die "libelf-dev missing (the ORC unwinder's objtool needs it)"
	[ -f /usr/include/openssl/opensslv.h ] || die "libssl-dev missing"
}

# ccache through Debian's masquerade directory: transparent to Kbuild (same
# CC, same CONFIG_CC_VERSION_TEXT), so the tree and external modules agree.
use_ccache() {
	if [ -d /usr/lib/ccache ] && command -v ccache >/dev/null; then
		export PATH=/usr/lib/ccache:$PATH
		export CCACHE_DIR=${CCACHE_DIR:-$D/ccache}
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
		export CCACHE_BASEDIR=$D
		CCACHE=1
	else
		CCACHE=
	fi
}

kmake() { make -C "$SRC" O="$OBJ" ARCH=x86_64 "$@"; }

extract() {
	local stamp=$D/src/.stamp want
	[ -f "$TARBALL" ] || die "$TARBALL missing (apt-get install linux-source-6.1)"
	want="$(stat -c '%s %Y' "$TARBALL") $(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || true)"
	if [ -f "$SRC/Makefile" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	say "unpacking $TARBALL into $D/src"
	rm -rf "$D/src" "$OBJ"
	mkdir -p "$D/src"
	tar -C "$D/src" -xJf "$TARBALL"
	echo "$want" >"$stamp"
	local hv
	hv=$(dpkg-query -W -f '${Version}' "linux-headers-$KVER" 2>/dev/null || true)
	if [ -n "$hv" ] && [ "$hv" != "${want##* }" ]; then
		say "warning: linux-source-6.1 is ${want##* }, the pinned $KVER is $hv"
	fi
}

# allnoconfig + the fragment; then every line of the fragment must hold.
configure() {
	local stamp=$OBJ/.dmb-config-stamp want bad=0 line sym val got
	want=$(cat "$FRAG" "$D/src/.stamp" | sha256sum | cut -c1-64)
	if [ -f "$OBJ/.config" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	say "configuring: allnoconfig + ${FRAG#"$TOP"/}"
	mkdir -p "$OBJ"
	(cd "$SRC" && scripts/kconfig/merge_config.sh -n -O "$OBJ" "$FRAG") >"$D/config.log" 2>&1 ||
		{ tail -n 30 "$D/config.log"; die "merge_config.sh failed (see $D/config.log)"; }
	while read -r line; do
		case $line in
		CONFIG_*=*) sym=${line%%=*} val=${line#*=} ;;
		"# CONFIG_"*" is not set") sym=${line#\# } sym=${sym%% *} val=n ;;
		*) continue ;;
		esac
		got=$(grep -E "^$sym=|^# $sym is not set" "$OBJ/.config" || true)
		case $got in
		"# $sym is not set" | "") got=n ;;
		*) got=${got#*=} ;;
		esac
		if [ "$got" != "$val" ]; then
			echo "debug-kernel.sh: $sym: vm/debug.config wants $val, the kernel config has $got" >&2
			bad=1
		fi
	done <"$FRAG"
	[ $bad -eq 0 ] || die "vm/debug.config does not hold (dependencies?): fix the fragment"
	echo "$want" >"$stamp"
}

kernel() {
	local t0 t1 rel image
	deps
	use_ccache
	extract
	configure
	say "building bzImage + modules (-j$JOBS${CCACHE:+, ccache in $CCACHE_DIR}; log: $D/build.log)"
	t0=$(date +%s)
	if ! kmake -j"$JOBS" bzImage modules >"$D/build.log" 2>&1; then
		grep -E 'error|Error' "$D/build.log" | head -n 20
		tail -n 20 "$D/build.log"
		die "kernel build failed (see $D/build.log)"
	fi
	t1=$(date +%s)
	rel=$(kmake -s kernelrelease)
	say "kernel $rel built in $((t1 - t0))s"
	rm -rf "$DROOT/lib/modules/$rel"
	kmake -s INSTALL_MOD_PATH="$DROOT" modules_install >>"$D/build.log" 2>&1 ||
		die "modules_install failed (see $D/build.log)"
	rm -f "$DROOT/lib/modules/$rel/build" "$DROOT/lib/modules/$rel/source"
	depmod -b "$DROOT" "$rel"
	mkdir -p "$DROOT/boot"
	cp "$OBJ/arch/x86/boot/bzImage" "$DROOT/boot/vmlinuz-$rel"
	cp "$OBJ/System.map" "$DROOT/boot/System.map-$rel"
	cp "$OBJ/.config" "$DROOT/boot/config-$rel"
	# PVH boot of the ELF skips the in-guest decompression; copied after
	# the bzImage so that mkinitramfs.sh sees it as up to date.
	if LC_ALL=C readelf -n "$OBJ/vmlinux" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'; then
		cp "$OBJ/vmlinux" "$BUILD/vmlinux-$rel.tmp"
		mv "$BUILD/vmlinux-$rel.tmp" "$BUILD/vmlinux-$rel"
		image=$BUILD/vmlinux-$rel
	else
		rm -f "$BUILD/vmlinux-$rel"
		image=$DROOT/boot/vmlinuz-$rel
	fi
	cat >"$ENVF.tmp" <<EOF
# written by vm/debug-kernel.sh; read by tests/run for KERNEL=debug
KVER='$rel'
KDIR='$OBJ'
KROOT='$DROOT'
DMB_KO='$MOD/dm-bcache.ko'
DMB_INITRAMFS='$BUILD/initramfs-debug.cpio.gz'
DMB_DEBUG_IMAGE='$image'
EOF
	mv "$ENVF.tmp" "$ENVF"
}

load_env() {
	[ -f "$ENVF" ] || die "no debug kernel yet: run 'make debug-kernel'"
	# shellcheck source=/dev/null
	. "$ENVF"
}

# dm-bcache.ko for the debug kernel, built from a copy of dm-bcache/ so that
# the normal build's objects there are left alone. -g: faddr2line can turn
# the offsets of a KASAN/lockdep report into source lines.
module() {
	local f n
	load_env
	use_ccache
	mkdir -p "$MOD"
	for f in "$TOP"/dm-bcache/*.[ch] "$TOP/dm-bcache/Kbuild" "$TOP/dm-bcache/Makefile"; do
		[ -f "$f" ] || continue
		case $f in *.mod.c) continue ;; esac
		cmp -s "$f" "$MOD/${f##*/}" || cp -p "$f" "$MOD/"
	done
	for f in "$MOD"/*.[ch]; do
		n=${f##*/}
		case $n in *.mod.c) continue ;; esac
		[ -f "$TOP/dm-bcache/$n" ] || rm -f "$f" "${f%.c}.o"
	done
	make -C "$KDIR" M="$MOD" KCFLAGS=-g modules >"$D/module.log" 2>&1 ||
		{ grep -E 'error|warning' "$D/module.log" | head -n 30; die "dm-bcache build failed (see $D/module.log)"; }
	grep -E 'warning:' "$D/module.log" | head -n 20 || true
	say "$MOD/dm-bcache.ko ($(modinfo -F vermagic "$MOD/dm-bcache.ko"))"
}

initramfs() {
	load_env
	KVER=$KVER KDIR=$KDIR KROOT=$KROOT DMB_KO=$DMB_KO DMB_INITRAMFS=$DMB_INITRAMFS \
		"$TOP/vm/mkinitramfs.sh"
}

# ---------------------------------------------------------------------------
[ $# -gt 0 ] || set -- kernel module initramfs
for step in "$@"; do
	case $step in
	kernel | module | initramfs) "$step" ;;
	config) deps && extract && configure ;;
	*) die "unknown step '$step' (config, kernel, module, initramfs)" ;;
	esac
done
