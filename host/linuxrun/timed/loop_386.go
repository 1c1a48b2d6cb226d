package timed

// maxEntry is the last Entry the 386 build has.
const maxEntry = Vsyscall
