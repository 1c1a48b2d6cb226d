package goos

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// kline's decimal forms read as strconv's.
func TestKlineDecimal(t *testing.T) {
	for _, v := range []int64{0, 7, -7, 10, -10, 1234567890, math.MaxInt64, math.MinInt64} {
		var l kline
		l.dec(v)
		assert.Equal(t, strconv.FormatInt(v, 10), string(l.b[:l.n]))
	}
	for _, v := range []uint64{0, 9, 10, math.MaxUint64} {
		var l kline
		l.udec(v)
		assert.Equal(t, strconv.FormatUint(v, 10), string(l.b[:l.n]))
	}
}
