//go:build 386

package main

// The tasks kernel of the 32-bit world, in Go compiled for GOARCH=386 and
// cut into the blob with the assembly: its system calls, descriptors,
// processes and context switch on layout.KState, around package
// tasks/core (the pipe and socket rings, the wait queues and the
// scheduler's decisions, on KState.Core), which the 64-bit kernel,
// package tasks, runs too. What makes Go code usable here, where there is
// no Go runtime, is written at the top of package core and holds for this
// file too (every function go:nosplit, -gcflags=-B, no globals, no pointer
// stores, no division by a variable, no copy() or struct copies); the
// tests on the blob check it (every call and jump lands in it, no absolute
// address outside the kernel window and the task's pages).
//
// Interrupts stay masked; tasks switch only in system calls of the linux
// trampolines, whose pt_regs frame on the task stack is the switch's
// unit, as in package tasks.

import (
	"unsafe"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
)

// What the kernel reaches by address or by instruction, ptr, setCR3,
// rdtsc and endRun, is in machine.go (the blob's) or, with the
// kernel32host build tag, which the blob's build never sets, in
// machine_host.go: the host tests' stand-in.

// kst returns the kernel's state.
//
//go:nosplit
func kst() *layout.KState { return (*layout.KState)(ptr(layout.State)) }

// syscall32 runs the system call of the running task whose pt_regs frame
// is f (on the task stack) and returns its result. When the call blocks,
// yields or exits, it switches: it saves f into the task, fills f with the
// next task's registers and returns that task's EAX. It does not return
// when no task is left that can run: the run ends.
//
// Called by dispatch (entry_386.s) for the calls the assembly does not
// answer, when the tasks kernel is on.
//
//go:nosplit
func syscall32(f *layout.PtRegs) uint32 {
	k := kst()
	r := do(k, f.OrigAX, f.BX, f.CX, f.DX)
	if k.Core.Running() {
		return r
	}
	return schedule(k, f, r)
}

// do runs system call nr of the running task.
//
//go:nosplit
func do(k *layout.KState, nr, a0, a1, a2 uint32) uint32 {
	switch nr {
	case linuxabi.SYS_ia32_read:
		obj, ok := object(k, a0)
		if !ok || obj >= layout.FDSocket || obj&1 != layout.FDPipeRead {
			if obj >= layout.FDSocket && obj < layout.FDFile { // here, off the pipes' path
				c := obj - layout.FDSocket
				return uint32(k.Core.Read(c, uintptr(k.Rings[c]), uintptr(a1), userRoom(k, a1, true), uintptr(a2)))
			}
			return neg(linuxabi.EBADF)
		}
		p := obj >> 1
		return uint32(k.Core.Read(p, uintptr(k.Rings[p]), uintptr(a1), userRoom(k, a1, true), uintptr(a2)))
	case linuxabi.SYS_ia32_write:
		obj, ok := object(k, a0)
		if !ok || obj >= layout.FDSocket || obj&1 != layout.FDPipeWrite&1 {
			if obj >= layout.FDSocket && obj < layout.FDFile { // here, off the pipes' path
				c := (obj - layout.FDSocket) ^ 1
				return uint32(k.Core.SockWrite(c, uintptr(k.Rings[c]), uintptr(a1), userRoom(k, a1, false), uintptr(a2)))
			}
			return neg(linuxabi.EBADF)
		}
		p := (obj - layout.FDPipeWrite) >> 1
		return uint32(k.Core.PipeWrite(p, uintptr(k.Rings[p]), uintptr(a1), userRoom(k, a1, false), uintptr(a2)))
	case linuxabi.SYS_ia32_close:
		return closeFD(k, k.Tasks[k.Core.Cur].Proc, a0)
	case linuxabi.SYS_ia32_lseek:
		return lseek(k, a0, int32(a1), a2)
	case linuxabi.SYS_ia32_sched_yield:
		k.Core.Yield()
		return 0
	case linuxabi.SYS_ia32_exit:
		exit(k, a0)
		return 0
	}
	// The sample call, outside the switch: the other calls' paths stay
	// as they were (their instructions are held as bounds).
	if nr == layout.SysSample {
		sample()
		return 0
	}
	// Past the switch, so that the other calls' paths stay as they were.
	if nr == linuxabi.SYS_ia32_socketpair {
		// Its fourth argument, ESI, from the frame on the task stack, as
		// Linux's task_pt_regs (socketpair never waits, so it is never
		// retried by resume, whose frame is another task's).
		return socketpair(k, a0, a1, a2, (*layout.PtRegs)(ptr(taskFrameVA)).SI)
	}
	return neg(linuxabi.ENOSYS)
}

//go:nosplit
func neg(errno uint32) uint32 { return -errno }

// object returns the descriptor fd of the running task's process, false
// when it is not open.
//
//go:nosplit
func object(k *layout.KState, fd uint32) (uint32, bool) {
	p := &k.Procs[k.Tasks[k.Core.Cur].Proc]
	if fd >= p.NFDs {
		return 0, false
	}
	o := k.FDSlots[p.FDBase+fd]
	return o, o != 0
}

// userRoom returns the bytes from va to the end of the running task's
// process's mapping that holds va and that the kernel may write (write:
// its data or stack pages) or read (also its code pages), 0 when none
// does; the kernel side of the process maps them. The tasks kernel's
// copies stay within it (package core), so that a bad buffer is EFAULT
// instead of a fault in the kernel.
//
//go:nosplit
func userRoom(k *layout.KState, va uint32, write bool) uintptr {
	const stack, code = layout.UserStackTop - layout.UserStackPages*4096, layout.UserCode + layout.UserCodePages*4096
	switch end := k.Procs[k.Tasks[k.Core.Cur].Proc].DataEnd; {
	case va >= layout.UserData && va < end:
		return uintptr(end - va)
	case va >= stack && va < layout.UserStackTop:
		return uintptr(layout.UserStackTop - va)
	case !write && va >= layout.UserCode && va < code:
		return uintptr(code - va)
	}
	return 0
}

// closeFD closes descriptor fd of process proc: the last reference to a
// pipe end wakes the tasks that then see the end of the pipe.
//
//go:nosplit
func closeFD(k *layout.KState, proc, fd uint32) uint32 {
	p := &k.Procs[proc]
	if fd >= p.NFDs || k.FDSlots[p.FDBase+fd] == 0 {
		return neg(linuxabi.EBADF)
	}
	obj := k.FDSlots[p.FDBase+fd]
	k.FDSlots[p.FDBase+fd] = 0
	switch {
	case obj >= layout.FDSocket:
		if obj < layout.FDFile { // a socket: here, off the pipes' path
			k.Core.CloseSocket(obj - layout.FDSocket)
		}
	case obj&1 == layout.FDPipeRead:
		k.Core.CloseRead(obj >> 1)
	default:
		k.Core.CloseWrite((obj - layout.FDPipeWrite) >> 1)
	}
	return 0
}

// lseek whence values (include/uapi/linux/fs.h).
const (
	seekSet = 0
	seekCur = 1
	seekEnd = 2
)

// lseek moves descriptor fd's position (man 2 lseek): EBADF for a
// descriptor that is not open, ESPIPE for a pipe, EINVAL for a bad whence
// or a position that would be negative or pass 2 GiB.
//
//go:nosplit
func lseek(k *layout.KState, fd uint32, off int32, whence uint32) uint32 {
	obj, ok := object(k, fd)
	if !ok {
		return neg(linuxabi.EBADF)
	}
	if obj < layout.FDFile {
		return neg(linuxabi.ESPIPE) // a pipe or a socket
	}
	f := &k.Files[obj-layout.FDFile]
	var base int32
	switch whence {
	case seekSet:
	case seekCur:
		base = int32(f.Pos)
	case seekEnd:
		base = int32(f.Size)
	default:
		return neg(linuxabi.EINVAL)
	}
	pos := base + off
	if pos < 0 || (off > 0 && pos < base) {
		return neg(linuxabi.EINVAL)
	}
	f.Pos = uint32(pos)
	return f.Pos
}

// exit ends the running task with status; the process's descriptors close
// with its last thread; the last task's exit stamps the run's end.
//
//go:nosplit
func exit(k *layout.KState, status uint32) {
	t := &k.Tasks[k.Core.Cur]
	last := k.Core.Exit(status)
	p := &k.Procs[t.Proc]
	if p.Threads--; p.Threads == 0 {
		for fd := uint32(0); fd < p.NFDs; fd++ {
			if k.FDSlots[p.FDBase+fd] != 0 {
				closeFD(k, t.Proc, fd)
			}
		}
	}
	if last {
		k.EndTSC[0], k.EndTSC[1] = rdtsc()
	}
}

// copyRegs copies pt_regs word by word (a struct copy would call the
// runtime's duffcopy).
//
//go:nosplit
func copyRegs(dst, src *layout.PtRegs) {
	d := (*[17]uint32)(unsafe.Pointer(dst))
	s := (*[17]uint32)(unsafe.Pointer(src))
	for i := 0; i < 17; i++ {
		d[i] = s[i]
	}
}

// schedule parks the running task, which blocked, yielded or exited in
// the call that returned r, with its registers from f, and resumes the
// next task that can run (core's Next): its registers go into f and its
// EAX is returned. When no task can run the run ends.
//
//go:nosplit
func schedule(k *layout.KState, f *layout.PtRegs, r uint32) uint32 {
	prev := k.Core.Cur
	t := &k.Tasks[prev]
	copyRegs(&t.Regs, f)
	t.Regs.AX = r
	for {
		next := k.Core.Next()
		if next == core.NoTask {
			if k.Core.Live == 0 {
				endRun(layout.ReasonExit, k.Core.Status)
			}
			endRun(layout.ReasonDeadlock, 0)
		}
		if resume(k, next) {
			if next != prev {
				k.Switches++
			}
			copyRegs(f, &k.Tasks[next].Regs)
			return k.Tasks[next].Regs.AX
		}
	}
}

// resume makes task i the running one, in its process's address space,
// and retries the call it blocked in; it reports false when the call
// blocked again.
//
//go:nosplit
func resume(k *layout.KState, i uint32) bool {
	retry := k.Core.Resume(i)
	t := &k.Tasks[i]
	if t.Proc != k.Loaded {
		k.Loaded = t.Proc
		setCR3(k.Procs[t.Proc].KernelCR3)
		k.CR3Loads++
	}
	if !retry {
		return true
	}
	r := do(k, t.Regs.OrigAX, t.Regs.BX, t.Regs.CX, t.Regs.DX)
	if !k.Core.Running() {
		return false
	}
	t.Regs.AX = r
	return true
}
