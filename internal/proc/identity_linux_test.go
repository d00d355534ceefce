package proc

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestIdentityOf(t *testing.T) {
	self, ok := IdentityOf(os.Getpid())
	if !ok {
		t.Fatal("no identity of this process")
	}
	if self.Pid != os.Getpid() || self.Pgid != syscall.Getpgrp() || self.StartTime == 0 {
		t.Fatalf("identity %+v, want pid %d, pgid %d and a start time", self, os.Getpid(), syscall.Getpgrp())
	}
	for _, pid := range []int{0, -1} {
		if id, ok := IdentityOf(pid); ok {
			t.Errorf("IdentityOf(%d) = %+v, want none", pid, id)
		}
	}
}

// TestIdentityStartTimeIsTicksSinceBoot checks the unit of StartTime: a
// child started now, at USER_HZ (100) ticks a second after the boot time
// in /proc/stat, started now.
func TestIdentityStartTimeIsTicksSinceBoot(t *testing.T) {
	before := time.Now()
	p := startSleep(t)
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(stat, []byte("\nbtime "))
	if !ok {
		t.Fatal("no btime in /proc/stat")
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	btime, err := strconv.ParseInt(string(line), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Unix(btime, 0).Add(time.Duration(p.Identity().StartTime) * 10 * time.Millisecond)
	if d := started.Sub(before); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("start time %d ticks is %v, %v from when the child started", p.Identity().StartTime, started, d)
	}
}

func TestProcessIdentity(t *testing.T) {
	p := startSleep(t)
	id := p.Identity()
	now, ok := IdentityOf(p.Pid())
	if !ok || id != now {
		t.Fatalf("Identity() = %+v, IdentityOf = %+v", id, now)
	}
	if id.Pid != p.Pid() || id.Pgid != p.Pid() || id.StartTime == 0 {
		t.Fatalf("identity %+v, want pid and pgid %d and a start time", id, p.Pid())
	}
	self, _ := IdentityOf(os.Getpid())
	if id.StartTime < self.StartTime {
		t.Fatalf("child started at %d, before this process (%d)", id.StartTime, self.StartTime)
	}
}

func TestIdentityJSON(t *testing.T) {
	id := Identity{Pid: 12, Pgid: 11, StartTime: 345}
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pid":12,"pgid":11,"startTime":345}`; string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	var back Identity
	if err := json.Unmarshal(b, &back); err != nil || back != id {
		t.Fatalf("decoded %+v (%v), want %+v", back, err, id)
	}
}
