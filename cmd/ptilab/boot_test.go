package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Serial output of the test kernel, per outcome.
const (
	relocOK      = "PTILAB {\"check\":\"reloc\",\"ok\":true}\nPTILAB-END {\"status\":\"ok\"}\n"
	relocBroken  = "PTILAB-END {\"status\":\"relocation not applied\"}\n"
	relocUnmoved = "PTILAB-END {\"status\":\"loaded at link address, relocation untested\"}\n"
)

// asmString returns Go assembler directives defining the read-only symbol
// ·name holding s.
func asmString(name, s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/1, $%d\n", name, i, s[i])
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA, $%d\n", name, len(s))
	return b.String()
}

// linkBase is where the test kernel is linked: above the guest's 256 MiB of
// RAM. OVMF loads an image at its PE ImageBase when that range is free, so
// a kernel linked at the usual 0x400000 is normally not relocated at all;
// linking it out of reach forces the firmware to apply the base relocations.
const linkBase = 0x80000000

// testKernel is an assembly entry point that checks the PE base relocations
// were applied: okptr holds the absolute address of okmsg, patched by an
// R_X86_64_RELATIVE (hence DIR64) relocation, and must equal the address
// computed RIP-relative. It prints relocOK and exits 0 when they agree and
// the image was moved below linkBase, relocBroken and 3 when they differ,
// relocUnmoved and 4 when the image was not moved.
var testKernel = `#include "textflag.h"

` + asmString("okmsg", relocOK) + asmString("badmsg", relocBroken) + asmString("lowmsg", relocUnmoved) + fmt.Sprintf(`
DATA ·okptr+0(SB)/8, $·okmsg(SB)
GLOBL ·okptr(SB), RODATA, $8

TEXT ·entry(SB), NOSPLIT|NOFRAME, $0
	LEAQ ·okmsg(SB), AX
	MOVQ ·okptr(SB), SI
	CMPQ AX, SI
	JNE broken
	MOVQ $%#x, CX
	CMPQ AX, CX
	JCC unmoved
	MOVQ $%d, CX
	MOVB $0, BX
	JMP print
broken:
	LEAQ ·badmsg(SB), SI
	MOVQ $%d, CX
	MOVB $3, BX
	JMP print
unmoved:
	LEAQ ·lowmsg(SB), SI
	MOVQ $%d, CX
	MOVB $4, BX
print:
	MOVW $0x3f8, DX
loop:
	MOVB (SI), AX
	OUTB
	INCQ SI
	DECQ CX
	JNZ loop
	MOVW $0xf4, DX
	MOVB BX, AX
	ADDB $0x10, AX
	OUTB
halt:
	HLT
	JMP halt
`, linkBase, len(relocOK), len(relocBroken), len(relocUnmoved))

// buildKernel builds testKernel the way the real kernel is built (PIE,
// internal linking, custom entry symbol) and returns the ELF's path.
func buildKernel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":        "module kernel\n\ngo 1.26\n",
		"main.go":       "package main\n\nfunc entry()\n\nfunc main() {}\n",
		"entry_amd64.s": testKernel,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	out := filepath.Join(dir, "kernel.elf")
	cmd := exec.Command("go", "build", "-buildmode=pie", fmt.Sprintf("-ldflags=-E main.entry -linkmode=internal -T %#x", linkBase+0x1000), "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", msg)
	return out
}

// TestEFIAndQEMU converts a Go-built PIE with "ptilab efi", boots it with
// "ptilab qemu" and reads the log back with "ptilab log". It needs objcopy,
// qemu-system-x86_64 and OVMF, and fails without them.
func TestEFIAndQEMU(t *testing.T) {
	elfPath := buildKernel(t)
	dir := t.TempDir()
	efiPath := filepath.Join(dir, "BOOTX64.EFI")
	code, _, stderr := ptilab(t, "efi", "-elf", elfPath, "-o", efiPath)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stderr, "objcopy's expected warning is filtered")

	logPath := filepath.Join(dir, "serial.log")
	planPath := filepath.Join(dir, "test.plan")
	require.NoError(t, os.WriteFile(planPath, []byte("mode = test\n"), 0o644))
	code, stdout, stderr := ptilab(t, "qemu", "-timeout", "60s", "-plan", planPath, "-log", logPath, efiPath)
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, relocOK)
	assert.NotContains(t, stdout, "\x1b", "terminal echo has escape sequences removed")
	assert.NotContains(t, stdout, "\r")
	assert.Regexp(t, `^ptilab: image exited with status 0 after [0-9.]+s; 1 records, PTILAB-END status "ok"\n$`, stderr)

	code, stdout, stderr = ptilab(t, "log", logPath)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "{\"check\":\"reloc\",\"ok\":true}\n{\"kind\":\"end\",\"status\":\"ok\"}\n", stdout)
}
