package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ErrNoToken is returned by [TokenStore.Load] when no token is stored for
// a server URL.
var ErrNoToken = errors.New("oauth: no stored token")

// Token is an OAuth token as the store keeps it.
type Token struct {
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// Entry is the stored authorization of one server URL at one
// authorization server (Issuer): the token and what refreshing it needs.
type Entry struct {
	ServerURL string `json:"serverUrl"`
	Issuer    string `json:"issuer"`
	Token     Token  `json:"token"`
	// Scopes are the scopes granted (as the token response named them,
	// else as requested).
	Scopes []string `json:"scopes,omitempty"`
	// Grant is "authorization_code" or "client_credentials".
	Grant string `json:"grant,omitempty"`
	// ClientID is the client the token was issued to; its secret, if it
	// has one, comes from the configuration or the stored registration.
	ClientID string `json:"clientId,omitempty"`
	TokenURL string `json:"tokenUrl,omitempty"`
	// AuthStyle is the token endpoint's client authentication, as
	// golang.org/x/oauth2 numbers it (0 auto, 1 params, 2 header).
	AuthStyle int `json:"authStyle,omitempty"`
	// Resource is the protected resource the token was requested for
	// (RFC 8707).
	Resource string    `json:"resource,omitempty"`
	SavedAt  time.Time `json:"savedAt,omitzero"`
}

// Registration is a client registered dynamically (RFC 7591) at one
// authorization server, kept so later logins reuse it.
type Registration struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	AuthStyle    int    `json:"authStyle,omitempty"`
	// RedirectURI is the loopback redirect it was registered with; a
	// later login listens on the same port when it can.
	RedirectURI string `json:"redirectUri,omitempty"`
}

// TokenStore keeps tokens per server URL and issuer, and client
// registrations per issuer. Implementations are safe for concurrent use.
type TokenStore interface {
	// Load returns the entry of serverURL most recently saved, or an
	// error wrapping [ErrNoToken].
	Load(ctx context.Context, serverURL string) (*Entry, error)
	// Save stores e under (e.ServerURL, e.Issuer), replacing what was
	// there.
	Save(ctx context.Context, e *Entry) error
	// Delete removes every entry of serverURL; deleting nothing is not
	// an error.
	Delete(ctx context.Context, serverURL string) error
	// List returns every entry.
	List(ctx context.Context) ([]Entry, error)
	// Registration returns the client registered at issuer, or nil.
	Registration(ctx context.Context, issuer string) (*Registration, error)
	// SaveRegistration stores r under r.Issuer.
	SaveRegistration(ctx context.Context, r *Registration) error
}

// DefaultStorePath returns $XDG_CONFIG_HOME/mcplife/oauth.json, else
// ~/.config/mcplife/oauth.json.
func DefaultStorePath() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "mcplife", "oauth.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("oauth: token store: %w", err)
	}
	return filepath.Join(home, ".config", "mcplife", "oauth.json"), nil
}

// Updater is implemented by a [TokenStore] that can change one entry as
// a single step, also against other processes sharing the store. The
// [Authorizer] refreshes tokens through it, so that of several processes
// holding one expiring token only the first spends the refresh token and
// the others use what it saved: a refresh token that works once, spent
// twice, logs both out (and an authorization server that detects the
// reuse revokes the new one too). For a store that is not an Updater, the
// Authorizer serialises its own refreshes only.
type Updater interface {
	// Update calls fn with the entry stored under (serverURL, issuer),
	// or nil, while no other Update or change of the store can run, and
	// saves the entry fn returns (nothing when it returns nil or an
	// error). It returns fn's error, else the error of taking the lock
	// or of saving. fn must not change the store itself.
	Update(ctx context.Context, serverURL, issuer string, fn func(cur *Entry) (*Entry, error)) error
}

// FileStore is the default [TokenStore]: one JSON file, mode 0600, in a
// 0700 directory. It is safe for concurrent use, also by several
// processes: each change reads the file, changes it and writes it back
// whole while holding an exclusive lock on the file beside it named
// path + ".lock" (flock(2) on Unix, LockFileEx on Windows; on other
// platforms the lock covers this process only), so no process loses
// another's entry. A write goes to a temporary file in the same
// directory, which is flushed and then renamed over the store, and the
// directory is flushed: a reader sees the old file or the new one, never
// part of one, and a crash leaves one of them. Reads take no lock.
type FileStore struct {
	path string
	// sem holds the right to change the store within this process; the
	// lock file then excludes other processes.
	sem chan struct{}
}

var (
	_ TokenStore = (*FileStore)(nil)
	_ Updater    = (*FileStore)(nil)
)

// maxLockPoll is the longest pause between two tries of a lock that
// another process holds.
const maxLockPoll = 50 * time.Millisecond

// NewFileStore returns the store kept in the file at path; the file is
// created on the first save.
func NewFileStore(path string) *FileStore {
	return &FileStore{path: path, sem: make(chan struct{}, 1)}
}

// Path returns the store's file.
func (s *FileStore) Path() string { return s.path }

type fileData struct {
	Tokens  map[string]*Entry        `json:"tokens"`
	Clients map[string]*Registration `json:"clients"`
}

func entryKey(serverURL, issuer string) string { return serverURL + " " + issuer }

// read returns the stored data; a store that does not exist yet is
// empty.
func (s *FileStore) read() (*fileData, error) {
	d := &fileData{Tokens: map[string]*Entry{}, Clients: map[string]*Registration{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: read token store: %w", err)
	}
	if err := json.Unmarshal(b, d); err != nil {
		// The message of a syntax error quotes no content.
		return nil, fmt.Errorf("oauth: token store %s is not valid JSON: %w", s.path, err)
	}
	if d.Tokens == nil {
		d.Tokens = map[string]*Entry{}
	}
	if d.Clients == nil {
		d.Clients = map[string]*Registration{}
	}
	return d, nil
}

// change runs fn on the stored data while holding the store's lock, and
// writes the data back when fn reports a change. The data fn gets was
// read after the lock was taken, so it holds every change made before.
// It waits for the lock until ctx ends; with ctx already ended, it tries
// once.
func (s *FileStore) change(ctx context.Context, fn func(d *fileData) (changed bool, err error)) error {
	select {
	case s.sem <- struct{}{}: // a store this process does not change: no wait
	default:
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("oauth: token store %s: %w", s.path, ctx.Err())
		}
	}
	defer func() { <-s.sem }()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	unlock, err := lockFile(ctx, s.path+".lock")
	if err != nil {
		return fmt.Errorf("oauth: lock token store %s: %w", s.path, err)
	}
	defer unlock()
	d, err := s.read()
	if err != nil {
		return err
	}
	changed, err := fn(d)
	if err != nil || !changed {
		return err
	}
	return s.write(d)
}

// write replaces the store's file with d atomically. Requires the
// store's lock.
func (s *FileStore) write(d *fileData) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, ".oauth-*.json")
	if err != nil {
		return fmt.Errorf("oauth: write token store %s: %w", s.path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("oauth: write token store %s: %w", s.path, err)
	}
	return nil
}

func (s *FileStore) Load(_ context.Context, serverURL string) (*Entry, error) {
	d, err := s.read()
	if err != nil {
		return nil, err
	}
	return latest(d.Tokens, serverURL)
}

func latest(tokens map[string]*Entry, serverURL string) (*Entry, error) {
	var best *Entry
	for _, e := range tokens {
		if e.ServerURL == serverURL && (best == nil || e.SavedAt.After(best.SavedAt)) {
			best = e
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w for this server", ErrNoToken)
	}
	return cloneEntry(best), nil
}

func cloneEntry(e *Entry) *Entry {
	c := *e
	c.Scopes = slices.Clone(e.Scopes)
	return &c
}

func (s *FileStore) Save(ctx context.Context, e *Entry) error {
	return s.change(ctx, func(d *fileData) (bool, error) {
		d.Tokens[entryKey(e.ServerURL, e.Issuer)] = cloneEntry(e)
		return true, nil
	})
}

// Update implements [Updater]: fn runs while this process holds the
// store's lock, so also while no other process changes the store.
func (s *FileStore) Update(ctx context.Context, serverURL, issuer string, fn func(cur *Entry) (*Entry, error)) error {
	return s.change(ctx, func(d *fileData) (bool, error) {
		var cur *Entry
		if e := d.Tokens[entryKey(serverURL, issuer)]; e != nil {
			cur = cloneEntry(e)
		}
		ne, err := fn(cur)
		if err != nil || ne == nil {
			return false, err
		}
		d.Tokens[entryKey(ne.ServerURL, ne.Issuer)] = cloneEntry(ne)
		return true, nil
	})
}

func (s *FileStore) Delete(ctx context.Context, serverURL string) error {
	return s.change(ctx, func(d *fileData) (bool, error) {
		n := len(d.Tokens)
		for k, e := range d.Tokens {
			if e.ServerURL == serverURL {
				delete(d.Tokens, k)
			}
		}
		return n != len(d.Tokens), nil
	})
}

func (s *FileStore) List(_ context.Context) ([]Entry, error) {
	d, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(d.Tokens))
	for _, e := range d.Tokens {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmpStrings(entryKey(a.ServerURL, a.Issuer), entryKey(b.ServerURL, b.Issuer))
	})
	return out, nil
}

func (s *FileStore) Registration(_ context.Context, issuer string) (*Registration, error) {
	d, err := s.read()
	if err != nil {
		return nil, err
	}
	if r := d.Clients[issuer]; r != nil {
		c := *r
		return &c, nil
	}
	return nil, nil
}

func (s *FileStore) SaveRegistration(ctx context.Context, r *Registration) error {
	return s.change(ctx, func(d *fileData) (bool, error) {
		c := *r
		d.Clients[r.Issuer] = &c
		return true, nil
	})
}

// MemoryStore is a [TokenStore] in memory, for hosts that keep tokens
// elsewhere and for tests.
type MemoryStore struct {
	mu      sync.Mutex
	tokens  map[string]*Entry
	clients map[string]*Registration
}

var _ TokenStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tokens: map[string]*Entry{}, clients: map[string]*Registration{}}
}

func (s *MemoryStore) Load(_ context.Context, serverURL string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return latest(s.tokens, serverURL)
}

func (s *MemoryStore) Save(_ context.Context, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *e
	c.Scopes = slices.Clone(e.Scopes)
	s.tokens[entryKey(e.ServerURL, e.Issuer)] = &c
	return nil
}

func (s *MemoryStore) Delete(_ context.Context, serverURL string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.tokens {
		if e.ServerURL == serverURL {
			delete(s.tokens, k)
		}
	}
	return nil
}

func (s *MemoryStore) List(_ context.Context) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.tokens))
	for _, e := range s.tokens {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmpStrings(entryKey(a.ServerURL, a.Issuer), entryKey(b.ServerURL, b.Issuer))
	})
	return out, nil
}

func (s *MemoryStore) Registration(_ context.Context, issuer string) (*Registration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.clients[issuer]; r != nil {
		c := *r
		return &c, nil
	}
	return nil, nil
}

func (s *MemoryStore) SaveRegistration(_ context.Context, r *Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *r
	s.clients[r.Issuer] = &c
	return nil
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
