package memory_test

import (
	"testing"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Features{Snapshots: true}, func(t *testing.T) store.Store {
		return memory.New()
	})
}
