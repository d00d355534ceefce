package manager

import (
	"testing"
	"time"
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
