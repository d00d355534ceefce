package memory_test

import (
	"testing"

	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/storetest"
)

func TestTranscript(t *testing.T) { storetest.Transcript(t, memory.New()) }
