# dm-bcache top-level build. See README.md for the two set-up commands.
include vm/config.mk
export KVER KDIR BUILD KROOT

.PHONY: all module tools deps test initramfs clean checkpatch unit

all: module tools

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-bcache modules

tools:
	$(MAKE) -C bcache-tools
	@mkdir -p $(BUILD)/tools
	$(CC) -O2 -Wall -Wextra -Werror -static -pthread \
		-o $(BUILD)/tools/dmb-stress tests/tools/dmb-stress.c

# Install every dependency (apt packages, the guest kernel image) and build.
deps:
	vm/deps.sh
	$(MAKE) all

initramfs: all
	vm/mkinitramfs.sh

# Run the whole suite in QEMU; T=name runs one scenario, J=n in parallel.
test: initramfs
	tests/run $(if $(T),$(T))

# Only the host-side suites (tests/host), no QEMU.
unit: tools
	tests/run 'host-*'

checkpatch:
	vm/checkpatch.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-bcache clean
	$(MAKE) -C bcache-tools clean
	rm -rf $(BUILD)/initramfs* $(BUILD)/tests
