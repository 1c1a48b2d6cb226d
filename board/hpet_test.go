package board

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// hpetTable builds an ACPI HPET table (HPET specification 3.2.4): the
// 36-byte ACPI header, the Event Timer Block ID, the base address's
// Generic Address Structure (space, bit width, bit offset, access size,
// address), the HPET number, the minimum tick and the page protection.
func hpetTable(blockID uint32, space uint8, base uint64) []byte {
	t := make([]byte, hpetTableLength)
	copy(t, "HPET")
	putLE32(t[4:], hpetTableLength)
	t[8] = 1               // revision
	copy(t[10:], "PTILAB") // OEM ID
	putLE32(t[hpetTableBlockID:], blockID)
	t[hpetTableBase] = space
	putLE32(t[hpetTableBase+4:], uint32(base))
	putLE32(t[hpetTableBase+8:], uint32(base>>32))
	t[hpetTableMinTick] = 0x80 // 128 ticks, as Intel PCHs publish
	return t
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// The Event Timer Block IDs that Linux logs ("ACPI: HPET id: ...") on
// QEMU's q35 and i440FX (8086A201H: vendor 8086H, legacy-replacement
// capable, 64-bit counter, timers 0 to 2, revision 1) and on Intel's
// PCHs of the reference machines (8086A701H: the same with timers 0 to
// 7).
const (
	qemuHPETID  = 0x8086a201
	intelHPETID = 0x8086a701
)

func TestParseHPET(t *testing.T) {
	h, why := ParseHPET(hpetTable(intelHPETID, gasMemory, 0xfed00000))
	assert.Equal(t, HPETOK, why, why.String())
	assert.Equal(t, uint64(0xfed00000), h.Base)
	assert.Equal(t, uint32(intelHPETID), h.BlockID)
	assert.Equal(t, uint16(128), h.MinTick)
	assert.Zero(t, h.Number)

	long := append(hpetTable(qemuHPETID, gasMemory, 0xfed00000), 0, 0, 0, 0)
	_, why = ParseHPET(long)
	assert.Equal(t, HPETOK, why, "bytes beyond the table's length are ignored")

	for name, tc := range map[string]struct {
		table []byte
		want  HPETWhy
	}{
		"short":          {hpetTable(intelHPETID, gasMemory, 0xfed00000)[:55], HPETBadTable},
		"not HPET":       {append([]byte("APIC"), hpetTable(intelHPETID, gasMemory, 0xfed00000)[4:]...), HPETBadTable},
		"in I/O space":   {hpetTable(intelHPETID, gasIO, 0xfed00000), HPETNotMemory},
		"base 0":         {hpetTable(intelHPETID, gasMemory, 0), HPETNoBase},
		"above 4 GiB":    {hpetTable(intelHPETID, gasMemory, 0x1_0000_0000), HPETAbove4G},
		"ends past 4GiB": {hpetTable(intelHPETID, gasMemory, 0xffff_fe00), HPETAbove4G},
	} {
		_, why := ParseHPET(tc.table)
		assert.Equal(t, tc.want, why, "%s: %s", name, why)
	}
	bad := hpetTable(intelHPETID, gasMemory, 0xfed00000)
	putLE32(bad[4:], 36)
	_, why = ParseHPET(bad)
	assert.Equal(t, HPETBadTable, why, "a length field below 56")
	_, why = ParseHPET(hpetTable(intelHPETID, gasMemory, 0xffff_fc00))
	assert.Equal(t, HPETOK, why, "the block ends at 4 GiB")
}

func TestCheckHPETCaps(t *testing.T) {
	// Intel PCH: 69841279 fs (14.31818 MHz), a 64-bit counter.
	p, wide, why := CheckHPETCaps(intelHPETID, 69_841_279)
	assert.Equal(t, HPETOK, why)
	assert.Equal(t, uint32(69_841_279), p)
	assert.True(t, wide)
	assert.Equal(t, uint64(14_318_180), HPETCounter(p).Hz)
	assert.Equal(t, uint(32), HPETCounter(p).Bits, "the low 32 bits, as Linux reads them")

	// QEMU: 10 ns (100 MHz).
	p, _, why = CheckHPETCaps(qemuHPETID, 10_000_000)
	assert.Equal(t, HPETOK, why)
	assert.Equal(t, uint64(100_000_000), HPETCounter(p).Hz)

	_, wide, why = CheckHPETCaps(qemuHPETID&^hpetCountSize, 10_000_000)
	assert.Equal(t, HPETOK, why, "a 32-bit counter serves as well")
	assert.False(t, wide)

	_, _, why = CheckHPETCaps(0xffffffff, 0xffffffff)
	assert.Equal(t, HPETNoDevice, why, "nothing decodes the address")
	for _, period := range []uint32{0, HPETMinPeriodFs - 1, HPETMaxPeriodFs + 1, 0xffffffff} {
		_, _, why = CheckHPETCaps(intelHPETID, period)
		assert.Equal(t, HPETBadPeriod, why, "period %d fs", period)
	}
	for _, period := range []uint32{HPETMinPeriodFs, HPETMaxPeriodFs} {
		_, _, why = CheckHPETCaps(intelHPETID, period)
		assert.Equal(t, HPETOK, why, "period %d fs", period)
	}
}

func TestHPETStart(t *testing.T) {
	idle := []uint32{0x00f0_0030, 0x00f0_0030, 0x00f0_0030} // 64-bit capable, periodic capable, interrupts off
	start, why := HPETStart(0, idle)
	assert.True(t, start, "halted, nothing enabled: started")
	assert.Equal(t, HPETOK, why)

	start, why = HPETStart(hpetEnableCnf, idle)
	assert.False(t, start, "running: read, not touched")
	assert.Equal(t, HPETOK, why)
	start, why = HPETStart(hpetEnableCnf|hpetLegRtCnf, []uint32{hpetTnIntEnbCnf})
	assert.False(t, start)
	assert.Equal(t, HPETOK, why, "the firmware's running HPET is only read")

	start, why = HPETStart(hpetLegRtCnf, idle)
	assert.False(t, start, "legacy routing: starting it would take IRQ0 from the 8254")
	assert.Equal(t, HPETNotStarted, why)

	armed := append([]uint32{}, idle...)
	armed[2] |= hpetTnIntEnbCnf
	start, why = HPETStart(0, armed)
	assert.False(t, start, "a timer's interrupt enabled")
	assert.Equal(t, HPETNotStarted, why)
}

func TestHPETWhyStrings(t *testing.T) {
	seen := map[string]bool{}
	for w := HPETOK; w <= HPETNotStarted; w++ {
		s := w.String()
		assert.NotEqual(t, "unknown", s, "HPETWhy %d", w)
		assert.False(t, seen[s], "%q twice", s)
		seen[s] = true
	}
}
