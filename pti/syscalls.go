package pti

import (
	"errors"
	"fmt"
)

// SetSyscall makes the task's system call nr go to handler, a kernel
// address with the contract of the handlers in entry_amd64.s (tasks.Entry
// is one). Setup must have run.
func SetSyscall(nr int, handler uint64) error {
	if !env.ready {
		return errors.New("pti: Setup has not run")
	}
	if nr < 0 || nr >= nsys {
		return fmt.Errorf("pti: system call %d is out of the table", nr)
	}
	data().Table[nr] = handler
	return nil
}

// ResetSyscalls points the system-call table back at the built-in
// handlers: getppid, work, sample, exit and touch, ENOSYS for the rest.
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
}
