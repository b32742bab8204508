# The one place the kernel is pinned. The guest boots this Debian kernel
# image (unpacked, never installed) and the module is built against the
# headers of the same ABI. Bump both together by changing KVER.
KVER ?= 6.1.0-57-amd64
KDIR ?= /usr/src/linux-headers-$(KVER)
BUILD ?= $(CURDIR)/build
KROOT ?= $(BUILD)/kernel
