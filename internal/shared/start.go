package shared

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Lines a shared host started by [Start] writes first on its stdout.
const (
	// ReadyLine: it listens on the socket.
	ReadyLine = "ready"
	// RunningLine: another shared host listens there already.
	RunningLine = "running"
)

// SocketFlag is the flag that gives a started shared host its socket.
const SocketFlag = "--socket"

// Start starts a shared host on socket with command (for example
// ["mcp-audit", "daemon"]; SocketFlag and the socket are appended) and
// returns once it listens there, or found another shared host listening.
// The shared host runs in a session of its own (no signal to the starter's
// process group reaches it) and outlives the starter; its stderr goes to
// shared.log beside the socket.
func Start(ctx context.Context, socket string, command []string) error {
	if len(command) == 0 {
		return errors.New("shared: no command to start a shared host")
	}
	if err := prepareDir(filepath.Dir(socket)); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(socket), "shared.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("shared: log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(command[0], append(command[1:len(command):len(command)], SocketFlag, socket)...)
	cmd.Stderr = logf
	detach(cmd)
	// A pipe of its own rather than StdoutPipe: a shared host that finds
	// another one running writes its line and exits at once, and Wait,
	// which closes StdoutPipe's reading end when the process exits, would
	// race the read of that line.
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("shared: start shared host: %w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("shared: start shared host: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
		cmd.Wait() // reaps it, if it ends before this process does
		r.Close()
	}()
	select {
	case l := <-line:
		switch l {
		case ReadyLine, RunningLine:
			return nil
		}
		return fmt.Errorf("shared: shared host %s did not start (see %s)", command[0], filepath.Join(filepath.Dir(socket), "shared.log"))
	case <-ctx.Done():
		return fmt.Errorf("shared: start shared host: %w", ctx.Err())
	}
}
