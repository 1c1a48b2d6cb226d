package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// commit is the source the host tool was built from, set by the Makefile
// (go build -ldflags "-X main.commit=..."; host/image.Commit's form);
// without it, the go command's VCS stamp where it made one.
var commit = ""

// version names the host tool's source: commit, else the build's
// vcs.revision (12 digits, "+dirty" when vcs.modified), else "unknown".
func version() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				rev = s.Value[:12]
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "+dirty"
			}
		}
		if rev != "" {
			return rev + dirty
		}
	}
	return "unknown"
}

// cmdVersion prints "ptilab COMMIT (GO OS/ARCH)": the source the host
// tool was built from; an image says its own in its machine record
// (ptilab_commit), which report prints.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", stderr)
	if code := parse(fs, args, 0); code >= 0 {
		return code
	}
	fmt.Fprintf(stdout, "ptilab %s (%s %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
