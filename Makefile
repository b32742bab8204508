# dm-bcache top-level build. See README.md for the two set-up commands.
include vm/config.mk
export KVER KDIR BUILD KROOT

.PHONY: all module tools deps test initramfs clean checkpatch unit bench debug-kernel debug-initramfs

all: module tools

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-bcache modules

tools:
	$(MAKE) -C bcache-tools
	@mkdir -p $(BUILD)/tools
	$(CC) -O2 -Wall -Wextra -Werror -static -pthread \
		-o $(BUILD)/tools/dmb-stress tests/tools/dmb-stress.c
	$(CC) -O2 -Wall -Wextra -Werror -static -pthread \
		-o $(BUILD)/tools/dmb-overlap tests/tools/dmb-overlap.c
	$(CC) -O2 -Wall -Wextra -Werror -static \
		-o $(BUILD)/tools/dmb-replay-log tests/tools/dmb-replay-log.c
	$(CC) -O2 -Wall -Wextra -Werror -static \
		-o $(BUILD)/tools/dmb-crashload tests/tools/dmb-crashload.c

# Install every dependency (apt packages, the guest kernel image) and build.
deps:
	vm/deps.sh
	$(MAKE) all

initramfs: all
	vm/mkinitramfs.sh

# The debug guest kernel (KASAN, lockdep, kmemleak, ...; vm/debug.config),
# dm-bcache.ko for it and its initramfs, all under $(BUILD)/debug.
debug-kernel: tools
	vm/debug-kernel.sh

# The debug dm-bcache.ko and initramfs from the current sources.
debug-initramfs: tools
	vm/debug-kernel.sh module initramfs

# Run the whole suite in QEMU; T=name runs one scenario, J=n in parallel;
# KERNEL=debug under the debug kernel ('make debug-kernel' first).
test: $(if $(filter debug,$(KERNEL)),debug-initramfs,initramfs)
	tests/run $(if $(T),$(T))

# Benchmark in one QEMU guest: dm-bcache beside the raw devices, mainline
# bcache, dm-cache (smq) and dm-writecache. Report: $(BUILD)/bench/report.md.
# Not part of 'test'; asserts nothing. Knobs: see bench/run.sh --help.
bench: initramfs
	bench/run.sh

# Only the host-side suites (tests/host), no QEMU.
unit: tools
	tests/run 'host-*'

# Install the tools (built if needed), bcachectl, the man pages, the udev
# rule and, if it was built ('make module'), the module:
#   make install [DESTDIR=/tmp/stage]     (then depmod -a $(KVER) on the target)
# DKMS users install the module with dkms.conf instead.
.PHONY: install
install:
	$(MAKE) -C bcache-tools install DESTDIR=$(if $(DESTDIR),$(abspath $(DESTDIR)))
	install -D -m 0755 dmsetup-tables/bcachectl $(DESTDIR)/usr/sbin/bcachectl
	install -D -m 0644 udev/69-dm-bcache.rules \
		$(DESTDIR)/usr/lib/udev/rules.d/69-dm-bcache.rules
	@if [ -f dm-bcache/dm-bcache.ko ]; then \
		echo install -D -m 0644 dm-bcache/dm-bcache.ko \
			$(DESTDIR)/lib/modules/$(KVER)/extra/dm-bcache.ko; \
		install -D -m 0644 dm-bcache/dm-bcache.ko \
			$(DESTDIR)/lib/modules/$(KVER)/extra/dm-bcache.ko; \
	else \
		echo "install: dm-bcache/dm-bcache.ko is not built ('make module'): not installed"; \
	fi

checkpatch:
	vm/checkpatch.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-bcache clean
	$(MAKE) -C bcache-tools clean
	rm -rf $(BUILD)/initramfs* $(BUILD)/tests
