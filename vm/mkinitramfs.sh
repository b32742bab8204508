#!/bin/bash
# Build $BUILD/initramfs.cpio.gz, the whole userspace of the QEMU test guest,
# from scratch: busybox, dmsetup, fio and a few other tools with their
# libraries, the kernel modules the tests need (resolved with their
# dependencies from the unpacked guest kernel in $KROOT), dm-bcache.ko and
# our bcache-tools when built, and tests/guest + tests/scenarios as /tests.
set -euo pipefail
# shellcheck source=vm/env.sh
. "$(dirname "$0")/env.sh"

die() { echo "mkinitramfs.sh: error: $*" >&2; exit 1; }
warn() { echo "mkinitramfs.sh: warning: $*" >&2; }

TOP=$DMB_TOP
# DMB_INITRAMFS: another output (vm/debug-kernel.sh's, with its own KVER,
# KDIR, KROOT and DMB_KO); the staging tree is named after it.
OUT=${DMB_INITRAMFS:-$BUILD/initramfs.cpio.gz}
ROOT=${OUT%.cpio.gz}.root
MODSRC=$KROOT/lib/modules/$KVER
MODDST=lib/modules/$KVER
DMB_KO=${DMB_KO:-$TOP/dm-bcache/dm-bcache.ko}
STUBS=$BUILD/stubs

# Kernel modules for the guest; their dependencies are added automatically.
MODULES=(
	virtio_pci virtio_blk
	dm-mod dm-delay dm-flakey dm-log-writes dm-cache dm-cache-smq
	dm-writecache dm-bufio dm-zero dm-thin-pool
	brd null_blk scsi_debug sd_mod loop
	bcache libcrc32c crc32c_generic crc32c-intel crc64_rocksoft_generic
)

# Host binaries copied with their shared libraries: "source:destination".
BINARIES=(
	/sbin/dmsetup:/sbin/dmsetup
	/usr/bin/fio:/usr/bin/fio
	/usr/sbin/blockdev:/sbin/blockdev
	/usr/sbin/blkdiscard:/sbin/blkdiscard
	/usr/sbin/blkid:/sbin/blkid
	/usr/sbin/wipefs:/sbin/wipefs
	/usr/sbin/pdata_tools:/usr/sbin/pdata_tools
	# Debian's bcache-tools, for comparing against the mainline format.
	/usr/sbin/make-bcache:/usr/sbin/make-bcache-mainline
	/usr/sbin/bcache-super-show:/usr/sbin/bcache-super-show-mainline
)
PDATA_LINKS=(cache_check cache_dump cache_metadata_size cache_repair
	cache_restore cache_writeback thin_check thin_dump thin_ls
	thin_metadata_size thin_repair thin_restore era_check era_dump)

# fio links the libraries of its network/RDMA/pmem engines (ceph, gluster,
# ICU, ... over 80 MB). The guest never uses those engines, so they are
# replaced by tiny stubs exporting the same symbols and versions (fio is
# linked with BIND_NOW, so the symbols must exist); a stub aborts if called.
STUB_SONAMES=(libgfapi.so.0 libnbd.so.0 libibverbs.so.1 librdmacm.so.1
	librados.so.2 librbd.so.1 libpmemblk.so.1 libpmem.so.1)

[ -d "$MODSRC" ] || die "$MODSRC missing: run 'make deps' first"
[ -f "$KROOT/boot/vmlinuz-$KVER" ] || die "$KROOT/boot/vmlinuz-$KVER missing: run 'make deps'"
[ -f "$MODSRC/modules.dep" ] || depmod -b "$KROOT" "$KVER"

# ---------------------------------------------------------------------------
build_stubs() {
	local bin=$1 stamp sum soname real c v
	sum=$(sha256sum "$bin" | cut -c1-64)
	stamp=$STUBS/.stamp
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
		return 0
	fi
	command -v gcc >/dev/null || return 1
	rm -rf "$STUBS"
	mkdir -p "$STUBS/src"
	objdump -T "$bin" | awk '$0 ~ /\*UND\*/ { v = $(NF-1); gsub(/[()]/, "", v); print $NF, v }' \
		>"$STUBS/src/undef"
	for soname in "${STUB_SONAMES[@]}"; do
		real=$(ldd "$bin" | awk -v s="$soname" '$1 == s && $3 ~ /^\// { print $3 }')
		if [ -z "$real" ]; then
			continue # not linked (any more): nothing to stub
		fi
		objdump -T "$real" | awk '$0 !~ /\*UND\*/ && NF >= 6 { print $NF }' |
			sort -u >"$STUBS/src/$soname.defs"
		c=$STUBS/src/$soname.c
		v=$STUBS/src/$soname.ver
		awk -v defs="$STUBS/src/$soname.defs" -v c="$c" -v ver="$v" '
			BEGIN { while ((getline s < defs) > 0) def[s] = 1
				print "#include <unistd.h>\n#include <stdlib.h>\n#include <string.h>" > c
				print "static void __attribute__((noreturn)) dmb_stub(const char *n)\n{" > c
				print "\tstatic const char m[] = \"dm-bcache guest: fio engine library stubbed out, called: \";" > c
				print "\tif (write(2, m, sizeof(m) - 1) < 0 || write(2, n, strlen(n)) < 0 || write(2, \"\\n\", 1) < 0)\n\t\tabort();\n\tabort();\n}" > c }
			($1 in def) && !($1 in seen) { seen[$1] = 1
				printf "void %s(void) { dmb_stub(\"%s\"); }\n", $1, $1 > c
				if ($2 != "Base") syms[$2] = syms[$2] "\t" $1 ";\n" }
			END { n = 0; for (k in syms) { printf "%s {\nglobal:\n%s};\n", k, syms[k] > ver; n++ }
				if (n == 0) print "{ global: *; };" > ver }' "$STUBS/src/undef"
		gcc -shared -fPIC -O1 -w -o "$STUBS/$soname" "$c" \
			-Wl,-soname,"$soname" -Wl,--version-script="$v" || return 1
	done
	echo "$sum" >"$stamp"
}

# Copy one file to the same path inside the image (following symlinks).
put() {
	local src=$1 dst=${2:-$1}
	mkdir -p "$ROOT$(dirname "$dst")"
	rm -f "$ROOT$dst"
	cp -L "$src" "$ROOT$dst"
}

# Copy a binary and the libraries ldd resolves for it (stubs where built).
put_bin() {
	local src=$1 dst=$2 line lib path
	put "$src" "$dst"
	chmod 0755 "$ROOT$dst"
	# Scripts and static binaries need no libraries.
	if ! file_is_dynamic "$src"; then
		return 0
	fi
	while read -r line; do
		case $line in
		*"not found"*) die "$src: library $line" ;;
		*" => /"*)
			lib=${line%% =>*}
			path=${line#*=> }
			path=${path%% (*}
			if [ "${path#"$STUBS"/}" != "$path" ]; then
				put "$path" "/lib/x86_64-linux-gnu/$lib"
			else
				put "$path"
			fi
			;;
		/*) put "${line%% (*}" ;; # the loader
		esac
	done < <(LD_LIBRARY_PATH=${STUBS_OK:+$STUBS} ldd "$src" 2>/dev/null)
}

file_is_dynamic() {
	LC_ALL=C readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'
}

# The uncompressed kernel, booted by QEMU through its PVH entry point: saves
# the ~3 s a TCG guest spends decompressing the xz bzImage at every boot.
# tests/run falls back to the bzImage when this is missing.
extract_vmlinux() {
	local z=$KROOT/boot/vmlinuz-$KVER out=$BUILD/vmlinux-$KVER off
	[ -s "$out" ] && [ "$out" -nt "$z" ] && return 0
	rm -f "$out"
	off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$z" | head -n 1 | cut -d: -f1) || true
	[ -n "$off" ] || { warn "no xz stream in $z: guests boot the bzImage"; return 0; }
	# the data after the xz stream makes xz exit non-zero: judge the output
	tail -c +$((off + 1)) "$z" | xz -dc 2>/dev/null >"$out.tmp" || true
	if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] &&
		LC_ALL=C readelf -n "$out.tmp" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'; then
		mv "$out.tmp" "$out"
	else
		rm -f "$out.tmp"
		warn "could not extract a PVH-bootable vmlinux from $z: guests boot the bzImage"
	fi
}

# ---------------------------------------------------------------------------
start=$(date +%s.%N)
extract_vmlinux
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt,root,tests,lib64}
mkdir -p "$ROOT"/usr/{bin,sbin,lib,local/bin,local/sbin}
ln -s usr/lib "$ROOT/lib"
# The kernel opens /dev/console for /init before devtmpfs is mounted.
if [ "$(id -u)" -eq 0 ]; then
	mknod -m 0600 "$ROOT/dev/console" c 5 1
fi
: >"$ROOT/etc/ld.so.conf"
ln -s /proc/mounts "$ROOT/etc/mtab"
echo 'root:x:0:0:root:/root:/bin/sh' >"$ROOT/etc/passwd"
echo 'root:x:0:' >"$ROOT/etc/group"

# busybox and its applets (real binaries copied below replace the links)
BUSYBOX=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
file_is_dynamic "$BUSYBOX" && die "$BUSYBOX is not static: install busybox-static"
cp "$BUSYBOX" "$ROOT/bin/busybox"
while read -r applet; do
	[ -e "$ROOT/$applet" ] || [ -L "$ROOT/$applet" ] || ln -s /bin/busybox "$ROOT/$applet"
done < <("$ROOT/bin/busybox" --list-full)

STUBS_OK=
if build_stubs /usr/bin/fio && LD_LIBRARY_PATH=$STUBS /usr/bin/fio --version >/dev/null 2>&1; then
	STUBS_OK=1
else
	warn "fio's library stubs failed (gcc missing?): copying the real libraries (~80 MB)"
fi
for b in "${BINARIES[@]}"; do
	put_bin "${b%%:*}" "${b#*:}"
done
for l in "${PDATA_LINKS[@]}"; do
	ln -sf pdata_tools "$ROOT/usr/sbin/$l"
done

# our own bcache-tools, first in PATH (/usr/local/sbin)
ntools=0
if [ -d "$TOP/bcache-tools" ]; then
	while read -r -d '' t; do
		put_bin "$t" "/usr/local/sbin/$(basename "$t")"
		ntools=$((ntools + 1))
	done < <(find "$TOP/bcache-tools" -maxdepth 1 -type f -perm -u+x -print0 | sort -z)
fi

# systemd-udevd and udevadm (Debian's udev package), if the host has them,
# for the scenarios that test our udev rule (tests/scenarios/udev.sh); only
# they start the daemon. The rules: ours, and 60-persistent-storage.rules,
# which runs blkid first (ours skips devices blkid recognised) and makes
# the /dev/disk/by-id links bcachectl prefers. The rule runs
# /usr/sbin/probe-bcache, where 'make install' puts it.
UDEVD=/lib/systemd/systemd-udevd
UDEV_RULES=(/lib/udev/rules.d/60-persistent-storage.rules "$TOP/udev/69-dm-bcache.rules")
udev=
if [ -x "$UDEVD" ] && UDEVADM=$(command -v udevadm); then
	put_bin "$UDEVADM" /bin/udevadm
	# Debian's systemd-udevd is a link to udevadm, which acts by its name
	if [ "$(readlink -f "$UDEVD")" = "$(readlink -f "$UDEVADM")" ]; then
		mkdir -p "$ROOT$(dirname "$UDEVD")"
		ln -sf /bin/udevadm "$ROOT$UDEVD"
	else
		put_bin "$UDEVD" "$UDEVD"
	fi
	for r in "${UDEV_RULES[@]}"; do
		[ -f "$r" ] || die "udev rule $r missing"
		install -D -m 0644 "$r" "$ROOT/usr/lib/udev/rules.d/${r##*/}"
	done
	mkdir -p "$ROOT/etc/udev/rules.d"
	if [ -x "$ROOT/usr/local/sbin/probe-bcache" ]; then
		ln -sf /usr/local/sbin/probe-bcache "$ROOT/usr/sbin/probe-bcache"
	fi
	udev=", udevd"
else
	warn "no $UDEVD or udevadm on the host (apt-get install udev): the udev scenario will skip"
fi

# kernel modules with their dependencies
mods=("${MODULES[@]}")
if [ -f "$DMB_KO" ]; then
	vermagic=$(modinfo -F vermagic "$DMB_KO")
	[ "${vermagic%% *}" = "$KVER" ] ||
		warn "$DMB_KO is built for '${vermagic%% *}', the guest runs $KVER: it will not load"
	dmb_deps=$(modinfo -F depends "$DMB_KO" | tr ',' ' ')
	# shellcheck disable=SC2206 # word splitting wanted
	mods+=($dmb_deps)
fi
mkdir -p "$ROOT/$MODDST"
for m in "${mods[@]}"; do
	modprobe -S "$KVER" -d "$KROOT" --show-depends "$m" ||
		die "kernel module '$m' not found in $MODSRC"
done | while read -r kind path _; do
	[ "$kind" = insmod ] || continue # "builtin NAME": in the kernel image
	put "$path" "/${path#"$KROOT"/}"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$MODSRC/$f" ] && cp "$MODSRC/$f" "$ROOT/$MODDST/"
done
if [ -f "$DMB_KO" ]; then
	mkdir -p "$ROOT/$MODDST/extra"
	cp "$DMB_KO" "$ROOT/$MODDST/extra/dm-bcache.ko"
fi
# -e -E reports symbols that neither the kernel nor a module in the image
# exports (Debian's System.map is a placeholder; Module.symvers is real).
depmod -b "$ROOT" -e -E "$KDIR/Module.symvers" "$KVER"
if [ -f "$DMB_KO" ]; then
	modprobe -S "$KVER" -d "$ROOT" --show-depends dm-bcache >/dev/null ||
		die "dm-bcache does not resolve in the image"
fi

# the test code: /init and /tests
[ -f "$TOP/tests/guest/init" ] || die "tests/guest/init missing"
cp -r "$TOP/tests/guest" "$ROOT/tests/guest"
[ -d "$TOP/tests/scenarios" ] && cp -r "$TOP/tests/scenarios" "$ROOT/tests/scenarios"
cp "$TOP/tests/guest/init" "$ROOT/init"
chmod 0755 "$ROOT/init"

ldconfig -r "$ROOT" 2>/dev/null || true

mkdir -p "$(dirname "$OUT")"
(cd "$ROOT" && find . -print0 | LC_ALL=C sort -z |
	cpio --null --create --format=newc --owner=0:0 --reproducible --quiet) |
	gzip -1 >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"

end=$(date +%s.%N)
nmods=$(find "$ROOT/$MODDST" -name '*.ko' | wc -l)
printf 'mkinitramfs.sh: %s (%s, %d modules%s, %d bcache-tools%s, %.1fs)\n' \
	"$OUT" "$(du -h "$OUT" | cut -f1)" "$nmods" \
	"$([ -f "$DMB_KO" ] && echo ' incl. dm-bcache' || echo ', no dm-bcache.ko')" \
	"$ntools" "$udev" "$(echo "$end - $start" | bc)"
