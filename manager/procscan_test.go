package manager

import (
	"os"
	"testing"

	"github.com/mcplife/mcplife/internal/proc"
)

// A descendants query withdrawn before the pass is not answered; the
// others of the same pass are.
func TestProcScannerForget(t *testing.T) {
	var ps procScanner
	self := os.Getpid()
	kept, _ := ps.query(self)
	dropped, forget := ps.query(self)
	gone, forgetGone := ps.query(os.Getppid())
	forget()
	forgetGone()
	forgetGone() // twice is harmless
	ps.mu.Lock()
	n, others := len(ps.pending[self]), len(ps.pending)
	ps.mu.Unlock()
	if n != 1 || others != 1 {
		t.Fatalf("pending after two of three queries were withdrawn: %d for this process, %d pids; want 1 and 1", n, others)
	}
	ps.scan() // as the timer would; it found nothing pending for the others
	select {
	case <-kept:
	default:
		t.Fatal("the query left in was not answered")
	}
	for name, ch := range map[string]<-chan []proc.Identity{"withdrawn": dropped, "withdrawn pid": gone} {
		select {
		case <-ch:
			t.Errorf("the %s query was answered", name)
		default:
		}
	}
	ps.scan() // nothing pending: no pass, nothing answered
}
