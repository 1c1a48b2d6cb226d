package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// The statuses the kernel ends a run with (contract.Status*): under QEMU
// the debug-exit device makes them QEMU's exit status.
const (
	exitFault    = contract.StatusFault
	exitDeadlock = contract.StatusDeadlock
	exitBoot     = contract.StatusBootFailed
	exitOOM      = contract.StatusOutOfMemory
)

var (
	endPrinted bool            // the program printed its PTILAB-END line
	endAction  board.EndAction // what a PC does at the end
	// endWait is how long a run that ends waiting for a key
	// (board.EndAction.WaitsForKey) waits, in seconds; negative: until a
	// key.
	endWait = -1
)

// MarkEndPrinted tells the kernel that the program printed its PTILAB-END
// line, so that the kernel does not print one when the run ends.
func MarkEndPrinted() { endPrinted = true }

// SetEndAction chooses how a PC ends the run (QEMU always exits through its
// debug-exit device when it has one) and, for an end that waits for a key
// (board.EndAction.WaitsForKey), how many seconds it waits at most
// (negative: until a key).
func SetEndAction(a board.EndAction, waitSeconds int) { endAction, endWait = a, waitSeconds }

// uBootVendor is U-Boot's EFI_SYSTEM_TABLE.FirmwareVendor: endRun does
// not ask U-Boot's UEFI to power off.
const uBootVendor = "Das U-Boot"

// keyPoll is how often waitForKey asks the firmware for a key, in
// microseconds; keyDrainPolls how many polls drain the keys typed before.
const (
	keyPoll       = 20000
	keyDrainPolls = 5
)

// waitForKey keeps the run's last lines on the screen until a key comes
// from the console input (a keyboard, or the serial terminal where the
// firmware has one) or endWait seconds pass; keys pressed during the run
// do not count. It says on the console what it waits for and what ended
// the wait; without a console input it does not wait (a wait no key
// could end would hang the machine).
func waitForKey() {
	if !efi.HasConsoleInput() {
		kprint("ptilab: the run is over; the firmware has no console input to wait for a key on: returning to the firmware")
		return
	}
	// Drain the keys typed during the run, over a few of the firmware's
	// timer ticks: its keyboard driver may move a key from the controller
	// into its buffer only when its timer runs (interrupts are masked
	// outside firmware calls).
	for range keyDrainPolls {
		for {
			if _, ok := efi.ReadKey(); !ok {
				break
			}
		}
		efi.Stall(keyPoll)
	}
	var l kline
	l.s("ptilab: the run is over; press a key to return to the firmware")
	if endWait >= 0 {
		l.s(" (or wait ").udec(uint64(endWait)).s(" s)")
	}
	l.flush()
	board.DrainSerial()
	for polls := uint64(0); endWait < 0 || polls < uint64(endWait)*(1e6/keyPoll); polls++ {
		if _, ok := efi.ReadKey(); ok {
			kprint("ptilab: key pressed; returning to the firmware")
			return
		}
		efi.Stall(keyPoll)
	}
	var n kline
	n.s("ptilab: no key in ").udec(uint64(endWait)).s(" s; returning to the firmware").flush()
}

// endRun ends the run: it gives back the MSRs the run wrote and the
// program did not restore (restoreMSRs), prints the PTILAB-END line
// unless the program did, and leaves through the board (the firmware, or
// a power-off). A run with a fatal exception ends with
// the fault status whatever exit status the program chose after it.
func endRun(status uint8, reason string) {
	kernelDepth++
	if faults > 0 && status != exitOOM {
		status, reason = exitFault, "fault"
	}
	restoreMSRs(reason)
	if !endPrinted {
		endPrinted = true
		var l kline
		l.s(contract.EndTag).s(` {"status":"`).s(reason).s(`","exit":`).udec(uint64(status)).
			s(`,"syscalls":`).udec(syscallTotal()).s(`,"uptime_ms":`).dec(Monotonic() / 1e6).
			s(`,"nmis":`).udec(amd64.NMICount()).s("}").flush()
	}
	flushResults()
	if endAction.WaitsForKey() {
		waitForKey()
		endAction = board.EndReturn
	}
	if endAction == board.EndPowerOff && efi.Vendor() == uBootVendor {
		kprint("ptilab: end = poweroff: U-Boot's UEFI powers off only when built with its poweroff command (CONFIG_CMD_POWEROFF) and hangs in ResetSystem otherwise: returning to U-Boot instead")
		flushResults()
		endAction = board.EndReturn
	}
	plantGlobalProbe(endAction)
	board.End(status, endAction)
	amd64.Halt()
}

// NMICount returns the NMIs counted since boot (amd64.NMICount): in the
// kernel, in firmware calls and in ring 3 of both worlds (the 32-bit
// world's are added when its run returns). Read it before and after a
// repeat: a repeat during which it moved was disturbed.
func NMICount() uint64 { return amd64.NMICount() }

func syscallTotal() uint64 {
	n := stats.other
	for _, c := range stats.syscalls {
		n += c
	}
	return n
}
