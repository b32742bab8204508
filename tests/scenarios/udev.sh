# udev/69-dm-bcache.rules for real, under systemd-udevd (copied from the
# host by vm/mkinitramfs.sh, with 60-persistent-storage.rules): a cache
# device formatted by make-bcache gets the properties probe-bcache exports
# and the link /dev/disk/by-dm-bcache/<uuid>; an empty disk, a mainline
# bcache device and one of ours under a newer signature (swap) get no such
# link; zeroing the superblock drops it, a new format makes a new one; and
# bcachectl create names the devices by their links.
# disks: cache=64M origin=64M plain=16M mainline=64M hidden=64M
. /tests/guest/dmb.sh

UDEVD=/lib/systemd/systemd-udevd
if [ ! -x "$UDEVD" ] || ! command -v udevadm >/dev/null; then
	skip "no systemd-udevd in the initramfs (the host has no udev package: apt-get install udev)"
fi
cache=$(disk cache)
origin=$(disk origin)
plain=$(disk plain)
mainline=$(disk mainline)
hidden=$(disk hidden)
SET=5e7c0de5-0000-4000-8000-00000000cafe
LINKS=/dev/disk/by-dm-bcache

# prop DEV KEY: the udev property KEY of DEV (empty if unset)
prop() {
	udevadm info --query=property --name="$1" | sed -n "s/^$2=//p"
}
# the dm-bcache links udev made, as "link -> device" lines
links() {
	for l in "$LINKS"/*; do
		[ -L "$l" ] && echo "${l##*/} -> $(readlink -f "$l")"
	done
}
settle() {
	udevadm settle --timeout=60
}
change() {
	udevadm trigger --action=change "$1" && settle
}

check "format the cache, with a label that needs escaping" \
	make-bcache -q -l 'fast ssd/1' --cset-uuid $SET "$cache"
uuid=$(bcache-super-show "$cache" | sed -n 's/^dev\.uuid	//p')
check "a mainline bcache cache device" sh -c "make-bcache-mainline -C $mainline >/tmp/mainline 2>&1"
check "one of ours ..." make-bcache -q "$hidden"
check "... under a swap signature (mkswap writes the first 4 KiB only)" mkswap "$hidden"
check "... is still a valid superblock for probe-bcache" probe-bcache -q "$hidden"

# The daemon, its log in a file; it started after the disks appeared, so
# replay their add events.
SYSTEMD_LOG_TARGET=console "$UDEVD" --resolve-names=never >/tmp/udevd.log 2>&1 &
udevd=$!
# ready once it answers a ping (a message sent while it is still setting
# up its control socket is dropped)
i=0
until udevadm control --ping --timeout=2 2>/dev/null || [ $i -ge 20 ]; do
	sleep 0.2
	i=$((i + 1))
done
check "systemd-udevd is running" kill -0 $udevd
check "... and answers" udevadm control --ping --timeout=10
check "udevadm trigger (block devices)" udevadm trigger --action=add --subsystem-match=block
check "udevadm settle" settle
info "links: $(links | tr '\n' ';')"
# for the admin guide (Documentation/dm-bcache.rst)
udevadm info --query=property --name="$cache" | grep -E '^(DEVNAME|DEVLINKS|ID_FS_|DM_BCACHE_)' |
	while IFS= read -r line; do info "ex: $line"; done

check_eq "ID_FS_TYPE" dm_bcache "$(prop "$cache" ID_FS_TYPE)"
check_eq "ID_FS_USAGE" other "$(prop "$cache" ID_FS_USAGE)"
check_eq "ID_FS_VERSION" "${DMB_FORMAT_VERSION:-3}" "$(prop "$cache" ID_FS_VERSION)"
check_eq "ID_FS_UUID is the cache's uuid" "$uuid" "$(prop "$cache" ID_FS_UUID)"
check_eq "ID_FS_UUID_ENC" "$uuid" "$(prop "$cache" ID_FS_UUID_ENC)"
check_eq "ID_FS_LABEL: unsafe characters as _" fast_ssd_1 "$(prop "$cache" ID_FS_LABEL)"
check_eq "ID_FS_LABEL_ENC: escaped as \\xNN" 'fast\x20ssd\x2f1' "$(prop "$cache" ID_FS_LABEL_ENC)"
check_eq "DM_BCACHE_SET_UUID" $SET "$(prop "$cache" DM_BCACHE_SET_UUID)"
check_eq "$LINKS/<uuid> points to the cache" "$cache" "$(readlink -f "$LINKS/$uuid")"
check "udevadm info lists the link" sh -c \
	"udevadm info --query=symlink --name=$cache | tr ' ' '\n' | grep -qx disk/by-dm-bcache/$uuid"
check_eq "60-persistent-storage.rules ran too: by-id/virtio-cache" "$cache" \
	"$(readlink -f /dev/disk/by-id/virtio-cache)"

# Nothing else is taken for a cache device.
check_eq "exactly one dm-bcache link" "$uuid -> $cache" "$(links)"
check_eq "the empty disk: no ID_FS_TYPE" "" "$(prop "$plain" ID_FS_TYPE)"
check_eq "the empty disk: no DM_BCACHE_SET_UUID" "" "$(prop "$plain" DM_BCACHE_SET_UUID)"
check_eq "the empty disk is still probed (its by-id link)" "$plain" \
	"$(readlink -f /dev/disk/by-id/virtio-plain)"
check_eq "mainline bcache: blkid's type stays" bcache "$(prop "$mainline" ID_FS_TYPE)"
check_eq "mainline bcache: no DM_BCACHE_SET_UUID" "" "$(prop "$mainline" DM_BCACHE_SET_UUID)"
check_eq "ours under swap: blkid's swap wins" swap "$(prop "$hidden" ID_FS_TYPE)"
check_eq "ours under swap: no DM_BCACHE_SET_UUID" "" "$(prop "$hidden" DM_BCACHE_SET_UUID)"

# bcachectl records the devices by their stable names.
# (dmsetup warns on stderr that it manages the nodes itself, as
# DM_DISABLE_UDEV=1 tells it to while udevd runs)
out=$(bcachectl create c "$cache" "$origin" 2>/tmp/err)
info "$out"
check_eq "bcachectl create names the cache by its link, the origin by by-id" \
	"created /dev/mapper/c: 0 $(blockdev --getsz "$origin") bcache $LINKS/$uuid /dev/disk/by-id/virtio-origin" \
	"$out"
check "the device works" dd if=/dev/mapper/c of=/dev/null bs=4k count=256 iflag=direct
check "settle (udev has seen the new device)" settle
check_eq "a dm-bcache device is no cache device" "" "$(prop /dev/mapper/c DM_BCACHE_SET_UUID)"
check "bcachectl remove" bcachectl remove c
check "settle" settle

# Zeroing the superblock drops the link at the next change event ...
check "zero the superblock" dd if=/dev/zero of="$cache" bs=4k seek=1 count=1 conv=fsync
check "change event" change "$cache"
check_eq "the link is gone" "" "$(links)"
check_eq "... and the properties" "" "$(prop "$cache" DM_BCACHE_SET_UUID)"
# ... and a new format gets a new one.
check "format again" make-bcache -q "$cache"
uuid2=$(bcache-super-show "$cache" | sed -n 's/^dev\.uuid	//p')
check "change event" change "$cache"
check_eq "the new uuid's link, only" "$uuid2 -> $cache" "$(links)"
check_eq "no label: no ID_FS_LABEL" "" "$(prop "$cache" ID_FS_LABEL)"

check "udevd exits" udevadm control --exit
wait $udevd
check_eq "udevd exited cleanly" 0 $?
while IFS= read -r line; do info "udevd: $line"; done </tmp/udevd.log
