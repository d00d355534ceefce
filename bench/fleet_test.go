package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/sqlite"
)

// roleEnv makes the test binary a helper process of the fleet benchmarks:
// "subscriber" or "host"; fleetEnv carries its JSON arguments.
const (
	roleEnv  = "MCPLIFE_BENCH_ROLE"
	fleetEnv = "MCPLIFE_BENCH_FLEET"
)

// fleetArgs are a helper process's arguments.
type fleetArgs struct {
	Conn, Schema string // PostgreSQL store ("" with SQLite)
	SQLite       string // SQLite file of a host on its own
	Bus, Topic   string
	Raw          string // subject of the bare NATS baseline
	Host         string
	Servers      int    // stdio fixture servers, "only=echo,add"
	Socket       string // the shared host's socket
}

// runRole runs the helper process named by roleEnv and returns its exit
// status.
func runRole() int {
	var a fleetArgs
	if err := json.Unmarshal([]byte(os.Getenv(fleetEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var err error
	switch os.Getenv(roleEnv) {
	case "subscriber":
		err = subscriberRole(a)
	case "host":
		err = hostRole(a)
	case "shared-host":
		err = sharedHostRole(a)
	default:
		err = fmt.Errorf("unknown role %q", os.Getenv(roleEnv))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// subscriberRole follows the journal on the shared store and bus, and a
// bare NATS subject, and prints "j SEQ UNIXNANOS" or "raw N UNIXNANOS" for
// each arrival, after a "ready" line.
func subscriberRole(a fleetArgs) error {
	ctx := context.Background()
	db, err := postgres.Open(ctx, a.Conn, &postgres.Options{Schema: a.Schema, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	bus, err := natsbus.Open(a.Bus, nil)
	if err != nil {
		return err
	}
	defer bus.Close()
	j, err := journal.New(db, &journal.Options{Publisher: bus, Subscriber: bus, Topic: a.Topic})
	if err != nil {
		return err
	}
	defer j.Close()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	line := func(kind string, n uint64) {
		now := time.Now().UnixNano()
		mu.Lock()
		fmt.Fprintf(out, "%s %d %d\n", kind, n, now)
		out.Flush()
		mu.Unlock()
	}
	raw, err := nats.Connect(a.Bus)
	if err != nil {
		return err
	}
	defer raw.Close()
	if _, err := raw.Subscribe(a.Raw, func(m *nats.Msg) {
		n, _ := strconv.ParseUint(string(m.Data), 10, 64)
		line("raw", n)
	}); err != nil {
		return err
	}
	raw.Flush()
	line("ready", 0)
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the parent closes stdin to end it
	for env := range sub.C() {
		line("j", env.Seq)
	}
	return sub.Err()
}

// hostRole is one host of a fleet start: it connects its servers with a
// gate long enough to await them all, prints "ready NANOS" (the time
// from its start to the connected servers), and tears them down.
func hostRole(a fleetArgs) error {
	ctx := context.Background()
	begin := time.Now()
	var st store.Store
	var err error
	if a.SQLite != "" {
		st, err = sqlite.Open(a.SQLite, nil)
	} else {
		st, err = postgres.Open(ctx, a.Conn, &postgres.Options{Schema: a.Schema})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	j, err := journal.New(st, &journal.Options{Host: a.Host})
	if err != nil {
		return err
	}
	defer j.Close()
	m, err := manager.New(j, journal.NewSessionID(), &manager.Options{Gate: time.Minute, Cwd: os.TempDir()})
	if err != nil {
		return err
	}
	var cfgs []events.ServerConfig
	for i := range a.Servers {
		cmd, args, err := fixture.ChildCommand("only=echo,add")
		if err != nil {
			return err
		}
		cfgs = append(cfgs, events.ServerConfig{Name: fmt.Sprintf("srv%03d", i), Command: cmd, Args: args})
	}
	res, err := m.ConnectServers(ctx, cfgs, nil)
	if err != nil {
		return err
	}
	if len(res.Tools) != 2*a.Servers {
		var why []string
		for _, s := range m.View().Servers() {
			why = append(why, s.Name+": "+string(s.Status)+" "+s.Error)
		}
		return fmt.Errorf("%d tools, want %d: %s", len(res.Tools), 2*a.Servers, strings.Join(why, "; "))
	}
	fmt.Printf("ready %d\n", time.Since(begin).Nanoseconds())
	return m.Close(ctx)
}

// fleet is one host's view of a fleet for a benchmark: a fresh schema on
// the machine's PostgreSQL, a topic of its own on its NATS, and a journal
// on both. Everything is closed and dropped when the benchmark ends.
type fleet struct {
	conn, schema, url, topic string
	db                       *postgres.DB
	j                        *journal.Journal
}

func openFleet(b *testing.B) *fleet {
	b.Helper()
	f := &fleet{url: natstest.URL(b), topic: natstest.Topic()}
	f.conn, f.schema = pgtest.Schema(b)
	db, err := postgres.Open(context.Background(), f.conn, &postgres.Options{Schema: f.schema})
	if err != nil {
		b.Fatal(err)
	}
	bus, err := natsbus.Open(f.url, nil)
	if err != nil {
		db.Close()
		b.Fatal(err)
	}
	j, err := journal.New(db, &journal.Options{Publisher: bus, Subscriber: bus, Topic: f.topic})
	if err != nil {
		bus.Close()
		db.Close()
		b.Fatal(err)
	}
	f.db, f.j = db, j
	b.Cleanup(func() {
		j.Close()
		if js, err := bus.Conn().JetStream(); err == nil {
			js.DeleteStream(natsbus.StreamName(f.topic))
		}
		bus.Close()
		db.Close()
	})
	return f
}

// helper starts the test binary in role with args.
func helper(b *testing.B, role string, a fleetArgs) *exec.Cmd {
	js, _ := json.Marshal(a)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, fleetEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	return cmd
}

// BenchmarkPropagation: an event appended by one process reaches a
// subscriber in another process through the shared PostgreSQL store and
// the NATS bus. Each round appends one event and waits until the
// subscriber prints it; the time is from before the Append (its commit
// included) to the subscriber's receipt. Baseline in the same run: a bare
// NATS message between the same two processes. Goal: p99 < 50 ms.
func BenchmarkPropagation(b *testing.B) {
	f := openFleet(b)
	conn, schema, url, topic, j := f.conn, f.schema, f.url, f.topic, f.j
	ctx := context.Background()
	raw, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	rawSubject := topic + "-raw"

	cmd := helper(b, "subscriber", fleetArgs{Conn: conn, Schema: schema, Bus: url, Topic: topic, Raw: rawSubject})
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	arrival := func(kind string) (uint64, int64) {
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) == 3 && f[0] == kind {
				n, _ := strconv.ParseUint(f[1], 10, 64)
				at, _ := strconv.ParseInt(f[2], 10, 64)
				return n, at
			}
		}
		b.Fatalf("subscriber ended: %v", lines.Err())
		return 0, 0
	}
	arrival("ready")

	var journalLat, rawLat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		stored, err := j.Append(ctx, "propagation", &events.ToolListChanged{Server: "s"})
		if err != nil {
			b.Fatal(err)
		}
		for {
			seq, at := arrival("j")
			if seq == stored[0].Seq {
				journalLat = append(journalLat, time.Duration(at-t0.UnixNano()))
				break
			}
		}
		t1 := time.Now()
		if err := raw.Publish(rawSubject, []byte(strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
		_, at := arrival("raw")
		rawLat = append(rawLat, time.Duration(at-t1.UnixNano()))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(median(journalLat)), "p50-ms")
	b.ReportMetric(ms(percentile(journalLat, 0.99)), "p99-ms")
	b.ReportMetric(ms(median(rawLat)), "bare-nats-p50-ms")
	b.ReportMetric(ms(percentile(rawLat, 0.99)), "bare-nats-p99-ms")
}

// BenchmarkFleetStart: 10 host processes start at once, each connecting
// 10 stdio servers and recording into one PostgreSQL store; reported is
// the time until the last host had its servers connected. Baseline in the
// same run: the same 10 hosts each on a SQLite file of its own.
func BenchmarkFleetStart(b *testing.B) {
	const hosts, servers = 10, 10
	conn, schema := pgtest.Schema(b)
	// Create the schema once, as a fleet's store exists before its hosts.
	if db, err := postgres.Open(context.Background(), conn, &postgres.Options{Schema: schema}); err != nil {
		b.Fatal(err)
	} else {
		db.Close()
	}
	start := func(onPostgres bool) time.Duration {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var slowest time.Duration
		dir := b.TempDir()
		for h := range hosts {
			a := fleetArgs{Conn: conn, Schema: schema, Host: fmt.Sprintf("h-%d", h), Servers: servers}
			if !onPostgres {
				a.SQLite = filepath.Join(dir, fmt.Sprintf("host%d.db", h))
			}
			cmd := helper(b, "host", a)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "ready ") {
						d := time.Since(t0)
						mu.Lock()
						slowest = max(slowest, d)
						mu.Unlock()
					}
				}
				if err := cmd.Wait(); err != nil {
					b.Errorf("host %d: %v", h, err)
				}
			})
		}
		wg.Wait()
		return slowest
	}
	var pg, own []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			pg = append(pg, start(true))
			own = append(own, start(false))
		} else {
			own = append(own, start(false))
			pg = append(pg, start(true))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(median(pg))/1e6, "postgres-ms")
	b.ReportMetric(float64(median(own))/1e6, "sqlite-each-ms")
	b.ReportMetric(float64(median(pg))/float64(median(own)), "ratio")
}
