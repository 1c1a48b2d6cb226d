package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestResultsName(t *testing.T) {
	at := time.Date(2026, 12, 1, 16, 13, 51, 0, time.UTC)
	assert.Equal(t, "20261201-161351-intel-6-58-9", resultsName(at, "intel-6-58-9"))
}
