package timed

// maxEntry is the last Entry the amd64 build has: Vsyscall is the 32-bit
// vDSO's.
const maxEntry = Native
