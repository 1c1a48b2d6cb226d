# ptilab: see README.md. `make` builds build/ptilab.efi; `make usb` the USB
# stick image build/ptilab.img; `make qemu` boots it
# under QEMU+OVMF, `make bochs` under Bochs+OVMF; `make test` runs the host
# tests and the QEMU and Bochs boot tests.

GO      ?= go
IMAGE   := build/ptilab.efi
USBIMG  := build/ptilab.img
HOST    := build/ptilab
LINUX32 := build/ptilab-linux386
QEMUFLAGS ?=
BOCHSFLAGS ?=

# Everything the image is built from.
SOURCES := $(shell find . -path ./build -prune -o \( -name '*.go' -o -name '*.s' -o -name '*.h' \) -print | grep -v '_test\.go$$') go.mod go.sum

.PHONY: all usb qemu bochs bochs-build linux test deps clean

all: $(IMAGE)

# The stick's plan and README.txt, embedded in the host tool.
STICKFILES := $(wildcard host/usbimage/*.plan host/usbimage/*.txt)

# The commit the tools and the image are built from (ptilab version, the
# machine record's ptilab_commit; host/image.Commit's form).
COMMIT = $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell test -z "$$(git status --porcelain 2>/dev/null)" || echo +dirty)

$(HOST): $(SOURCES) $(STICKFILES)
	$(GO) build -ldflags "-X main.commit=$(COMMIT)" -o $@ ./cmd/ptilab

# The 32-bit half of `ptilab linux` (cmd/ptilab-linux32), beside the host
# tool, which runs it for the compat rows.
$(LINUX32): $(SOURCES)
	GOARCH=386 $(GO) build -o $@ ./cmd/ptilab-linux32

$(IMAGE): $(HOST) $(SOURCES)
	$(HOST) build -o $@

# The USB stick image: a GPT disk with a FAT32 EFI System Partition holding
# the image as EFI/BOOT/BOOTX64.EFI, the hardware-sized ptilab.plan and
# README.txt (README.md, "Running on a real machine").
# PLAN=FILE puts that plan on the stick instead (refused, with the lines
# the image would ignore, when it has any: ptilab plan check). The stick
# is written every time (about a second): which plan it holds depends on
# PLAN, not on file dates, and a refused plan leaves no stick behind that
# holds an older one.
PLAN ?=

usb: $(HOST) $(IMAGE)
	rm -f $(USBIMG)
	$(HOST) usb -o $(USBIMG) $(if $(PLAN),-plan $(PLAN)) $(IMAGE)

# Boot the image under QEMU+OVMF (TCG, q35, no network); the serial console
# goes to the terminal and to build/serial.log, the run's results file to
# build/ptilab-results/; exits with the image's status.
qemu: $(IMAGE)
	@command -v qemu-system-x86_64 >/dev/null || { echo "make qemu: qemu-system-x86_64 not found; run 'make deps' (or: sudo apt-get install qemu-system-x86 ovmf)"; exit 1; }
	$(HOST) qemu -log build/serial.log -results build/ptilab-results $(QEMUFLAGS) $(IMAGE)

# Run the benchmarks on this machine's Linux kernel (no root needed),
# beside perf bench where linux-perf is installed; the output goes to the
# terminal, build/linux.log and a results file in build/linux-results/,
# which build/ptilab report, compare and plot read.
linux: $(HOST) $(LINUX32)
	$(HOST) linux -log build/linux.log -o build/linux-results $(if $(PLAN),-plan $(PLAN))

# Boot the image under the pinned Bochs with the 2 MiB OVMF (PCID and
# INVPCID executed, the TSC counting instructions); the serial console goes
# to the terminal and to build/bochs-serial.log; exits with the status of
# the image's PTILAB-END line. BOCHSFLAGS="-bochs /usr/bin/bochs" runs
# Debian's Bochs 2.7 instead.
bochs: $(IMAGE) bochs-build
	$(HOST) bochs -log build/bochs-serial.log $(BOCHSFLAGS) $(IMAGE)

# The pinned Bochs (host/bochs/pinned.env), built once into
# $$XDG_CACHE_HOME/ptilab (default ~/.cache/ptilab) and reused while the
# pin is unchanged. Its source is $$BOCHS_SOURCE: a git URL or clone of
# Bochs's repository (default https://github.com/bochs-emu/Bochs.git), or
# a tarball of its bochs/ tree at the pinned commit, checked against the
# SHA-256 in pinned.env (CI: ../shared/vendor/bochs-783b58fd6d9b.tar.xz).
bochs-build:
	host/bochs/build.sh

# The packages with tests built for GOARCH=386: the i386 ABI's check
# against golang.org/x/sys for linux/386, and the 32-bit tasks kernel's
# host tests, which need the kernel32host tag (the blob's build never sets
# it: kernel32 is vetted both ways), and the tasks core both kernels run
# (with the tag its rings copy as the host tests' machine does, without
# it by the blob's assembly, which its tests run too). test/run386 runs
# their test binaries, natively or under qemu-i386.
PKGS386 := ./linuxabi/ ./i386pae/kernel32/ ./tasks/core/

# The packages `ptilab linux` builds for GOARCH=386 (its compat rows' timed
# loops), tested natively or under qemu-i386 like the others.
LINUX386 := ./host/linuxrun/timed/ ./cmd/ptilab-linux32/

# Host unit tests (amd64, then 386), then the QEMU and Bochs boot tests
# (which build the image themselves), verbosely, so that the log shows each
# boot. The Bochs tests run the pinned Bochs (bochs-build).
test: bochs-build
	$(GO) vet ./...
	GOARCH=386 $(GO) vet $(PKGS386) $(LINUX386)
	GOARCH=386 $(GO) vet -tags kernel32host $(PKGS386)
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/test$$')
	GOARCH=386 $(GO) test -count=1 -timeout 20m -tags kernel32host -exec $(CURDIR)/test/run386 $(PKGS386)
	GOARCH=386 $(GO) test -count=1 -timeout 20m -exec $(CURDIR)/test/run386 ./tasks/core/ $(LINUX386)
	$(GO) test -count=1 -timeout 30m -v ./test/

# Install QEMU, OVMF, binutils (objcopy), qemu-user (qemu-i386, for the
# GOARCH=386 tests where the kernel runs no i386 programs) and what
# bochs-build needs (a C++ compiler, make, xz, git) with apt-get.
deps:
	@if command -v apt-get >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-x86 qemu-user ovmf u-boot-qemu binutils g++ make xz-utils git chromium fonts-liberation linux-perf; \
	else \
		echo "make deps: no apt-get here; install QEMU (qemu-system-x86_64, qemu-i386), OVMF, U-Boot's x86-64 ROM for QEMU (Debian's u-boot-qemu), binutils, a C++ compiler, make, xz, git and Chromium (the HTML report's test) with your package manager"; exit 1; \
	fi

clean:
	rm -rf build
