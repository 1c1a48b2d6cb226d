package goos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
)

// newSched returns a scheduler with n threads, thread 0 running.
func newSched(t *testing.T, n int) *scheduler {
	t.Helper()
	s := &scheduler{}
	s.init()
	for i := 0; i < n; i++ {
		slot, tid := s.spawn(0)
		require.Equal(t, i, slot)
		require.Equal(t, int32(i+1), tid)
	}
	next, _, _ := s.pick(0)
	require.Equal(t, 0, next)
	return s
}

// waitFutex makes the running thread wait on a futex and picks the next one.
func (s *scheduler) waitFutex(addr, deadline uint64) int {
	s.block(waitFutex, addr, deadline, 0)
	next, _, _ := s.pick(0)
	return next
}

func TestSchedRoundRobinYield(t *testing.T) {
	s := newSched(t, 3)
	var order []int
	for i := 0; i < 6; i++ {
		order = append(order, int(s.cur))
		s.yield()
		next, _, dead := s.pick(0)
		require.False(t, dead)
		require.Equal(t, int(s.cur), next)
	}
	assert.Equal(t, []int{0, 1, 2, 0, 1, 2}, order)
	assert.Equal(t, int64(0), s.t[0].ret, "yield returns 0")
}

func TestSchedYieldAloneKeepsRunning(t *testing.T) {
	s := newSched(t, 1)
	s.yield()
	next, _, dead := s.pick(0)
	assert.False(t, dead)
	assert.Equal(t, 0, next)
	assert.Equal(t, uint64(1), s.switches, "only the first pick switches")
}

func TestSchedFutexWakeOldestFirst(t *testing.T) {
	s := newSched(t, 4)
	const word = 0x1000
	// Threads 0, 1 and 2 wait on the word in that order; 3 runs.
	for want := 1; want <= 3; want++ {
		assert.Equal(t, want, s.waitFutex(word, 0))
	}
	assert.Equal(t, 0, s.wake(waitFutex, 0x2000, 10), "other words wake nobody")
	assert.Equal(t, 2, s.wake(waitFutex, word, 2))
	assert.Equal(t, uint8(threadRunnable), s.t[0].state)
	assert.Equal(t, uint8(threadRunnable), s.t[1].state)
	assert.Equal(t, uint8(threadBlocked), s.t[2].state)
	assert.Equal(t, 1, s.wake(waitFutex, word, 10))
	// They run in wake order after the waker yields.
	s.yield()
	var order []int
	for i := 0; i < 4; i++ {
		next, _, _ := s.pick(0)
		order = append(order, next)
		s.yield()
	}
	assert.Equal(t, []int{0, 1, 2, 3}, order)
	for i := 0; i < 3; i++ {
		assert.Equal(t, int64(0), s.t[i].ret, "woken futex waiters return 0")
	}
}

func TestSchedTimeouts(t *testing.T) {
	s := newSched(t, 3)
	s.block(waitFutex, 0x1000, 500, 0) // thread 0: futex with a deadline
	next, _, _ := s.pick(0)
	require.Equal(t, 1, next)
	s.block(waitSleep, 0, 300, 0) // thread 1: sleep
	next, _, _ = s.pick(0)
	require.Equal(t, 2, next)
	s.block(waitPoll, 7, 0, 0) // thread 2: epoll without timeout

	next, until, dead := s.pick(100)
	assert.Equal(t, -1, next)
	assert.False(t, dead)
	assert.Equal(t, uint64(300), until, "idle until the earliest deadline")

	next, _, _ = s.pick(300)
	assert.Equal(t, 1, next, "the sleeper wakes at its deadline")
	assert.Equal(t, int64(0), s.t[1].ret)

	s.block(waitSleep, 0, 0, 0) // thread 1 now waits for ever
	next, _, _ = s.pick(1000)
	assert.Equal(t, 0, next)
	assert.Equal(t, int64(-linuxabi.ETIMEDOUT), s.t[0].ret, "a futex wait times out with ETIMEDOUT")
}

func TestSchedDeadlock(t *testing.T) {
	s := newSched(t, 2)
	s.waitFutex(0x1000, 0)
	s.block(waitPoll, 3, 0, 0)
	next, _, dead := s.pick(0)
	assert.Equal(t, -1, next)
	assert.True(t, dead, "nothing runnable and no deadline")
}

func TestSchedYieldBehindExpired(t *testing.T) {
	s := newSched(t, 2)
	s.block(waitSleep, 0, 50, 0) // thread 0 sleeps
	next, _, _ := s.pick(0)
	require.Equal(t, 1, next)
	// Thread 1 spins with sched_yield until thread 0's sleep is over: the
	// sleeper must run before the yielder again.
	s.yield()
	next, _, _ = s.pick(10)
	require.Equal(t, 1, next)
	s.yield()
	next, _, _ = s.pick(60)
	assert.Equal(t, 0, next)
}

func TestSchedPollWakeRestarts(t *testing.T) {
	s := newSched(t, 2)
	s.block(waitPoll, 5, 0, 0)
	s.pick(0)
	assert.Equal(t, 1, s.wake(waitPoll, 5, maxThreads))
	assert.True(t, s.t[0].restart, "a woken poller re-executes epoll_pwait")
	s.block(waitFutex, 9, 0, 0)
	s.pick(0)
	s.wake(waitFutex, 9, 1)
	assert.False(t, s.t[1].restart, "a woken futex waiter returns")
}

func TestSchedExitAndSlotReuse(t *testing.T) {
	s := newSched(t, maxThreads)
	slot, _ := s.spawn(0)
	assert.Equal(t, -1, slot, "all slots taken")
	s.exit()
	next, _, _ := s.pick(0)
	assert.Equal(t, 1, next)
	slot, tid := s.spawn(0)
	assert.Equal(t, 0, slot, "an exited thread's slot is reused")
	assert.Equal(t, int32(maxThreads+1), tid, "thread ids are not reused")
}
