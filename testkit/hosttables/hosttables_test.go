package hosttables

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type page [512]uint64

func TestAddressesAndLimit(t *testing.T) {
	m := New[page](t, 0x1000, 3)
	pa, ok := m.NewTable()
	require.True(t, ok)
	assert.Equal(t, uint64(0x1000), pa)
	m.Table(pa)[7] = 9
	assert.Equal(t, uint64(9), m.Tables[0x1000][7])

	pa, ok = m.NewTablePair()
	require.True(t, ok)
	assert.Equal(t, uint64(0x2000), pa, "already 8 KiB aligned")
	assert.Len(t, m.Tables, 3)
	assert.Contains(t, m.Tables, uint64(0x3000))

	_, ok = m.NewTable()
	assert.False(t, ok, "limit reached")
	assert.Len(t, m.Tables, 3)
}

func TestPairAlignment(t *testing.T) {
	m := New[page](t, 0x1000, -1)
	pa, ok := m.NewTablePair()
	require.True(t, ok)
	assert.Equal(t, uint64(0x2000), pa, "0x1000 skipped")
	pa, ok = m.NewTable()
	require.True(t, ok)
	assert.Equal(t, uint64(0x4000), pa)

	m = New[page](t, 0, 1)
	_, ok = m.NewTablePair()
	assert.False(t, ok, "one table left")
	assert.Empty(t, m.Tables)
}

// Looking up an address without a table fails the test.
func TestMissingTableFails(t *testing.T) {
	ft := &fakeTB{TB: t}
	m := New[page](ft, 0x1000, -1)
	m.Table(0x5000)
	assert.Equal(t, "Table(0x5000): no table at that address", ft.failed)
}

type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }
