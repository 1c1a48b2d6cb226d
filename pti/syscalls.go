package pti

import (
	"errors"
	"fmt"
)

// SetSyscall makes the task's system call nr go to handler, a kernel
// address with the contract of the handlers in entry_amd64.s (tasks.Entry
// is one), in every mode: under OnNoSwitch it then switches tables too.
// Setup must have run.
func SetSyscall(nr int, handler uint64) error {
	if !env.ready {
		return errors.New("pti: Setup has not run")
	}
	if nr < 0 || nr >= nsys {
		return fmt.Errorf("pti: system call %d is out of the table", nr)
	}
	data().Table[nr] = handler
	data().NoSwitch[nr] = 0 // a handler of its own runs on the kernel table
	return nil
}

// ResetSyscalls points the system-call table back at the built-in
// handlers: getppid, work, sample, exit, touch and secret, ENOSYS for the
// rest; and OnNoSwitch's table at the copies of getppid and work.
func ResetSyscalls() {
	d := data()
	for i := range d.Table {
		d.Table[i] = env.kern.SysNoSys
	}
	d.Table[SysGetppid] = env.kern.SysGetppid
	d.Table[SysWork] = env.kern.SysWork
	d.Table[SysSample] = env.kern.SysSample
	d.Table[SysExit] = env.kern.SysExitRun
	d.Table[SysTouch] = env.kern.SysTouch
	d.Table[SysSecret] = env.kern.SysSecret
	if selfNMI {
		d.Table[SysGetppid], d.APIC = env.kern.SysSelfNMI, apicBase()
	}
	// OnNoSwitch's chosen calls: getppid and work, from their copies.
	d.NoSwitch = [nsys]uint64{}
	d.NoSwitch[SysGetppid] = env.noSwitch.NsGetppid
	d.NoSwitch[SysWork] = env.noSwitch.NsWork
}
