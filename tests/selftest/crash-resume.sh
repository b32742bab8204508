# A crash in boot 1 followed by a clean boot 2 passes, and the disk
# contents written before the crash are there in boot 2.
# disks: d=8M
# boots: 2
# expect: PASS
dev=$(disk d)
if [ "$BOOT" = 1 ]; then
	check "write a marker block" sh -c "echo dmb-crash-resume | dd of=$dev bs=4096 conv=sync oflag=direct"
	crash_now
fi
check_eq "boot index" 2 "$BOOT"
check_eq "marker survived the crash" dmb-crash-resume "$(dd if="$dev" bs=4096 count=1 iflag=direct 2>/dev/null | tr -d '\0' | head -n 1)"
