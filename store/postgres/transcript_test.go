package postgres_test

import (
	"testing"

	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/storetest"
)

func TestTranscript(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	storetest.Transcript(t, mustOpen(t, cs, &postgres.Options{Schema: schema}))
}
