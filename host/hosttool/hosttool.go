// Package hosttool finds the host programs the ptilab command runs
// (objcopy, QEMU, Bochs): an environment variable, when set, names the
// program (a path, or a name looked up in PATH), else the usual name is
// looked up in PATH.
package hosttool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Find returns the path of the program $env names when it is set, else of
// name from PATH. The error says what was tried, in one line:
// "$ENV (value) not found" or "NAME not found in PATH"; callers add how to
// install the program.
func Find(env, name string) (string, error) {
	what := name + " not found in PATH"
	if v := os.Getenv(env); v != "" {
		name, what = v, fmt.Sprintf("$%s (%s) not found", env, v)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", errors.New(what)
	}
	return path, nil
}
