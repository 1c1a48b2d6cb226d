// Command mkblob rebuilds the 32-bit kernel's blob: it builds package
// i386pae/kernel32 for GOARCH=386 and writes i386pae/kernel32.bin and
// i386pae/kernel32_sym.go. Run it (go generate ./i386pae) after changing
// kernel32 or i386pae/layout; TestBlobMatchesFreshBuild fails until then.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/ptilab/ptilab/host/blob32"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	flag.Parse()
	log.SetFlags(0)
	b, err := blob32.Build(*root)
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join(*root, "i386pae")
	if err := os.WriteFile(filepath.Join(dir, "kernel32.bin"), b.Text, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel32_sym.go"), b.Source(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("kernel32.bin: %d bytes, %d routines", len(b.Text), len(b.Symbols))
}
