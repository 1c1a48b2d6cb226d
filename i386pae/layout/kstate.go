package layout

// Building a run's KState: what the 64-bit side (i386pae.Tasks) writes
// before a run, and the kernel's host tests (package kernel32 with the
// kernel32host tag) write the same way. The tasks kernel itself
// (kernel32/tasks.go) only reads and updates it.

// Reset empties k for a new run: no task, process, pipe or file, every
// link NoTask, the counts zero.
func (k *KState) Reset() {
	*k = KState{}
	k.Loaded = NoTask
	k.Core.Reset()
}

// AddProcess adds a process with descriptors 0 to nfds-1, all closed,
// whose data pages end at dataEnd, and returns its number, or -1 when the
// process table or the descriptor slots are used up. Its KernelCR3 is set
// when the run's address spaces are known.
func (k *KState) AddProcess(nfds int, dataEnd uint32) int {
	i := 0
	for i < MaxProcs && k.Procs[i].Used != 0 {
		i++
	}
	if i == MaxProcs || nfds < 0 || nfds > MaxFDSlots-int(k.NFDSlots) {
		return -1
	}
	k.Procs[i] = Proc{Used: 1, FDBase: k.NFDSlots, NFDs: uint32(nfds), DataEnd: dataEnd}
	k.NFDSlots += uint32(nfds)
	return i
}

// FD returns the slot of descriptor fd of process proc, nil when there is
// none.
func (k *KState) FD(proc, fd int) *uint32 {
	if proc < 0 || proc >= MaxProcs || k.Procs[proc].Used == 0 || fd < 0 || uint32(fd) >= k.Procs[proc].NFDs {
		return nil
	}
	return &k.FDSlots[k.Procs[proc].FDBase+uint32(fd)]
}

// fdFree reports whether descriptor fd of process proc exists and is
// closed.
func (k *KState) fdFree(proc, fd int) bool {
	slot := k.FD(proc, fd)
	return slot != nil && *slot == 0
}

// AddTask adds a task of process proc that starts at eip with stack
// pointer esp and arguments args (EBX, ECX, EDX, ESI, EDI, EBP), and
// returns its number, or -1 when the table is full or there is no such
// process. Task 0 is the one the run starts with, in its process's
// address space; the others are queued and first run when a switch picks
// them.
func (k *KState) AddTask(proc int, eip, esp uint32, args [6]uint32) int {
	i := int(k.NTasks)
	if i == MaxTasks || proc < 0 || proc >= MaxProcs || k.Procs[proc].Used == 0 {
		return -1
	}
	k.NTasks++
	t := &k.Tasks[i]
	t.Proc = uint32(proc)
	t.Regs = PtRegs{IP: eip, CS: USER_CS, Flags: EFLAGS_FIXED, SP: esp, SS: USER_DS, DS: USER_DS, ES: USER_DS,
		BX: args[0], CX: args[1], DX: args[2], SI: args[3], DI: args[4], BP: args[5]}
	k.Procs[proc].Threads++
	k.Core.AddTask(uint32(i))
	if i == 0 {
		k.Loaded = uint32(proc)
	}
	return i
}

// FreePipe returns the pipe AddPipe would make next, MaxPipes when none
// is left: its ring is at PipeBase + n*PipeSize in every process's kernel
// side, which the caller maps.
func (k *KState) FreePipe() int {
	n := 0
	for n < MaxPipes && k.Rings[n] != 0 {
		n++
	}
	return n
}

// AddPipe adds a pipe whose read end is descriptor rfd of process rproc
// and whose write end is wfd of wproc, and returns its number (FreePipe's),
// or -1 when no pipe is left or a descriptor is out of range or taken.
func (k *KState) AddPipe(rproc, rfd, wproc, wfd int) int {
	n := k.FreePipe()
	if n == MaxPipes || !k.fdFree(rproc, rfd) || !k.fdFree(wproc, wfd) || rproc == wproc && rfd == wfd {
		return -1
	}
	k.Rings[n] = PipeBase + uint32(n)*PipeSize
	k.Core.OpenPipe(uint32(n))
	*k.FD(rproc, rfd) = FDPipeRead + 2*uint32(n)
	*k.FD(wproc, wfd) = FDPipeWrite + 2*uint32(n)
	return n
}

// FreePair returns the first of the two adjacent pipe slots AddSocketPair
// would make next (an even one), MaxPipes when none is left: their rings
// are at PipeBase + c*PipeSize and the next, which the caller maps.
func (k *KState) FreePair() int {
	c := 0
	for c < MaxPipes && (k.Rings[c] != 0 || k.Rings[c+1] != 0) {
		c += 2
	}
	return c
}

// AddSocketPair adds an AF_UNIX stream socket pair whose one endpoint is
// descriptor afd of process aproc and the other bfd of bproc, and returns
// the channel a reads (FreePair's; b reads the next), or -1 when no pair
// is left or a descriptor is out of range or taken.
func (k *KState) AddSocketPair(aproc, afd, bproc, bfd int) int {
	c := k.FreePair()
	if c == MaxPipes || !k.fdFree(aproc, afd) || !k.fdFree(bproc, bfd) || aproc == bproc && afd == bfd {
		return -1
	}
	k.OpenPair(uint32(c))
	*k.FD(aproc, afd) = FDSocket + uint32(c)
	*k.FD(bproc, bfd) = FDSocket + uint32(c) + 1
	return c
}

// OpenPair makes channels c and c+1 a socket pair's, open at both ends,
// with their rings. The kernel's socketpair(2) calls it too.
//
//go:nosplit
func (k *KState) OpenPair(c uint32) {
	k.Rings[c], k.Rings[c+1] = PipeBase+c*PipeSize, PipeBase+(c+1)*PipeSize
	k.Core.OpenPair(c)
}

// ShareFD gives process to descriptor fd of process from, the same open
// pipe end (as fork does); false when fd is not an open pipe end in from
// or is taken in to.
func (k *KState) ShareFD(from, to, fd int) bool {
	src := k.FD(from, fd)
	if src == nil || !k.fdFree(to, fd) {
		return false
	}
	obj := *src
	switch {
	case obj >= FDSocket && obj < FDFile:
		k.Core.Pipes[obj-FDSocket].Readers++
		k.Core.Pipes[(obj-FDSocket)^1].Writers++
	case obj == 0 || obj >= FDFile:
		return false
	case obj&1 == FDPipeRead:
		k.Core.Pipes[obj>>1].Readers++
	default:
		k.Core.Pipes[(obj-FDPipeWrite)>>1].Writers++
	}
	*k.FD(to, fd) = obj
	return true
}

// AddFile opens descriptor fd of process proc on a new kernel file of size
// bytes (for lseek) and returns the file's number, or -1 when no file is
// left or the descriptor is out of range or taken.
func (k *KState) AddFile(proc, fd int, size uint32) int {
	if k.NFiles == MaxFiles || !k.fdFree(proc, fd) {
		return -1
	}
	n := k.NFiles
	k.NFiles++
	k.Files[n] = File{Size: size}
	*k.FD(proc, fd) = FDFile + n
	return int(n)
}
