//go:build !ptilab_selfnmi

package pti

// selfNMI is false in every image but the test one: see selfnmi_on.go.
const selfNMI = false
