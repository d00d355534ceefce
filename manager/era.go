package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/projector"
)

// The era of a server. A connect that would offer protocol 2026-07-28 or
// later (a "modern-wanted" connect: the config's protocolVersion, else
// Options.ProtocolVersion) first looks for the era recorded for the
// server under its config (ServerEraDetected, in the tool cache):
//
//   - a legacy record: the connect sends initialize at 2025-11-25 at
//     once, with no server/discover that would fail first;
//   - a modern record whose discover result is still fresh (its ttlMs not
//     passed, and probed by this host when private): server/discover is
//     answered from the record, so nothing goes on the wire for it;
//   - none, or a stale one: the go-sdk's server/discover probe runs and
//     its answer (or error) is observed on the way back.
//
// A probe's outcome is recorded before ServerConnected: modern when
// server/discover succeeded, legacy when it failed with another error
// and initialize succeeded. A 401 or 403 decides nothing. A record is
// written when no record was known, when the answer differs from it, or
// when a probe renewed a stale record whose answer may be reused (ttlMs
// above zero); a connect that used a fresh record, or whose answer
// changed nothing, records nothing.
//
// An answer that contradicts the record drops the record for that connect,
// which is made once more with the probe on the wire: an initialize sent
// because of a legacy record that is refused as a modern server refuses it
// (method not found, or an unsupported-version error listing only modern
// versions), or a "method not found" to the first request after a
// server/discover answered from a modern record. That first request is the
// first tools/list, which such a connect makes before it reports the
// connection (so the retry stays inside the connect).
//
// Connects that are not modern-wanted do none of this.

const (
	// modernProtocol is the first protocol version of the modern era: no
	// initialize (server/discover instead), no ping, no logging/setLevel
	// (the client's settings in each request's _meta), and list results
	// with cache hints.
	modernProtocol = "2026-07-28"
	// legacyProtocol is the version a connect offers a server recorded
	// as legacy.
	legacyProtocol = "2025-11-25"

	methodDiscover   = "server/discover"
	methodInitialize = "initialize"
	methodListen     = "subscriptions/listen"
)

// errEraContradicted: the server's answer contradicted its recorded era;
// the connect is made again with the probe on the wire.
var errEraContradicted = errors.New("the server contradicted its recorded era")

// modernEra reports whether protocol version pv is of the modern era (a
// connect offering it starts with server/discover).
func modernEra(pv string) bool { return pv >= modernProtocol }

// eraConnect is the era's part of one modern-wanted connect: what the
// record said, and what the wire answered.
type eraConnect struct {
	rec   projector.Era
	known bool // rec holds the record this connect compares its answer with
	// legacy: the record is legacy; initialize goes out at once.
	legacy bool
	// local: the record is modern and fresh; server/discover is answered
	// from it.
	local bool
	// strict: the server is configured era modern; a failed
	// server/discover is the connect's failure, with no initialize after
	// it.
	strict bool

	mu           sync.Mutex
	probed       bool                // a server/discover went on the wire
	discover     *mcp.DiscoverResult // its last answer (nil: it failed)
	discoverErr  error
	initErr      error // the answer to initialize, when it failed
	answered     bool  // server/discover was answered from the record
	checked      bool  // the first request after that came back
	contradicted bool
	// features are the features the record says the server has.
	features map[string]bool
	// late, set once the connect returned without checking the record,
	// is called when the first request after it contradicts the record.
	late func()
}

// offeredVersion returns the protocol version a connect of the server of
// cfg offers: its pinned protocolVersion, else Options.ProtocolVersion
// brought into the server's configured era (an sse server is legacy).
func (m *Manager) offeredVersion(cfg events.ServerConfig) string {
	if cfg.ProtocolVersion != "" {
		return cfg.ProtocolVersion
	}
	pv := m.opts.ProtocolVersion
	switch {
	case cfg.Era == events.ConfigEraLegacy || cfg.Transport() == events.TransportSSE:
		if modernEra(pv) {
			pv = legacyProtocol
		}
	case cfg.Era == events.ConfigEraModern:
		if !modernEra(pv) {
			pv = modernProtocol
		}
	}
	return pv
}

// planEra returns the era plan of a connect of s offering pv, nil when
// the connect is not modern-wanted. probe drops the record (a retry after
// a contradiction).
func (m *Manager) planEra(s *server, pv string, probe bool) *eraConnect {
	if !modernEra(pv) {
		return nil
	}
	ec := &eraConnect{strict: s.cfg.Era == events.ConfigEraModern}
	if s.eraProbe.Swap(false) || probe {
		return ec
	}
	rec, ok := m.cache.LookupEra(m.j.Host(), s.name, s.hash, m.now())
	if !ok || (ec.strict && rec.Era != events.EraModern) {
		return ec
	}
	ec.rec, ec.known = rec, true
	switch {
	case rec.Era == events.EraLegacy:
		ec.legacy = true
	case rec.Era == events.EraModern && rec.Fresh && rec.Discover != nil && ec.localAnswer() != nil:
		ec.local, ec.features = true, features(rec.Discover.Capabilities)
	}
	return ec
}

// version returns the version the connect offers instead of pv.
func (ec *eraConnect) version(pv string) string {
	if ec != nil && ec.legacy {
		return legacyProtocol
	}
	return pv
}

// localAnswer builds the server/discover result the record stands for, or
// nil when the record cannot be turned back into one.
func (ec *eraConnect) localAnswer() *mcp.DiscoverResult {
	d := ec.rec.Discover
	res := &mcp.DiscoverResult{SupportedVersions: slices.Clone(ec.rec.SupportedVersions), Instructions: d.Instructions}
	res.TTLMs, res.CacheScope = int(ec.rec.Hints.TTLMs), ec.rec.Hints.CacheScope
	if len(d.Capabilities) > 0 {
		caps := &mcp.ServerCapabilities{}
		if err := json.Unmarshal(d.Capabilities, caps); err != nil {
			return nil
		}
		res.Capabilities = caps
	}
	if d.PeerName != "" || d.PeerVersion != "" {
		res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: &mcp.Implementation{Name: d.PeerName, Version: d.PeerVersion}}
	}
	return res
}

// middleware is the client's sending middleware of the connect: it
// answers server/discover from a fresh record, observes the probe's
// answer otherwise, and checks the first answer after a local discover.
func (ec *eraConnect) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch {
		case method == methodDiscover:
			if ec.local {
				if res := ec.localAnswer(); res != nil {
					ec.mu.Lock()
					ec.answered = true
					ec.mu.Unlock()
					return res, nil
				}
			}
			res, err := next(ctx, method, req)
			d, _ := res.(*mcp.DiscoverResult)
			ec.mu.Lock()
			ec.probed, ec.discover, ec.discoverErr = true, d, err
			if err != nil {
				ec.discover = nil
			}
			ec.mu.Unlock()
			return res, err
		case method == methodInitialize:
			ec.mu.Lock()
			derr := ec.discoverErr
			ec.mu.Unlock()
			if errors.Is(derr, io.EOF) || errors.Is(derr, mcp.ErrConnectionClosed) {
				// The probe found the connection gone (a server that
				// exited): its error says why, an initialize on the closed
				// connection would not.
				return nil, derr
			}
			if ec.strict {
				if derr == nil {
					derr = errors.New("server/discover was not answered")
				}
				return nil, fmt.Errorf("the server is configured with era %q, and server/discover failed: %w", events.ConfigEraModern, derr)
			}
			res, err := next(ctx, method, req)
			ec.mu.Lock()
			ec.initErr = err
			ec.mu.Unlock()
			return res, err
		case method == methodListen || strings.HasPrefix(method, "notifications/"):
			// Not answered in the request's own time: the listen stream
			// is opened without waiting for it.
			return next(ctx, method, req)
		}
		res, err := next(ctx, method, req)
		ec.firstAnswer(method, err)
		return res, err
	}
}

// firstAnswer checks the answer to the first request after a local
// discover that asks for a feature the record says the server has (tools,
// resources, prompts; not ping, which the modern era dropped): a "method
// not found", or an unsupported-version error listing no modern version,
// says the server is not the modern server the record describes. A
// contradiction after the connect calls late.
func (ec *eraConnect) firstAnswer(method string, err error) {
	feature, _, _ := strings.Cut(method, "/")
	ec.mu.Lock()
	if !ec.answered || ec.checked || !ec.features[feature] {
		ec.mu.Unlock()
		return
	}
	ec.checked = true
	var we *jsonrpc.Error
	ec.contradicted = errors.As(err, &we) && (we.Code == jsonrpc.CodeMethodNotFound || legacyOnlyRefusal(we))
	late := ec.late
	ec.mu.Unlock()
	if ec.contradicted && late != nil {
		late()
	}
}

// armLate sets what a contradiction found after the connect does, when
// the connect made no request that checked the record.
func (ec *eraConnect) armLate(f func()) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if !ec.checked {
		ec.late = f
	}
}

// features returns the features (capability names) the recorded
// capabilities caps name.
func features(caps json.RawMessage) map[string]bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return nil
	}
	out := map[string]bool{}
	for k, v := range m {
		if string(v) != "null" {
			out[k] = true
		}
	}
	return out
}

// answeredLocally reports whether server/discover was answered from the
// record.
func (ec *eraConnect) answeredLocally() bool {
	if ec == nil {
		return false
	}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.answered
}

// localContradicted reports whether the first request after a local
// discover was refused as a legacy server refuses it.
func (ec *eraConnect) localContradicted() bool {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.contradicted
}

// legacyContradicted reports whether a connect that sent initialize
// because of a legacy record was refused as a modern server refuses it.
func (ec *eraConnect) legacyContradicted() bool {
	if ec == nil || !ec.legacy {
		return false
	}
	ec.mu.Lock()
	err := ec.initErr
	ec.mu.Unlock()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return false
	}
	if we.Code == jsonrpc.CodeMethodNotFound {
		return true
	}
	if we.Code != mcp.CodeUnsupportedProtocolVersion {
		return false
	}
	supported := refusedVersions(we)
	return len(supported) > 0 && !slices.ContainsFunc(supported, func(v string) bool { return !modernEra(v) })
}

// legacyOnlyRefusal reports whether we is an unsupported-version error
// listing no version of the modern era.
func legacyOnlyRefusal(we *jsonrpc.Error) bool {
	if we.Code != mcp.CodeUnsupportedProtocolVersion {
		return false
	}
	supported := refusedVersions(we)
	return len(supported) > 0 && !slices.ContainsFunc(supported, modernEra)
}

// refusedVersions returns the versions an unsupported-version error says
// the server supports.
func refusedVersions(we *jsonrpc.Error) []string {
	var data mcp.UnsupportedProtocolVersionData
	if len(we.Data) == 0 || json.Unmarshal(we.Data, &data) != nil {
		return nil
	}
	return data.Supported
}

// authRefused reports whether err is a refusal for want of authorization
// (HTTP 401 or 403), which says nothing of the server's era.
func authRefused(err error) bool {
	if _, ok := needsAuthOf(err); ok {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, http.StatusText(http.StatusUnauthorized)) || strings.Contains(msg, http.StatusText(http.StatusForbidden))
}

// detected returns the ServerEraDetected the connect of s records, given
// the connection's result init, or nil when it records none. Texts are
// scrubbed as ServerConnected's are.
func (ec *eraConnect) detected(s *server, res transport.Resolved, init *mcp.InitializeResult) *events.ServerEraDetected {
	if ec == nil || init == nil {
		return nil
	}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.answered {
		return nil // a fresh record stood in for the probe
	}
	ev := &events.ServerEraDetected{Server: s.name, ConfigHash: s.hash, ProtocolVersion: init.ProtocolVersion}
	switch {
	case modernEra(init.ProtocolVersion):
		ev.Era = events.EraModern
		if d := ec.discover; d != nil {
			ev.SupportedVersions = slices.Clone(d.SupportedVersions)
			ev.TTLMs, ev.CacheScope = int64(d.TTLMs), d.CacheScope
		}
		c := &events.ServerConnected{Instructions: init.Instructions}
		if init.ServerInfo != nil {
			c.PeerName, c.PeerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
		if init.Capabilities != nil {
			c.Capabilities, _ = json.Marshal(init.Capabilities)
		}
		res.ScrubConnected(c)
		ev.Discover = &events.DiscoverInfo{Capabilities: c.Capabilities, PeerName: c.PeerName, PeerVersion: c.PeerVersion, Instructions: c.Instructions}
	case ec.legacy:
		ev.Era = events.EraLegacy
		ev.SupportedVersions = slices.Clone(ec.rec.SupportedVersions)
	case ec.probed:
		if ec.discoverErr != nil && authRefused(ec.discoverErr) {
			return nil
		}
		ev.Era = events.EraLegacy
		var we *jsonrpc.Error
		switch {
		case ec.discover != nil: // no version of the modern era in common
			ev.SupportedVersions = slices.Clone(ec.discover.SupportedVersions)
		case errors.As(ec.discoverErr, &we):
			ev.SupportedVersions = slices.Clone(refusedVersions(we))
		}
	default:
		return nil
	}
	if ec.known && sameEra(ec.rec, ev) && !(ec.probed && ev.TTLMs > 0 && !ec.rec.Fresh) {
		return nil
	}
	return ev
}

// sameEra reports whether ev says what the record rec says.
func sameEra(rec projector.Era, ev *events.ServerEraDetected) bool {
	if rec.Era != ev.Era || rec.ProtocolVersion != ev.ProtocolVersion || !slices.Equal(rec.SupportedVersions, ev.SupportedVersions) ||
		rec.Hints.TTLMs != ev.TTLMs || rec.Hints.CacheScope != ev.CacheScope {
		return false
	}
	a, b := rec.Discover, ev.Discover
	if a == nil || b == nil {
		return a == b
	}
	return a.PeerName == b.PeerName && a.PeerVersion == b.PeerVersion && a.Instructions == b.Instructions &&
		string(a.Capabilities) == string(b.Capabilities)
}

// firstList is the first tools/list of a connection, made by the connect
// itself after a local discover (to check the record before the
// connection is reported).
type firstList struct {
	start time.Time
	defs  []events.ToolDef
	hints events.CacheHints
	err   error
}
