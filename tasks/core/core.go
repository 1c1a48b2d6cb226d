// Package core is the part of the tasks kernel that both worlds run: the
// 64-bit kernel (package tasks) and the 32-bit one (i386pae/kernel32,
// compiled for GOARCH=386 into the runtime-free blob). It holds the pipe
// and socket rings, the wait queues and the scheduler's decisions, on a
// Kernel the world keeps (a variable of package tasks; a field of
// layout.KState at its fixed address in the 32-bit world). The world
// keeps what differs: the system-call numbers and descriptors, the
// processes and their CR3 values, the registers, the rings' memory and
// the check of the user's buffers, and it switches.
//
// The code is written for the blob, where there is no Go runtime; the
// blob's tests (package i386pae: every call and jump lands in the blob, no
// absolute address outside the kernel window) cover it. So:
//
//   - every function is go:nosplit (no stack check, which would read the g
//     from TLS); the blob is built with -gcflags=-B (no bounds checks,
//     which would call the runtime's panics);
//   - no global variables (their addresses are the link address's) and no
//     allocation, maps, interfaces or function values;
//   - no pointer is stored into memory (a write barrier would read the
//     runtime's flag): links are task indexes, NoTask ends a list;
//   - no division or remainder by a variable (a zero check would call
//     runtime.panicdivide): the rings are RingSize bytes, a power of two;
//     no copy() or struct copies (runtime.memmove, duffcopy): bytes move
//     by fromRing and toRing, the world's machine's (the blob's assembly
//     in mem_386.s; Go in ring.go for the 64-bit kernel and the 32-bit
//     kernel's host tests).
//
// Results are a byte count or a negative errno (linuxabi's), as the
// system call returns it; addresses and lengths are uintptr, 32 or 64
// bits as the world's.
package core

import "github.com/ptilab/ptilab/linuxabi"

// Bounds of the tables, the same in both worlds: enough for
// sched-messaging with 25 groups (1001 tasks, each in its own process).
const (
	MaxTasks = 1024
	MaxPipes = 1024 // pipes and socket pairs' channels (two each)
	// RingSize is the bytes of a pipe's ring and of each way of a socket
	// pair: Linux's default pipe size, 16 pages. A power of two.
	RingSize = 16 * 4096
	// PipeBuf is the most bytes a write puts in a pipe at once, whole
	// (Linux's PIPE_BUF).
	PipeBuf = 4096
	// MaxSkbs bounds a socket channel's queue of skbs.
	MaxSkbs = linuxabi.UnixMaxSkbs

	NoTask = 0xffffffff // an empty link
)

// Task states (Task.State).
const (
	TaskFree     = 0
	TaskRunnable = 1
	TaskRunning  = 2
	TaskBlocked  = 3
	TaskExited   = 4
)

// What a blocked task waits for (Task.Wait).
const (
	WaitNone  = 0
	WaitRead  = 1 // data in, or the last writer gone from, a pipe or a socket's channel
	WaitWrite = 2 // room in, or the last reader gone from, a pipe
	// WaitSockWrite is room in a socket pair's channel (its charge
	// against sk_sndbuf), or the peer gone.
	WaitSockWrite = 3
)

// Task is the core's part of a task.
type Task struct {
	State uint32 // Task*
	// Wait is what a blocked (or woken, not yet resumed) task waits for:
	// its system call is retried when it runs again; WaitNone when it
	// runs or yielded.
	Wait uint32
	Obj  uint32 // the pipe (or socket channel) it waits on
	// Need is the room a write waiting on a pipe needs: all its bytes up
	// to PipeBuf, one for a longer one.
	Need   uint32
	Next   uint32 // the run queue's or a wait queue's link
	Status uint32 // an exited task's exit status
}

// Queue is a FIFO of tasks, linked through Task.Next.
type Queue struct{ Head, Tail uint32 }

// Pipe is a pipe, or one way of a socket pair (a channel): the bytes
// written and read so far (positions modulo RingSize in its ring, which
// the world keeps), its open ends and the tasks waiting to read and to
// write.
type Pipe struct {
	WPos, RPos       uint32
	Readers, Writers uint32
	ReadQ, WriteQ    Queue
	Sock             uint32 // 1 for a socket pair's channel (Socks), 0 for a pipe
}

// Kernel is the state the core works on.
type Kernel struct {
	Cur    uint32 // the running task
	Run    Queue  // the run queue
	Live   uint32 // tasks that have not exited
	Status uint32 // the first nonzero exit status of the run
	Tasks  [MaxTasks]Task
	Pipes  [MaxPipes]Pipe
	Socks  [MaxPipes]Sock // by channel: a socket pair's channels are pipe slots
}

// Reset empties k for a new run: no task, every pipe closed, every link
// NoTask.
//
//go:nosplit
func (k *Kernel) Reset() {
	k.Cur, k.Live, k.Status = NoTask, 0, 0
	k.Run.Head, k.Run.Tail = NoTask, NoTask
	for i := range k.Tasks {
		k.clearTask(uint32(i))
	}
	for i := range k.Pipes {
		k.OpenPipe(uint32(i))
		k.Pipes[i].Readers, k.Pipes[i].Writers = 0, 0
	}
}

// clearTask makes task i a free one, linked to nothing (field by field:
// a struct copy could call the runtime).
//
//go:nosplit
func (k *Kernel) clearTask(i uint32) {
	t := &k.Tasks[i]
	t.State, t.Wait, t.Obj, t.Need, t.Next, t.Status = TaskFree, WaitNone, 0, 0, NoTask, 0
}

// OpenPipe makes slot p an open pipe: no bytes, one reader, one writer,
// nobody waiting.
//
//go:nosplit
func (k *Kernel) OpenPipe(p uint32) {
	pp := &k.Pipes[p]
	pp.WPos, pp.RPos, pp.Readers, pp.Writers, pp.Sock = 0, 0, 1, 1, 0
	pp.ReadQ.Head, pp.ReadQ.Tail, pp.WriteQ.Head, pp.WriteQ.Tail = NoTask, NoTask, NoTask, NoTask
}

// AddTask makes task i live, the running one if it is the first (i 0),
// else queued to run.
//
//go:nosplit
func (k *Kernel) AddTask(i uint32) {
	k.clearTask(i)
	k.Live++
	if i == 0 {
		k.Cur = 0
		k.Tasks[0].State = TaskRunning
		return
	}
	k.Enqueue(i)
}

// Enqueue puts task i at the end of the run queue; a woken task keeps
// what it waited for until it runs: its call is then retried.
//
//go:nosplit
func (k *Kernel) Enqueue(i uint32) {
	k.Tasks[i].State = TaskRunnable
	k.push(&k.Run, i)
}

// push puts task i at the end of q.
//
//go:nosplit
func (k *Kernel) push(q *Queue, i uint32) {
	k.Tasks[i].Next = NoTask
	if q.Tail == NoTask {
		q.Head = i
	} else {
		k.Tasks[q.Tail].Next = i
	}
	q.Tail = i
}

// dequeue takes the first task off the run queue, NoTask when it is
// empty.
//
//go:nosplit
func (k *Kernel) dequeue() uint32 {
	i := k.Run.Head
	if i == NoTask {
		return i
	}
	k.Run.Head = k.Tasks[i].Next
	if k.Run.Head == NoTask {
		k.Run.Tail = NoTask
	}
	k.Tasks[i].Next = NoTask
	return i
}

// block makes the running task wait for kind on pipe p; its call is
// retried when a wake-up makes it runnable and the scheduler picks it.
//
//go:nosplit
func (k *Kernel) block(kind, p uint32) { k.park(k.Cur, kind, p) }

// park makes task i wait for kind on pipe p, at the end of the pipe's
// queue for kind.
//
//go:nosplit
func (k *Kernel) park(i, kind, p uint32) {
	t := &k.Tasks[i]
	t.State = TaskBlocked
	t.Wait = kind
	t.Obj = p
	q := &k.Pipes[p].ReadQ
	if kind != WaitRead { // WaitWrite, WaitSockWrite
		q = &k.Pipes[p].WriteQ
	}
	k.push(q, i)
}

// wake makes every task of q runnable, in the order they blocked. Linux
// wakes one exclusive waiter (fs/pipe.c); here each woken task checks its
// condition when picked (Next) and goes back to waiting, without a
// switch, when another used the wake-up.
//
//go:nosplit
func (k *Kernel) wake(q *Queue) {
	for i := q.Head; i != NoTask; {
		next := k.Tasks[i].Next
		k.Enqueue(i)
		i = next
	}
	q.Head, q.Tail = NoTask, NoTask
}

// Yield puts the running task at the end of the run queue
// (sched_yield).
//
//go:nosplit
func (k *Kernel) Yield() { k.Enqueue(k.Cur) }

// Exit ends the running task with status and reports whether it was the
// last: the run's status is the first nonzero one. The world closes the
// descriptors of its process when it was the last thread.
//
//go:nosplit
func (k *Kernel) Exit(status uint32) bool {
	t := &k.Tasks[k.Cur]
	t.State = TaskExited
	t.Status = status
	k.Live--
	if status != 0 && k.Status == 0 {
		k.Status = status
	}
	return k.Live == 0
}

// Running reports whether the running task still runs after its system
// call: false when the call blocked, yielded or exited, and the world
// must switch.
//
//go:nosplit
func (k *Kernel) Running() bool { return k.Tasks[k.Cur].State == TaskRunning }

// Next takes the next task that can run off the run queue: a woken task
// whose call cannot go ahead yet waits again (before the world loads its
// CR3). It returns NoTask when none is left: the run is over when Live
// is 0, deadlocked otherwise.
//
//go:nosplit
func (k *Kernel) Next() uint32 {
	for {
		i := k.dequeue()
		if i == NoTask {
			return i
		}
		t := &k.Tasks[i]
		if t.Wait == WaitNone || k.ready(t) {
			return i
		}
		k.park(i, t.Wait, t.Obj)
	}
}

// ready reports whether blocked task t's call can go ahead now.
//
//go:nosplit
func (k *Kernel) ready(t *Task) bool {
	pp := &k.Pipes[t.Obj]
	switch t.Wait {
	case WaitRead:
		return pp.WPos != pp.RPos || pp.Writers == 0
	case WaitWrite:
		return pp.Readers == 0 || RingSize-(pp.WPos-pp.RPos) >= t.Need
	}
	// A socket's writer (WaitSockWrite) is woken only when its call can
	// go ahead (sockRead, CloseRead); should others have filled the queue
	// again first, its retried call waits again, as in Linux, where the
	// woken task runs and checks.
	return true
}

// Resume makes task i, which Next returned, the running one, and reports
// whether it was woken in a system call, which the world retries: its
// result is the task's; when the retry blocks again, the world takes the
// next task.
//
//go:nosplit
func (k *Kernel) Resume(i uint32) (retry bool) {
	t := &k.Tasks[i]
	retry = t.Wait != WaitNone
	k.Cur = i
	t.State = TaskRunning
	t.Wait = WaitNone
	return retry
}
