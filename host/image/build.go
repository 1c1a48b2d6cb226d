// Package image builds ptilab.efi: the kernel program compiled by the stock
// Go toolchain as a position-independent GOOS=linux GOARCH=amd64
// executable whose entry point is goos.entry, then converted into a
// relocatable UEFI application (host/efiimage).
package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ptilab/ptilab/host/efiimage"
)

const (
	// Package is the kernel program.
	Package = "./cmd/ptilab-efi"
	// EntrySymbol is the PE entry point (the linker's -E).
	EntrySymbol = "github.com/ptilab/ptilab/goos.entry"
	// TextAddress is where the linker puts .text (-T); the image's first
	// byte, its PE ImageBase, is 4 KiB below. It lies above the RAM of
	// small machines and in the PCI hole of larger ones, so the firmware
	// usually relocates the image: relocation is the path every boot
	// takes. goos.ELFLinkBase must equal TextAddress - 0x1000.
	TextAddress = 0x80001000
)

// LDFlags are the linker flags of the kernel program.
func LDFlags() string {
	return fmt.Sprintf("-E %s -T %#x -linkmode=internal", EntrySymbol, TextAddress)
}

// GOAMD64 is the microarchitecture level the kernel program is built for
// (the go command's GOAMD64; Go's doc "MinimumRequirements"). It is pinned
// rather than taken from the environment: v3 (AVX, AVX2) needs
// CR4.OSXSAVE, which goos clears at boot, and the runtime then refuses to
// start ("This program can only be run on AMD64 processors with v3
// microarchitecture support"); v2 needs SSE4.2, POPCNT and CMPXCHG16B,
// which not every x86-64 machine or emulator model the image boots on has.
const GOAMD64 = "v1"

// Env returns environ with the variables that fix the kernel program's
// build: no cgo, GOOS=linux, GOARCH=amd64 and GOAMD64. They come last, so
// that they override any value environ has (os/exec keeps the last of
// duplicate keys).
func Env(environ []string) []string {
	return append(environ[:len(environ):len(environ)], "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOAMD64="+GOAMD64)
}

// Commit names the source the module at root is built from, as the image
// records it (its machine record's ptilab_commit): the git commit, 12
// hex digits, with "+dirty" when the work tree has changes git tracks
// or untracked files it does not ignore; "unknown" outside a git
// checkout or without git.
func Commit(ctx context.Context, root string) string {
	rev, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(rev))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain").Output(); err != nil || len(st) > 0 {
		c += "+dirty"
	}
	return c
}

// Build compiles the kernel program of the module at root into elfPath and
// converts it into the UEFI application efiPath, with the source's commit
// (Commit) in the program's main.commit. The go command is $GO or
// "go" from PATH. tags are build tags (go build -tags): the product has
// none; test images add ones such as ptilab_bug_pcide (package pti).
func Build(ctx context.Context, root, elfPath, efiPath string, tags ...string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	if err := os.MkdirAll(filepath.Dir(elfPath), 0o755); err != nil {
		return err
	}
	args := []string{"build", "-buildmode=pie", "-trimpath", "-ldflags", LDFlags() + " -X main.commit=" + Commit(ctx, root)}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, goCmd, append(args, "-o", elfPath, Package)...)
	cmd.Dir = root
	cmd.Env = Env(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", Package, err, strings.TrimSpace(string(out)))
	}
	return efiimage.Convert(elfPath, efiPath)
}
