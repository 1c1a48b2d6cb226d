//go:build 386

package main

// The tasks kernel of the 32-bit world, in Go compiled for GOARCH=386 and
// cut into the blob with the assembly: package tasks (the 64-bit one)
// ported to layout.KState, with indexes for links. What makes Go code
// usable here, where there is no Go runtime, is checked by the tests on
// the blob (every call and jump lands in it, no absolute address outside
// the kernel window and the task's pages):
//
//   - every function is go:nosplit (no stack check, which would read the
//     g from TLS) and the blob is built with -gcflags=-B (no bounds
//     checks, which would call the runtime's panics);
//   - no global variables (their addresses are the link address's): the
//     state is at its fixed address, layout.State;
//   - no pointer is stored into memory (a write barrier would read the
//     runtime's flag): links are task indexes;
//   - no division or remainder by a variable (a zero check would call
//     runtime.panicdivide), no copy() or struct copies (runtime.memmove,
//     duffcopy): the rings are powers of two, copies are copyBytes (as
//     Linux's memcpy) or loops.
//
// Interrupts stay masked; tasks switch only in system calls of the linux
// trampolines, whose pt_regs frame on the task stack is the switch's
// unit, as in package tasks.

import (
	"unsafe"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
)

// What the kernel reaches by address or by instruction, ptr, setCR3,
// rdtsc, copyBytes and endRun, is in machine.go (the blob's) or, with the
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
	if k.Tasks[k.Cur].State == layout.TaskRunning {
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
				return sockRead(k, obj-layout.FDSocket, a1, a2)
			}
			return neg(linuxabi.EBADF)
		}
		return pipeRead(k, obj>>1, a1, a2)
	case linuxabi.SYS_ia32_write:
		obj, ok := object(k, a0)
		if !ok || obj >= layout.FDSocket || obj&1 != layout.FDPipeWrite&1 {
			if obj >= layout.FDSocket && obj < layout.FDFile { // here, off the pipes' path
				return sockWrite(k, (obj-layout.FDSocket)^1, a1, a2)
			}
			return neg(linuxabi.EBADF)
		}
		return pipeWrite(k, (obj-layout.FDPipeWrite)>>1, a1, a2)
	case linuxabi.SYS_ia32_close:
		return closeFD(k, k.Tasks[k.Cur].Proc, a0)
	case linuxabi.SYS_ia32_lseek:
		return lseek(k, a0, int32(a1), a2)
	case linuxabi.SYS_ia32_sched_yield:
		enqueue(k, k.Cur)
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
	p := &k.Procs[k.Tasks[k.Cur].Proc]
	if fd >= p.NFDs {
		return 0, false
	}
	o := k.FDSlots[p.FDBase+fd]
	return o, o != 0
}

// userOK reports whether the n bytes at va lie in one of the running
// task's process's mappings that the kernel may write (write: its data or
// stack pages) or read (also its code pages); the kernel side of the
// process maps them. Elsewhere the call returns EFAULT instead of
// faulting in the kernel.
//
//go:nosplit
func userOK(k *layout.KState, va, n uint32, write bool) bool {
	end := va + n
	if end < va {
		return false
	}
	switch {
	case va >= layout.UserData && end <= k.Procs[k.Tasks[k.Cur].Proc].DataEnd:
		return true
	case va >= layout.UserStackTop-layout.UserStackPages*4096 && end <= layout.UserStackTop:
		return true
	}
	return !write && va >= layout.UserCode && end <= layout.UserCode+layout.UserCodePages*4096
}

// pipeRead is read(2) on pipe p: what is there, up to n bytes; end of file
// when empty and without writers; otherwise the task waits.
//
//go:nosplit
func pipeRead(k *layout.KState, p, buf, n uint32) uint32 {
	pp := &k.Pipes[p]
	if n == 0 {
		return 0
	}
	avail := pp.WPos - pp.RPos
	if avail == 0 {
		if pp.Writers == 0 {
			return 0
		}
		block(k, layout.WaitRead, p)
		return 0
	}
	c := min(n, avail)
	if !userOK(k, buf, c, true) {
		return neg(linuxabi.EFAULT)
	}
	off := pp.RPos & (layout.PipeSize - 1)
	first := min(c, layout.PipeSize-off)
	copyBytes(buf, pp.Ring+off, first)
	copyBytes(buf+first, pp.Ring, c-first) // the ring wraps
	pp.RPos += c
	// Room for the writers: each checks its own need when picked.
	wake(k, &pp.WriteHead, &pp.WriteTail)
	return c
}

// writable reports whether a write of n bytes can go ahead in pipe pp: a
// write of at most PIPE_BUF bytes needs room for all of them, a longer one
// room for one.
//
//go:nosplit
func writable(pp *layout.Pipe, n uint32) bool {
	need := n
	if n > pipeBuf {
		need = 1
	}
	return layout.PipeSize-(pp.WPos-pp.RPos) >= need
}

// pipeBuf is Linux's PIPE_BUF: writes of up to this many bytes are whole.
const pipeBuf = 4096

// pipeWrite is write(2) on pipe p: EPIPE without readers; what fits of n
// bytes (all of a write of at most PIPE_BUF bytes), or the task waits.
//
//go:nosplit
func pipeWrite(k *layout.KState, p, buf, n uint32) uint32 {
	pp := &k.Pipes[p]
	if n == 0 {
		return 0
	}
	if pp.Readers == 0 {
		return neg(linuxabi.EPIPE)
	}
	if !writable(pp, n) {
		block(k, layout.WaitWrite, p)
		return 0
	}
	c := min(n, layout.PipeSize-(pp.WPos-pp.RPos))
	if !userOK(k, buf, c, false) {
		return neg(linuxabi.EFAULT)
	}
	off := pp.WPos & (layout.PipeSize - 1)
	first := min(c, layout.PipeSize-off)
	copyBytes(pp.Ring+off, buf, first)
	copyBytes(pp.Ring, buf+first, c-first) // the ring wraps
	wasEmpty := pp.WPos == pp.RPos
	pp.WPos += c
	if wasEmpty { // readers wait only on an empty pipe
		wake(k, &pp.ReadHead, &pp.ReadTail)
	}
	return c
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
		if obj < layout.FDFile { // a socket: here, off the pipes' path, and inline: no frame for the pipes
			// The endpoint reads channel c and writes c^1: the last
			// descriptor ends both streams at this end (the peer's
			// reader sees the end of file, its writer EPIPE).
			c := obj - layout.FDSocket
			if k.Pipes[c].Readers--; k.Pipes[c].Readers == 0 {
				wake(k, &k.Pipes[c].WriteHead, &k.Pipes[c].WriteTail)
			}
			if k.Pipes[c^1].Writers--; k.Pipes[c^1].Writers == 0 {
				wake(k, &k.Pipes[c^1].ReadHead, &k.Pipes[c^1].ReadTail)
			}
		}
	case obj&1 == layout.FDPipeRead:
		pp := &k.Pipes[obj>>1]
		if pp.Readers--; pp.Readers == 0 {
			wake(k, &pp.WriteHead, &pp.WriteTail)
		}
	default:
		pp := &k.Pipes[(obj-layout.FDPipeWrite)>>1]
		if pp.Writers--; pp.Writers == 0 {
			wake(k, &pp.ReadHead, &pp.ReadTail)
		}
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

// enqueue puts task i at the end of the run queue; a woken task keeps
// what it waited for until it runs: its call is then retried.
//
//go:nosplit
func enqueue(k *layout.KState, i uint32) {
	t := &k.Tasks[i]
	t.State = layout.TaskRunnable
	t.Next = layout.NoTask
	if k.Tail == layout.NoTask {
		k.Head = i
	} else {
		k.Tasks[k.Tail].Next = i
	}
	k.Tail = i
}

//go:nosplit
func dequeue(k *layout.KState) uint32 {
	i := k.Head
	if i == layout.NoTask {
		return i
	}
	k.Head = k.Tasks[i].Next
	if k.Head == layout.NoTask {
		k.Tail = layout.NoTask
	}
	k.Tasks[i].Next = layout.NoTask
	return i
}

// block makes the running task wait for kind on pipe p; its call is
// retried when a wake-up makes it runnable and the scheduler picks it.
//
//go:nosplit
func block(k *layout.KState, kind, p uint32) { park(k, k.Cur, kind, p) }

// park makes task i wait for kind on pipe p, at the end of its list.
//
//go:nosplit
func park(k *layout.KState, i, kind, p uint32) {
	t := &k.Tasks[i]
	t.State = layout.TaskBlocked
	t.Wait = kind
	t.Obj = p
	t.Next = layout.NoTask
	head, tail := &k.Pipes[p].ReadHead, &k.Pipes[p].ReadTail
	if kind != layout.WaitRead { // WaitWrite, WaitSockWrite
		head, tail = &k.Pipes[p].WriteHead, &k.Pipes[p].WriteTail
	}
	if *tail == layout.NoTask {
		*head = i
	} else {
		k.Tasks[*tail].Next = i
	}
	*tail = i
}

// wake makes every task of a wait list runnable, in the order they
// blocked; each checks its condition when picked (as package tasks).
//
//go:nosplit
func wake(k *layout.KState, head, tail *uint32) {
	for i := *head; i != layout.NoTask; {
		next := k.Tasks[i].Next
		enqueue(k, i)
		i = next
	}
	*head, *tail = layout.NoTask, layout.NoTask
}

// exit ends the running task with status; the process's descriptors close
// with its last thread; the last task's exit stamps the run's end.
//
//go:nosplit
func exit(k *layout.KState, status uint32) {
	t := &k.Tasks[k.Cur]
	t.State = layout.TaskExited
	t.Status = status
	k.Live--
	if status != 0 && k.RunStatus == 0 {
		k.RunStatus = status
	}
	p := &k.Procs[t.Proc]
	if p.Threads--; p.Threads == 0 {
		for fd := uint32(0); fd < p.NFDs; fd++ {
			if k.FDSlots[p.FDBase+fd] != 0 {
				closeFD(k, t.Proc, fd)
			}
		}
	}
	if k.Live == 0 {
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
// next task that can run: its registers go into f and its EAX is
// returned. When no task can run the run ends.
//
//go:nosplit
func schedule(k *layout.KState, f *layout.PtRegs, r uint32) uint32 {
	prev := k.Cur
	t := &k.Tasks[prev]
	copyRegs(&t.Regs, f)
	t.Regs.AX = r
	for {
		next := dequeue(k)
		if next == layout.NoTask {
			if k.Live == 0 {
				endRun(layout.ReasonExit, k.RunStatus)
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

// ready reports whether blocked task t's call can go ahead now.
//
//go:nosplit
func ready(k *layout.KState, t *layout.Task) bool {
	pp := &k.Pipes[t.Obj]
	switch t.Wait {
	case layout.WaitRead:
		return pp.WPos != pp.RPos || pp.Writers == 0
	case layout.WaitWrite:
		return pp.Readers == 0 || writable(pp, t.Regs.DX)
	}
	// A socket's writer (WaitSockWrite) is woken only when its call can
	// go ahead (sockRead, closeFD); should others have filled the queue
	// again first, its retried call waits again, as in Linux, where the
	// woken task runs and checks.
	return true
}

// resume makes task i the running one, in its process's address space,
// and retries the call it blocked in; it reports false when the call
// cannot go ahead yet (the task waits again, before its CR3 is loaded) or
// blocked again.
//
//go:nosplit
func resume(k *layout.KState, i uint32) bool {
	t := &k.Tasks[i]
	pending := t.Wait != layout.WaitNone
	if pending && !ready(k, t) {
		park(k, i, t.Wait, t.Obj)
		return false
	}
	k.Cur = i
	t.State = layout.TaskRunning
	t.Wait = layout.WaitNone
	if t.Proc != k.Loaded {
		k.Loaded = t.Proc
		setCR3(k.Procs[t.Proc].KernelCR3)
		k.CR3Loads++
	}
	if !pending {
		return true
	}
	r := do(k, t.Regs.OrigAX, t.Regs.BX, t.Regs.CX, t.Regs.DX)
	if t.State != layout.TaskRunning {
		return false
	}
	t.Regs.AX = r
	return true
}
