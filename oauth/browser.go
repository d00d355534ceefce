package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// BrowserEnv names the variable whose command opens authorization URLs:
// its words, then the URL, run without a shell.
const BrowserEnv = "MCPLIFE_BROWSER"

// OpenBrowser opens url for the user: with $MCPLIFE_BROWSER when set,
// else the platform's opener (xdg-open, open, rundll32), else it writes
// the URL to w for the user to open. A command that fails is reported;
// one that succeeds returns at once, the login waiting for the redirect.
func OpenBrowser(ctx context.Context, w io.Writer, url string) error {
	var argv []string
	if b := strings.Fields(os.Getenv(BrowserEnv)); len(b) > 0 {
		argv = append(b, url)
	} else {
		switch runtime.GOOS {
		case "darwin":
			argv = []string{"open", url}
		case "windows":
			argv = []string{"rundll32", "url.dll,FileProtocolHandler", url}
		default:
			argv = []string{"xdg-open", url}
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			argv = nil
		}
	}
	if argv == nil {
		if w == nil {
			return errors.New("oauth: no browser to open the authorization URL (set " + BrowserEnv + ")")
		}
		_, err := fmt.Fprintf(w, "Open this URL in a browser to authorize:\n\n  %s\n\n", url)
		return err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("oauth: browser command %s failed: %w", argv[0], err)
	}
	return nil
}

// loopback is the redirect listener of one login: it takes the first
// request to its callback path and hands its code, state and issuer over.
type loopback struct {
	ln       net.Listener
	srv      *http.Server
	results  chan callbackResult
	redirect string
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// callbackPath is the path of the redirect URI.
const callbackPath = "/callback"

// listenLoopback listens on 127.0.0.1:port (0 = a free port).
func listenLoopback(port int) (*loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("oauth: redirect listener: %w", err)
	}
	l := &loopback{ln: ln, results: make(chan callbackResult, 1)}
	l.redirect = fmt.Sprintf("http://127.0.0.1:%d%s", ln.Addr().(*net.TCPAddr).Port, callbackPath)
	mux := http.NewServeMux()
	mux.HandleFunc(callbackPath, l.callback)
	l.srv = &http.Server{Handler: mux}
	go l.srv.Serve(ln) // ends when close shuts the server down
	return l, nil
}

func (l *loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var cr callbackResult
	switch {
	case q.Get("error") != "":
		msg := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		cr.err = fmt.Errorf("authorization refused: %s", msg)
	case q.Get("code") == "":
		http.Error(w, "missing code", http.StatusBadRequest)
		return
	default:
		cr.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	select {
	case l.results <- cr:
	default: // a second redirect: the first one counts
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if cr.err != nil {
		fmt.Fprintf(w, "<p>Authorization failed: %s</p>", html.EscapeString(cr.err.Error()))
		return
	}
	io.WriteString(w, "<p>mcplife is authorized. You can close this window.</p>")
}

func (l *loopback) close() { l.srv.Close() }
