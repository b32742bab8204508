#!/bin/bash
# Install everything dm-bcache needs on a Debian 12 machine (run as root by
# `make deps`), and unpack -- never install -- the guest kernel image into
# $KROOT for the QEMU tests. Safe to re-run.
set -euo pipefail
# shellcheck source=vm/env.sh
. "$(dirname "$0")/env.sh"

die() { echo "deps.sh: error: $*" >&2; exit 1; }
log() { echo "deps.sh: $*"; }

export DEBIAN_FRONTEND=noninteractive
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "must run as root (or with sudo available)"
	SUDO=sudo
fi

PKGS=(
	build-essential "linux-headers-$KVER" qemu-system-x86 busybox-static
	dmsetup lvm2 fio thin-provisioning-tools bcache-tools cpio kmod
	xz-utils gnuplot-nox linux-source-6.1 bc
	# the udev rule's test runs the host's systemd-udevd in the guest;
	# tests/host/dkms.sh builds the module with the real dkms (which signs
	# it with a key it makes with openssl)
	udev dkms openssl
)

log "apt-get update"
$SUDO apt-get update -q
log "installing: ${PKGS[*]}"
if ! $SUDO apt-get install -y -q --no-install-recommends "${PKGS[@]}"; then
	if ! apt-cache show "linux-headers-$KVER" >/dev/null 2>&1; then
		die "linux-headers-$KVER is not in the archive any more; bump KVER in vm/config.mk"
	fi
	die "apt-get install failed"
fi

# --- the headers the module is built against -------------------------------
[ -d "$KDIR" ] || die "kernel headers not found at KDIR=$KDIR"
hdr_rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$KDIR/include/generated/utsrelease.h" 2>/dev/null || true)
[ "$hdr_rel" = "$KVER" ] ||
	die "headers in $KDIR are for kernel release '${hdr_rel:-unknown}', not KVER=$KVER"
hdr_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER" 2>/dev/null || true)
[ -n "$hdr_ver" ] || die "package linux-headers-$KVER is not installed"

# --- the guest kernel image, unpacked into $KROOT ---------------------------
stamp=$KROOT/.dmb-image
want="linux-image-$KVER $hdr_ver"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -d "$KROOT/lib/modules/$KVER" ] && [ -f "$KROOT/boot/vmlinuz-$KVER" ]; then
	log "guest kernel $want already unpacked in $KROOT"
else
	mkdir -p "$BUILD"
	deb=$BUILD/linux-image-${KVER}_${hdr_ver}_amd64.deb
	if [ ! -s "$deb" ]; then
		log "downloading linux-image-$KVER=$hdr_ver into $BUILD"
		# Ask for the headers' version first; fall back to whatever the
		# archive has, so that a mismatch is reported clearly below.
		# apt fetches as user _apt: give it a directory it may write to.
		dl=$(mktemp -d)
		chmod 0777 "$dl"
		(cd "$dl" && { apt-get download -q "linux-image-$KVER=$hdr_ver" ||
			apt-get download -q "linux-image-$KVER"; }) ||
			{ rm -rf "$dl"; die "apt-get download linux-image-$KVER failed"; }
		mv "$dl"/linux-image-"${KVER}"_*.deb "$BUILD"/
		rm -rf "$dl"
		# shellcheck disable=SC2012 # plain file names, newest first
		deb=$(ls -t "$BUILD"/linux-image-"${KVER}"_*.deb | head -n 1)
	fi
	img_ver=$(dpkg-deb -f "$deb" Version)
	if [ "$img_ver" != "$hdr_ver" ]; then
		die "version mismatch: linux-headers-$KVER is $hdr_ver but linux-image-$KVER ($deb) is $img_ver; install matching versions (apt-get install linux-headers-$KVER=$img_ver) or bump KVER"
	fi
	log "unpacking $deb into $KROOT"
	tmp=$KROOT.tmp.$$
	rm -rf "$tmp"
	dpkg -x "$deb" "$tmp"
	[ -d "$tmp/lib/modules/$KVER" ] || die "$deb has no lib/modules/$KVER"
	[ -f "$tmp/boot/vmlinuz-$KVER" ] || die "$deb has no boot/vmlinuz-$KVER"
	# The package ships no modules.dep (its postinst makes it): make it here.
	depmod -b "$tmp" "$KVER"
	rm -rf "$KROOT"
	mv "$tmp" "$KROOT"
	echo "$want" >"$stamp"
fi

[ -d "$KROOT/lib/modules/$KVER" ] || die "$KROOT/lib/modules/$KVER missing"
[ -f "$KROOT/lib/modules/$KVER/modules.dep" ] || depmod -b "$KROOT" "$KVER"
img_ver=$(cut -d' ' -f2 "$stamp")
[ "$img_ver" = "$hdr_ver" ] ||
	die "version mismatch: headers $hdr_ver, unpacked image $img_ver"
log "ok: headers and guest image are both $KVER ($hdr_ver)"
