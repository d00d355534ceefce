package manager

import (
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
)

// TestGroupedOptionsDefaults: the defaults the grouped options' field docs
// state are the ones New applies, a negative health interval or clock
// check turns that check off, and values set are kept.
func TestGroupedOptionsDefaults(t *testing.T) {
	m := newEnv(t, nil).m
	if got, want := m.opts.Health, (HealthOptions{Interval: 30 * time.Second, Timeout: 10 * time.Second}); got != want {
		t.Errorf("Health %+v, want %+v", got, want)
	}
	if got, want := m.opts.Sleep, (SleepOptions{ClockCheck: 5 * time.Second, Threshold: 10 * time.Second}); got != want {
		t.Errorf("Sleep %+v, want %+v", got, want)
	}
	if got, want := m.opts.Client, (ClientOptions{Name: "mcplife", Version: "0.1.0"}); got != want {
		t.Errorf("Client %+v, want %+v", got, want)
	}
	if m.opts.Auth.Interactive {
		t.Error("Auth.Interactive on by default")
	}
	if m.auth.a == nil {
		t.Error("no default OAuth authorizer")
	}

	m = newEnv(t, &Options{
		Health: HealthOptions{Interval: -1, Timeout: -1},
		Sleep:  SleepOptions{ClockCheck: -1, Threshold: time.Minute},
		Client: ClientOptions{Name: "host", Version: "2.0"},
		Auth:   AuthOptions{Interactive: true},
	}).m
	if got, want := m.opts.Health, (HealthOptions{Interval: 0, Timeout: 10 * time.Second}); got != want {
		t.Errorf("Health %+v, want pings off and the default timeout %+v", got, want)
	}
	if got, want := m.opts.Sleep, (SleepOptions{ClockCheck: -1, Threshold: time.Minute}); got != want {
		t.Errorf("Sleep %+v, want %+v", got, want)
	}
	if got, want := m.opts.Client, (ClientOptions{Name: "host", Version: "2.0"}); got != want {
		t.Errorf("Client %+v, want %+v", got, want)
	}
	if !m.opts.Auth.Interactive {
		t.Error("Auth.Interactive set but not kept")
	}
}

// The version a connect offers: a pin wins; otherwise the manager's,
// brought into the configured era, and an sse server is legacy.
func TestOfferedVersion(t *testing.T) {
	m := &Manager{opts: Options{ProtocolVersion: modernProtocol}}
	for _, c := range []struct {
		cfg  events.ServerConfig
		want string
	}{
		{events.ServerConfig{Command: "x"}, modernProtocol},
		{events.ServerConfig{Command: "x", Era: events.ConfigEraAuto}, modernProtocol},
		{events.ServerConfig{Command: "x", Era: events.ConfigEraLegacy}, legacyProtocol},
		{events.ServerConfig{URL: "https://x.example/sse", Type: events.TransportSSE}, legacyProtocol},
		{events.ServerConfig{Command: "x", ProtocolVersion: "2025-06-18"}, "2025-06-18"},
	} {
		if got := m.offeredVersion(c.cfg); got != c.want {
			t.Errorf("%+v: %s, want %s", c.cfg, got, c.want)
		}
	}
	m.opts.ProtocolVersion = legacyProtocol
	if got := m.offeredVersion(events.ServerConfig{Command: "x", Era: events.ConfigEraModern}); got != modernProtocol {
		t.Errorf("era modern under a legacy manager: %s", got)
	}
}
