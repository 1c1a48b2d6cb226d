package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/linuxrun"
	"github.com/ptilab/ptilab/host/qemu"
)

// ptilab runs the command line args in-process and returns the exit code,
// stdout and stderr.
func ptilab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	code, _, stderr := ptilab(t)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "usage: ptilab <command>")

	code, _, stderr = ptilab(t, "-h")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stderr, "usage: ptilab <command>")

	code, _, stderr = ptilab(t, "boot")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown command "boot"`)
	assert.Contains(t, stderr, "usage: ptilab <command>")

	for _, sub := range []string{"efi", "qemu", "bochs", "log", "report", "compare", "plot"} {
		code, _, stderr = ptilab(t, sub, "-h")
		assert.Equal(t, exitOK, code, sub)
		assert.Contains(t, stderr, "usage: ptilab "+sub, sub)
	}
	code, _, stderr = ptilab(t, "qemu", "-bogus", "x.efi")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "flag provided but not defined: -bogus")
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"efi"},
		{"efi", "-elf", "a"},
		{"efi", "-elf", "a", "-o", "b", "extra"},
		{"qemu"},
		{"qemu", "a.efi", "b.efi"},
		{"bochs"},
		{"bochs", "a.efi", "b.efi"},
		{"log"},
	} {
		code, _, stderr := ptilab(t, args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, stderr, "usage: ptilab "+args[0], args)
	}
}

func TestEFIError(t *testing.T) {
	code, _, stderr := ptilab(t, "efi", "-elf", filepath.Join(t.TempDir(), "missing.elf"), "-o", filepath.Join(t.TempDir(), "x.efi"))
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "ptilab: efiimage:")
	assert.Contains(t, stderr, "missing.elf")
}

func TestQEMUError(t *testing.T) {
	code, _, stderr := ptilab(t, "qemu", "-kvm", "-icount", "x.efi")
	assert.Equal(t, exitFail, code)
	assert.Equal(t, "ptilab: qemu: -icount needs TCG and cannot be combined with KVM\n", stderr)

	code, _, stderr = ptilab(t, "qemu", "-plan", filepath.Join(t.TempDir(), "none.plan"), "x.efi")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "none.plan")
}

func TestBochsError(t *testing.T) {
	code, _, stderr := ptilab(t, "bochs", "-plan", filepath.Join(t.TempDir(), "none.plan"), "x.efi")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "none.plan")

	code, _, stderr = ptilab(t, "bochs", "-m", "lots", "x.efi")
	assert.Equal(t, exitFail, code)
	assert.Equal(t, "ptilab: bochs: memory size \"lots\": want a number of MiB or one with a K, M, G or T suffix\n", stderr)

	t.Setenv("BOCHS", "ptilab-no-such-bochs")
	code, _, stderr = ptilab(t, "bochs", "x.efi")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "$BOCHS (ptilab-no-such-bochs) not found: run `make deps bochs-build`")
}

// writeLog writes a serial log and returns its path.
func writeLog(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "serial.log")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestLog(t *testing.T) {
	const boot = "\x1b[2J\x1b[01;01HBdsDxe: starting Boot0002\r\nptilab 0.1\r\n"
	tests := []struct {
		name, log string
		code      int
		stdout    string
		stderrHas string
	}{
		{"ok", boot + "PTILAB {\"a\":1}\r\nPTILAB { \"b\" : [2] }\r\nPTILAB-END {\"status\":\"ok\"}\r\n",
			exitOK, "{\"a\":1}\n{ \"b\" : [2] }\n{\"kind\":\"end\",\"status\":\"ok\"}\n", `2 records, PTILAB-END status "ok"`},
		{"last line cut in half", boot + "PTILAB {\"a\":1}\r\nPTILAB {\"b\":",
			exitFail, "{\"a\":1}\n", "1 records, no PTILAB-END line: output cut short"},
		{"plan errors", boot + "PTILAB {\"a\":1}\r\nPTILAB-END {\"status\":\"ok\",\"plan_errors\":2}\r\n",
			exitOK, "{\"a\":1}\n{\"kind\":\"end\",\"plan_errors\":2,\"status\":\"ok\"}\n", `1 records, PTILAB-END status "ok"; 2 plan lines ignored`},
		{"NMIs", boot + "PTILAB {\"a\":1}\r\nptilab: NMI: 3 so far\r\nPTILAB-END {\"status\":\"ok\",\"nmis\":4}\r\n",
			exitOK, "{\"a\":1}\n{\"kind\":\"end\",\"nmis\":4,\"status\":\"ok\"}\n", `1 records, PTILAB-END status "ok"; 4 NMIs counted and resumed`},
		{"retention answers", boot + "PTILAB {\"kind\":\"unsupported\",\"bench\":\"retention\",\"target\":\"pcid-noflush\",\"reason\":\"PCID\"}\r\n" +
			"PTILAB {\"kind\":\"retention\",\"bench\":\"retention\",\"probe\":\"global\",\"result\":\"walked again\"}\r\nPTILAB-END {\"status\":\"ok\"}\r\n",
			exitOK, "", `2 records, PTILAB-END status "ok"; TLB retention: pcid-noflush unsupported, global walked again`},
		{"cut short", boot + "PTILAB {\"a\":1}\r\nPTILAB-FAULT #GP rip=0x1234\r\n",
			exitFail, "{\"a\":1}\n", "1 records, no PTILAB-END line: output cut short; CPU exception: #GP rip=0x1234"},
		{"status not ok", boot + "PTILAB-END {\"status\":\"fail\",\"why\":\"x\"}\r\n",
			exitFail, "{\"kind\":\"end\",\"status\":\"fail\",\"why\":\"x\"}\n", `PTILAB-END status "fail" (line 3)`},
		{"benchmarks failed", boot + "PTILAB {\"a\":1}\r\nPTILAB-END {\"status\":\"failed\",\"checks\":13,\"passed\":13,\"failed_benchmarks\":2,\"failed\":[\"null\",\"lseek\"]}\r\n",
			exitFail, "", `; 13 of 13 checks passed; 2 benchmarks failed`},
		{"status missing", boot + "PTILAB-END {}\r\n",
			exitFail, "{\"kind\":\"end\"}\n", `PTILAB-END status ""`},
		{"malformed", boot + "PTILAB {\"a\":\r\nPTILAB {\"b\":2}\r\nPTILAB-END {\"status\":\"ok\"}\r\n",
			exitPartial, "{\"b\":2}\n{\"kind\":\"end\",\"status\":\"ok\"}\n",
			`1 records, PTILAB-END status "ok"; 1 damaged record lines skipped (first: serial line 3: malformed record: unexpected EOF)`},
		{"malformed, then cut short", boot + "PTILAB {\"a\":\r\nPTILAB {\"b\":2}\r\n",
			exitFail, "{\"b\":2}\n", "1 records, no PTILAB-END line: output cut short; 1 damaged record lines skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := ptilab(t, "log", writeLog(t, tt.log))
			assert.Equal(t, tt.code, code)
			if tt.stdout != "" {
				assert.Equal(t, tt.stdout, stdout)
			}
			assert.Contains(t, stderr, tt.stderrHas)
			summaries := strings.Count(stderr, "\n") - strings.Count(stderr, "ptilab: warning: ")
			assert.Equal(t, 1, summaries, "one summary line: %q", stderr)
			if strings.Contains(tt.name, "malformed") {
				assert.Contains(t, stderr, "ptilab: warning: ", "a warning per damaged line")
				assert.Contains(t, stderr, "serial.log: serial line 3: malformed record: unexpected EOF (record skipped)\n")
			}
		})
	}

	code, _, stderr := ptilab(t, "log", filepath.Join(t.TempDir(), "none.log"))
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "none.log")
}

// TestSummaries checks the line the boot commands end with, for QEMU's
// results (summary) and Bochs's (bochsSummary).
func TestSummaries(t *testing.T) {
	okSerial := []byte("PTILAB {\"a\":1}\nPTILAB-END {\"status\":\"ok\"}\n")
	end := []byte("PTILAB {\"a\":1}\nPTILAB-END {\"status\":\"ok\",\"exit\":0}\n")
	pinned := bochs.Build{Path: "/c/bin/bochs", Version: "3.0.devel", Commit: bochs.PinnedCommit}
	debian := bochs.Build{Path: "/usr/bin/bochs", Version: "2.7", Debugger: true}
	b31 := "bochs 3.0.devel " + bochs.PinnedCommit[:12] + ": "
	tests := []struct{ name, got, want string }{
		{"qemu exit ok", summary(&qemu.Result{QEMUStatus: 1, ImageStatus: 0, DebugExit: true, Duration: 7249 * time.Millisecond, Serial: okSerial}),
			`image exited with status 0 after 7.2s; 1 records, PTILAB-END status "ok"`},
		{"qemu exit no END", summary(&qemu.Result{QEMUStatus: 7, ImageStatus: 3, DebugExit: true, Duration: time.Second, Serial: []byte("boot\n")}),
			"image exited with status 3 after 1s; 0 records, no PTILAB-END line: output cut short"},
		{"qemu timeout", summary(&qemu.Result{QEMUStatus: -1, ImageStatus: -1, TimedOut: true, Duration: 120 * time.Second}),
			"timed out after 2m0s, QEMU killed; 0 records, no PTILAB-END line: output cut short"},
		{"qemu shutdown", summary(&qemu.Result{QEMUStatus: 0, ImageStatus: -1, Duration: 5 * time.Second}),
			"QEMU exited after 5s without the image writing the exit port (guest shutdown, reset or triple fault); 0 records, no PTILAB-END line: output cut short"},
		{"qemu qemu failure", summary(&qemu.Result{QEMUStatus: 1 << 1, ImageStatus: -1, Stderr: []byte("\nqemu-system-x86_64: unable to find CPU model 'x'\nmore\n")}),
			"QEMU failed with status 2 after 0s: qemu-system-x86_64: unable to find CPU model 'x'; 0 records, no PTILAB-END line: output cut short"},
		{"bochs powered off", bochsSummary(&bochs.Result{BochsStatus: 1, Duration: 61 * time.Second, Serial: end, Build: pinned}),
			b31 + `image ended with status 0 after 1m1s; 1 records, PTILAB-END status "ok"`},
		{"bochs no power-off", bochsSummary(&bochs.Result{BochsStatus: -1, Stopped: true, Duration: 2 * time.Second, Serial: end, Build: pinned}),
			b31 + `image ended with status 0 but did not power off (its plan's end); Bochs killed after 2s; 1 records, PTILAB-END status "ok"`},
		{"bochs timeout", bochsSummary(&bochs.Result{BochsStatus: -1, TimedOut: true, Duration: 10 * time.Minute, Build: pinned}),
			b31 + "timed out after 10m0s, Bochs killed; 0 records, no PTILAB-END line: output cut short"},
		{"bochs bochs failure", bochsSummary(&bochs.Result{BochsStatus: 1, Duration: time.Second, Build: debian,
			Output: []byte("========\nBochs is exiting with the following message:\n[MEM0 ] ROM: ROM image too large\n========\n")}),
			"bochs 2.7 /usr/bin/bochs: Bochs exited with status 1 after 1s without the image's status: [MEM0 ] ROM: ROM image too large; 0 records, no PTILAB-END line: output cut short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.got) })
	}
}

// TestVersion: ptilab version names the commit the tool was built from
// (-X main.commit, which the Makefile sets) and the Go toolchain.
func TestVersion(t *testing.T) {
	saved := commit
	t.Cleanup(func() { commit = saved })
	commit = "0123456789ab+dirty"
	code, stdout, _ := ptilab(t, "version")
	assert.Equal(t, exitOK, code)
	assert.Regexp(t, `^ptilab 0123456789ab\+dirty \(go[0-9.]+ linux/amd64\)\n$`, stdout)
	commit = ""
	_, stdout, _ = ptilab(t, "version")
	assert.Regexp(t, `^ptilab ([0-9a-f]{12}(\+dirty)?|unknown) \(`, stdout, "the VCS stamp, or unknown without one")
	code, _, _ = ptilab(t, "version", "extra")
	assert.Equal(t, exitUsage, code)
}

// TestMain lets the test binary be the workers of "ptilab linux", as the
// program is.
func TestMain(m *testing.M) {
	linuxrun.MaybeWorker()
	os.Exit(m.Run())
}

// TestLinux runs "ptilab linux" on this machine with a small plan and
// reads its results file back with report: the command as a user runs
// it. A plan line it cannot use is refused with its number, before
// anything runs.
func TestLinux(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "linux.plan")
	require.NoError(t, os.WriteFile(plan, []byte("# small\nbenchmarks = null, messaging\nperf = off\nn = 50\nr = 2\nwarmup = 0\nmessaging_groups = 1\nmessaging_loops = 2\n"), 0o644))
	results, log := filepath.Join(dir, "results"), filepath.Join(dir, "linux.log")
	code, stdout, stderr := ptilab(t, "linux", "-plan", plan, "-log", log, "-o", results)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "PTILAB-END")
	files, err := filepath.Glob(filepath.Join(results, "*-linux.log"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one results file")
	saved, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, stdout, string(saved), "the -log file holds what was printed")
	code, stdout, stderr = ptilab(t, "report", results)
	require.Equal(t, exitOK, code, stderr)
	text := strings.Join(strings.Fields(stdout), " ")
	assert.Contains(t, text, "board linux (a ptilab linux run")
	assert.Contains(t, text, "sched-messaging (perf bench sched messaging -g 1 -l 2")

	// A second run in the same second gets a name of its own.
	first, err := newResultsFile(results, time.Unix(1, 0))
	require.NoError(t, err)
	second, err := newResultsFile(results, time.Unix(1, 0))
	require.NoError(t, err)
	assert.NotEqual(t, first.Name(), second.Name())
	assert.True(t, strings.HasSuffix(second.Name(), "-linux-2.log"), second.Name())
	first.Close()
	second.Close()

	require.NoError(t, os.WriteFile(plan, []byte("n = 50\n\ncpu = 1.5\nmessaging_loop = 3\n"), 0o644))
	code, stdout, stderr = ptilab(t, "linux", "-plan", plan)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout, "nothing ran")
	assert.Contains(t, stderr, plan+`:3: "cpu = 1.5": cpu must be none or a CPU number`)
	assert.Contains(t, stderr, plan+`:4: "messaging_loop = 3": unknown key "messaging_loop" (did you mean messaging_loops?)`)
}

// An -icount run (the default plan takes about 2 minutes here) gets
// qemuIcountTimeout unless -timeout is given; a TCG run keeps 2 minutes.
func TestIcountTimeout(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, qemuTimeout},
		{[]string{"-icount"}, qemuIcountTimeout},
		{[]string{"-icount", "-timeout", "90s"}, 90 * time.Second},
		{[]string{"-timeout", "3m"}, 3 * time.Minute},
	} {
		fs := flag.NewFlagSet("qemu", flag.ContinueOnError)
		var opts qemu.Options
		fs.BoolVar(&opts.Icount, "icount", false, "")
		fs.DurationVar(&opts.Timeout, "timeout", qemuTimeout, "")
		require.NoError(t, fs.Parse(tt.args))
		icountTimeout(fs, &opts)
		assert.Equal(t, tt.want, opts.Timeout, "%q", tt.args)
	}
}
