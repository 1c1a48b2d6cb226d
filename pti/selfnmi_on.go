//go:build ptilab_selfnmi

package pti

// selfNMI makes getppid send this CPU an NMI (sysSelfNMI), in test images
// only (host/image.Build's tags): the test that counts NMIs under an
// entry whose NMI path nothing else reaches, FRED's under Bochs, which
// has no monitor to inject one (test/bochs_test.go, TestBochsFREDNMI).
const selfNMI = true
