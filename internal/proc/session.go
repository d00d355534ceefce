package proc

import (
	"fmt"
	"strings"
)

// SessionEnv names the environment variable that carries, in every
// process [Start] starts for a session ([Options.Session]), that
// session's id: the child gets it beside its server's instance marker,
// and its descendants inherit it, so that once the session's host was
// killed the next host can find what it left running even where nothing
// was recorded yet ([Reap], [ReapOptions.Session]). Its value is the
// session id alone, which every event of the session carries anyway: no
// secret is put there.
const SessionEnv = "MCPLIFE_SESSION"

// sessionEntry returns the environment entry that carries session, or ""
// for no session. It fails for an id that an environment cannot hold.
func sessionEntry(session string) (string, error) {
	if session == "" {
		return "", nil
	}
	if strings.IndexByte(session, 0) >= 0 {
		return "", fmt.Errorf("session id %q: holds a NUL byte, which an environment cannot", session)
	}
	return SessionEnv + "=" + session, nil
}
