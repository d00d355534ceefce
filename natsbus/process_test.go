package natsbus_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// writerEnv makes the test binary the writer process of
// TestSubscriberInAnotherProcess: "conn schema bus topic n".
const writerEnv = "MCPLIFE_NATSBUS_WRITER"

func TestMain(m *testing.M) {
	if args := os.Getenv(writerEnv); args != "" {
		if err := writer(args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if args := os.Getenv(followerEnv); args != "" {
		if err := follower(args); err != nil {
			fmt.Fprintln(os.Stderr, "follower:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writer appends n events, one by one, on the shared store and bus.
func writer(args string) error {
	var conn, schema, bus, topic string
	var n int
	if _, err := fmt.Sscan(args, &conn, &schema, &bus, &topic, &n); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, conn, &postgres.Options{Schema: schema})
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := natsbus.Open(bus, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	j, err := journal.New(db, &journal.Options{Publisher: b, Subscriber: b, Topic: topic, Host: "h-writer"})
	if err != nil {
		return err
	}
	defer j.Close()
	for i := range n {
		if _, err := j.Append(ctx, "from-writer", toolsListed(i)); err != nil {
			return err
		}
	}
	return nil
}

// A subscriber in one process receives, in order and without a gap, what
// another process appends to the shared PostgreSQL store, through the bus.
func TestSubscriberInAnotherProcess(t *testing.T) {
	conn, schema := pgtest.Schema(t)
	url := natstest.URL(t)
	topic := natstest.Topic()
	dropStream(t, url, topic)
	ctx := t.Context()
	db, err := postgres.Open(ctx, conn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := open(t, url)
	j, err := journal.New(db, &journal.Options{Publisher: b, Subscriber: b, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const n = 300
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+fmt.Sprint(conn, " ", schema, " ", url, " ", topic, " ", strconv.Itoa(n)))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, env := range receive(t, sub, 1, n) {
		if env.Host != "h-writer" || env.Stream != "from-writer" {
			t.Fatalf("seq %d: host %q stream %q", env.Seq, env.Host, env.Stream)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
}
