// Package exitstatus names the exit statuses of ptilab's ring-3 programs
// besides 0, the same in the 64-bit world (pti/user_amd64.s, through pti's
// go_asm.h) and in the 32-bit one (i386pae/kernel32/user_386.s): each
// status is one failure of one program, so that a run's result can say
// which. It depends on nothing, so that the 32-bit kernel, built for
// GOARCH=386, imports it too.
package exitstatus

// The statuses.
const (
	PingWriteFailed = 1 // ping's write of the token was short or failed
	PingReadFailed  = 2 // ping's read of the reply was short or failed
	PingBadReply    = 3 // the reply was not the token plus pong's mark
	PongWriteFailed = 4 // pong's write of a reply was short or failed
	PongReadFailed  = 5 // pong's read failed
	MsgReadyFailed  = 6 // a messaging task's ready byte, or the starter's read of them
	MsgWaitFailed   = 7 // the start signal: a task's read of it, or the starter's write
	MsgWriteFailed  = 8 // a messaging sender's write was short or failed
	MsgReadFailed   = 9 // a messaging receiver's read failed, or its pipe ended early
)

// Name says what exit status s means ("ping: read failed"), and false for
// a status no program exits with on a failure (0 among them).
func Name(s uint64) (string, bool) {
	switch s {
	case PingWriteFailed:
		return "ping: write failed", true
	case PingReadFailed:
		return "ping: read failed", true
	case PingBadReply:
		return "ping: wrong reply", true
	case PongWriteFailed:
		return "pong: write failed", true
	case PongReadFailed:
		return "pong: read failed", true
	case MsgReadyFailed:
		return "messaging: ready signal failed", true
	case MsgWaitFailed:
		return "messaging: start signal failed", true
	case MsgWriteFailed:
		return "messaging sender: write failed", true
	case MsgReadFailed:
		return "messaging receiver: read failed", true
	}
	return "", false
}
