package goos

import "github.com/ptilab/ptilab/linuxabi"

// The scheduler of the runtime's threads. Threads switch only in system
// calls (interrupts stay masked): when one blocks (futex wait, nanosleep,
// epoll_pwait), yields or exits, the next runnable one runs; and a thread
// that has run for a time slice is preempted at its next system call when
// another can run, so that the runtime's sysmon gets the CPU to preempt
// long-running goroutines. With nothing runnable the CPU spins until the
// earliest deadline; with nothing runnable and no deadline the run is
// deadlocked and ends with a report.
//
// This file is the policy alone, over the thread states; it touches no
// registers and is tested on the host. thread.go moves the registers.

// maxThreads bounds the runtime's threads (Ms). A Go program with one P
// rarely needs more than a dozen.
const maxThreads = 128

// Thread states.
const (
	threadFree     = iota
	threadRunnable // on the run queue
	threadRunning  // the current thread
	threadBlocked  // waiting: see wait
	threadExited
)

// What a blocked thread waits for.
const (
	waitNone  = iota
	waitFutex // a FUTEX_WAKE on addr, or the deadline
	waitSleep // the deadline
	waitPoll  // an event on an epoll instance, or the deadline
)

var stateNames = [...]string{"free", "runnable", "running", "blocked", "exited"}
var waitNames = [...]string{"", "futex", "sleep", "epoll"}

// schedEntry is the scheduler's view of one thread.
type schedEntry struct {
	state    uint8
	wait     uint8
	tid      int32
	addr     uint64 // futex word or epoll instance
	deadline uint64 // TSC value at which the wait times out; 0: none
	seq      uint64 // order in which waits began (futex wake order)
	ret      int64  // the system-call result the thread resumes with
	restart  bool   // resume by re-executing the system call
	next     int16  // run-queue link, -1 at the tail
}

// scheduler holds every thread's state and the run queue.
type scheduler struct {
	t          [maxThreads]schedEntry
	head, tail int16 // run queue, FIFO
	cur        int16 // the running thread, -1 when none
	yielded    int16 // the thread that yielded, queued again by pick
	last       int16 // the thread that ran last
	nextTID    int32
	seq        uint64
	switches   uint64 // switches from one thread to another
}

func (s *scheduler) init() {
	s.head, s.tail, s.cur, s.yielded, s.last = -1, -1, -1, -1, -1
	s.nextTID = 1
	for i := range s.t {
		s.t[i] = schedEntry{next: -1}
	}
}

// spawn takes a free slot for a new thread, runnable with result ret. It
// returns the slot and the thread id, or -1 when all slots are taken.
func (s *scheduler) spawn(ret int64) (int, int32) {
	for i := range s.t {
		if st := s.t[i].state; st == threadFree || st == threadExited {
			tid := s.nextTID
			s.nextTID++
			s.t[i] = schedEntry{tid: tid, ret: ret, next: -1}
			s.enqueue(i)
			return i, tid
		}
	}
	return -1, 0
}

func (s *scheduler) enqueue(i int) {
	e := &s.t[i]
	e.state = threadRunnable
	e.wait = waitNone
	e.next = -1
	if s.tail < 0 {
		s.head = int16(i)
	} else {
		s.t[s.tail].next = int16(i)
	}
	s.tail = int16(i)
}

func (s *scheduler) dequeue() int {
	i := s.head
	if i < 0 {
		return -1
	}
	s.head = s.t[i].next
	if s.head < 0 {
		s.tail = -1
	}
	s.t[i].next = -1
	return int(i)
}

// yield puts the running thread at the back of the run queue, behind any
// thread whose wait has timed out by the next pick; it resumes with result
// 0.
func (s *scheduler) yield() { s.preempt(0) }

// preempt is yield for a thread whose system call completed with ret: it
// resumes with that result.
func (s *scheduler) preempt(ret int64) {
	if s.cur >= 0 {
		s.t[s.cur].ret = ret
		s.t[s.cur].restart = false
		s.yielded = s.cur
		s.cur = -1
	}
}

// waiting reports whether a thread other than the running one could run at
// now: one is runnable, or a wait has timed out.
func (s *scheduler) waiting(now uint64) bool {
	if s.head >= 0 {
		return true
	}
	d, ok := s.nextDeadline()
	return ok && d <= now
}

// block makes the running thread wait for kind on addr until deadline
// (0: no deadline). It resumes with result ret unless the wait times out.
func (s *scheduler) block(kind uint8, addr, deadline uint64, ret int64) {
	e := &s.t[s.cur]
	e.state = threadBlocked
	e.wait = kind
	e.addr = addr
	e.deadline = deadline
	e.ret = ret
	e.restart = false
	s.seq++
	e.seq = s.seq
	s.cur = -1
}

// exit ends the running thread.
func (s *scheduler) exit() {
	s.t[s.cur].state = threadExited
	s.cur = -1
}

// wake makes up to n threads waiting for kind on addr runnable, oldest
// wait first, and returns how many it woke. Woken poll waiters re-execute
// their system call, to collect the events.
func (s *scheduler) wake(kind uint8, addr uint64, n int) int {
	woken := 0
	for woken < n {
		best := -1
		for i := range s.t {
			e := &s.t[i]
			if e.state == threadBlocked && e.wait == kind && e.addr == addr && (best < 0 || e.seq < s.t[best].seq) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		s.t[best].restart = kind == waitPoll
		s.enqueue(best)
		woken++
	}
	return woken
}

// expire makes every thread whose deadline is at or before now runnable:
// futex waits time out with -ETIMEDOUT, sleeps and polls end with 0.
func (s *scheduler) expire(now uint64) {
	for i := range s.t {
		e := &s.t[i]
		if e.state != threadBlocked || e.deadline == 0 || e.deadline > now {
			continue
		}
		switch e.wait {
		case waitFutex:
			e.ret = -linuxabi.ETIMEDOUT
		default:
			e.ret = 0
		}
		s.enqueue(i)
	}
}

// nextDeadline returns the earliest deadline of a blocked thread.
func (s *scheduler) nextDeadline() (uint64, bool) {
	var d uint64
	found := false
	for i := range s.t {
		e := &s.t[i]
		if e.state == threadBlocked && e.deadline != 0 && (!found || e.deadline < d) {
			d, found = e.deadline, true
		}
	}
	return d, found
}

// pick chooses the thread to run after the running one blocked, yielded or
// exited (s.cur < 0), or keeps the running one. It returns the thread, or
// -1 when none is runnable; then idleUntil is the earliest deadline to wait
// for, and deadlock is set when there is none.
func (s *scheduler) pick(now uint64) (next int, idleUntil uint64, deadlock bool) {
	if s.cur >= 0 {
		return int(s.cur), 0, false
	}
	s.expire(now)
	if s.yielded >= 0 {
		s.enqueue(int(s.yielded))
		s.yielded = -1
	}
	if i := s.dequeue(); i >= 0 {
		s.t[i].state = threadRunning
		s.cur = int16(i)
		if s.last != s.cur {
			s.switches++
			s.last = s.cur
		}
		return i, 0, false
	}
	d, ok := s.nextDeadline()
	return -1, d, !ok
}
