package events

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Transport names a server transport.
const (
	TransportStdio = "stdio" // child process speaking JSON-RPC on stdin/stdout
	TransportHTTP  = "http"  // streamable HTTP
	TransportSSE   = "sse"   // legacy HTTP+SSE (protocol 2024-11-05)
)

// Source levels.
const (
	LevelUser    = "user"
	LevelProject = "project"
	LevelNative  = "native"
)

// Redacted replaces every secret-bearing value before a configuration or a
// URL is recorded.
const Redacted = "<redacted>"

// SourceMeta says where a server configuration came from.
type SourceMeta struct {
	Provider     string `json:"provider"`     // provider id, e.g. "claude-code"
	ProviderName string `json:"providerName"` // display name, e.g. "Claude Code"
	Path         string `json:"path"`         // absolute path of the file
	Level        string `json:"level"`        // LevelUser, LevelProject or LevelNative
}

// ServerConfig is one MCP server configuration, as discovered and before any
// connect-time substitution. Name is the server's name; it is not part of
// the hashed configuration.
type ServerConfig struct {
	Name string `json:"-"`
	// Type is "stdio", "http" or "sse" (aliases are normalised by the
	// loader); empty means inferred (see [ServerConfig.Transport]).
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Roots, when set, are the directories the client gives this server
	// as its roots (roots/list) instead of the session's: absolute, or
	// relative to the session's working directory, taken as written (no
	// ${VAR} expansion). A server such as
	// server-filesystem works in those folders only. A change is a config
	// change (the hash changes, so the server reconnects). Omitted when
	// empty, so configurations without it hash as before.
	Roots []string `json:"roots,omitempty"`
	// TimeoutMs bounds connect + initialize; nil means the default (30 s),
	// 0 means no limit; negative is invalid.
	TimeoutMs *int64 `json:"timeout,omitempty"`
	// ToolTimeoutMs bounds each tool call; nil means the default (60 s),
	// 0 means no limit; negative is invalid. Omitted when nil, so
	// configurations without it hash as before.
	ToolTimeoutMs *int64 `json:"toolTimeoutMs,omitempty"`
	// MaxOutputBytes is the output budget of each tool call, in bytes of
	// the result's text: a larger result reaches the caller cut, and the
	// whole of it goes to a file. Nil means the default (256 KiB), 0 no
	// limit; negative is invalid. Omitted when nil, so configurations
	// without it hash as before.
	MaxOutputBytes *int64 `json:"maxOutputBytes,omitempty"`
	// Enabled false skips the server unless a file's enabledServers lists it.
	Enabled *bool `json:"enabled,omitempty"`
	// EnabledTools and DisabledTools are glob patterns on the server's
	// original tool names; DisabledTools wins.
	EnabledTools  []string `json:"enabledTools,omitempty"`
	DisabledTools []string `json:"disabledTools,omitempty"`
	// ProtocolVersion pins the MCP protocol version the client offers.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Era says which handshake the server speaks: "auto" (or empty, the
	// default) lets the recorded era decide and probes when none is
	// known; "modern" always starts with server/discover and never falls
	// back to initialize; "legacy" always sends initialize, with no
	// probe. Omitted when empty, so configurations without it hash as
	// before.
	Era string `json:"era,omitempty"`
	// AlwaysLoad keeps the server's tools exposed to the model when a
	// session's tool budget holds the other servers' tools back behind
	// its search tool. Omitted when false, so configurations without it
	// hash as before.
	AlwaysLoad bool `json:"alwaysLoad,omitempty"`
	// OAuth configures authorization at a remote server that requires
	// OAuth; nil means the defaults (discovery, then dynamic client
	// registration, browser login). Omitted when nil, so configurations
	// without it hash as before.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
	// Record is RecordTranscript to keep this server's transcript (every
	// JSON-RPC message in and out, scrubbed and capped) beside the events;
	// empty means lifecycle events only. Omitted when empty, so
	// configurations without it hash as before.
	Record string `json:"record,omitempty"`
}

// RecordTranscript is the [ServerConfig.Record] value that keeps the
// server's transcript.
const RecordTranscript = "transcript"

// Grants of [OAuthConfig.Grant].
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is a server's OAuth settings. ClientSecret and PrivateKey
// are secrets: substituted at connect time like header values, and
// redacted in every recorded configuration.
type OAuthConfig struct {
	// ClientID is a client registered with the authorization server
	// beforehand; empty means a Client ID Metadata Document
	// (ClientMetadataURL) where the server supports it, else dynamic
	// client registration.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is the HTTPS URL of this client's Client ID
	// Metadata Document, used as its client id where the authorization
	// server supports such documents.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// CallbackPort fixes the loopback port of the login's redirect; 0
	// means a free port.
	CallbackPort int `json:"callbackPort,omitempty"`
	// Scopes are requested on top of those the server's challenge or
	// metadata name.
	Scopes []string `json:"scopes,omitempty"`
	// Grant is GrantAuthorizationCode (the default) or
	// GrantClientCredentials (machine to machine: ClientID with
	// ClientSecret, or with PrivateKey for a private-key JWT assertion).
	Grant string `json:"grant,omitempty"`
	// PrivateKey is a PEM private key (PKCS #8, PKCS #1 or SEC 1) that
	// signs the client assertion of the private_key_jwt method.
	PrivateKey string `json:"privateKey,omitempty"`
	// SigningAlgorithm is the JWS algorithm of the assertion (ES256,
	// RS256, …); empty means the one the key suits.
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
}

// Clone returns a deep copy of o (nil for nil).
func (o *OAuthConfig) Clone() *OAuthConfig {
	if o == nil {
		return nil
	}
	c := *o
	c.Scopes = slices.Clone(o.Scopes)
	return &c
}

// Transport returns the effective transport: the explicit Type when set,
// else stdio when Command is set, else http when URL is set, else stdio.
func (c ServerConfig) Transport() string {
	switch c.Type {
	case "":
		if c.Command != "" {
			return TransportStdio
		}
		if c.URL != "" {
			return TransportHTTP
		}
		return TransportStdio
	case "streamable-http", "streamableHttp", "streamable_http":
		return TransportHTTP
	}
	return c.Type
}

// Validate checks the server's name, transport fields and limits. It is
// the one validation of a configuration: discovery applies it to every
// entry it reads, and the manager to every configuration it is given. It
// returns nil, or a [*ConfigError] whose message joins every problem with
// "; ", the name's first, then the transport's, then the limits':
//
//	Server "<n>": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)
//	Server "<n>": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both
//	Server "<n>": stdio server requires "command" field
//	Server "<n>": <http|sse> server requires "url" field
//	Server "<n>": unknown server type "<t>"
//	Server "<n>": "timeout" must not be negative
//	Server "<n>": "toolTimeoutMs" must not be negative
//	Server "<n>": "maxOutputBytes" must not be negative
//	Server "<n>": "roots" entry <i> is empty (want a directory)
//
// and, for an http or sse URL without ${VAR} references, the problem
// [CheckURL] finds, among the transport's. A URL with references is
// checked once they are expanded, by whoever expands them. The transport
// is [ServerConfig.Transport]: a missing type is inferred, the aliases of
// http are accepted.
func (c ServerConfig) Validate() error {
	var problems []string
	if !ValidServerName(c.Name) {
		problems = append(problems, "invalid server name (must match "+ServerNamePattern+")")
	}
	if c.Command != "" && c.URL != "" {
		problems = append(problems, `both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`)
	}
	switch t := c.Transport(); t {
	case TransportStdio:
		if c.Command == "" {
			problems = append(problems, `stdio server requires "command" field`)
		}
	case TransportHTTP, TransportSSE:
		if c.URL == "" {
			problems = append(problems, t+` server requires "url" field`)
		} else if !strings.Contains(c.URL, "${") {
			if err := CheckURL(c.URL); err != nil {
				problems = append(problems, err.Error())
			}
		}
	default:
		problems = append(problems, fmt.Sprintf("unknown server type %q", t))
	}
	// 0 means no limit; a negative value is a mistake, not another way to
	// say so.
	for _, l := range []struct {
		field string
		v     *int64
	}{{"timeout", c.TimeoutMs}, {"toolTimeoutMs", c.ToolTimeoutMs}, {"maxOutputBytes", c.MaxOutputBytes}} {
		if l.v != nil && *l.v < 0 {
			problems = append(problems, fmt.Sprintf("%q must not be negative", l.field))
		}
	}
	problems = append(problems, c.eraProblems()...)
	for i, r := range c.Roots {
		if strings.TrimSpace(r) == "" {
			problems = append(problems, fmt.Sprintf(`"roots" entry %d is empty (want a directory)`, i))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &ConfigError{Server: c.Name, Problems: problems}
}

// The values of [ServerConfig.Era].
const (
	ConfigEraAuto   = "auto"
	ConfigEraModern = string(EraModern)
	ConfigEraLegacy = string(EraLegacy)
)

// modernProtocol is the first protocol version of the modern era.
const modernProtocol = "2026-07-28"

// eraProblems returns what is wrong with the server's era setting: an
// unknown value, or one that contradicts its pinned protocol version or
// its transport (legacy SSE has no modern era).
func (c ServerConfig) eraProblems() []string {
	var problems []string
	pinnedModern := c.ProtocolVersion != "" && c.ProtocolVersion >= modernProtocol
	switch c.Era {
	case "", ConfigEraAuto:
	case ConfigEraModern:
		if c.ProtocolVersion != "" && !pinnedModern {
			problems = append(problems, fmt.Sprintf(`"era" is %q but "protocolVersion" %q is of the legacy era (want %s or later)`, c.Era, c.ProtocolVersion, modernProtocol))
		}
	case ConfigEraLegacy:
		if pinnedModern {
			problems = append(problems, fmt.Sprintf(`"era" is %q but "protocolVersion" %q is of the modern era (want a version before %s)`, c.Era, c.ProtocolVersion, modernProtocol))
		}
	default:
		problems = append(problems, fmt.Sprintf(`"era" must be "auto", "modern" or "legacy", not %q`, c.Era))
	}
	if c.Transport() == TransportSSE && (c.Era == ConfigEraModern || pinnedModern) {
		problems = append(problems, `an sse server speaks the legacy era only ("era" and "protocolVersion" cannot make it modern; use type "http")`)
	}
	return problems
}

// ConfigError is the error of [ServerConfig.Validate]: every problem of one
// server's configuration.
type ConfigError struct {
	Server string
	// Problems are the problems found, without the server prefix, in the
	// order checked: the name first, the transport fields after, the
	// limits last.
	Problems []string
}

// Error returns every problem prefixed with `Server "<name>": `, joined
// with "; ".
func (e *ConfigError) Error() string {
	prefix := fmt.Sprintf("Server %q: ", e.Server)
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(prefix)
		b.WriteString(p)
	}
	return b.String()
}

// ServerNamePattern is the pattern every server name matches: 1 to 100
// ASCII letters, digits, "_", ".", ":" or "-".
const ServerNamePattern = `^[A-Za-z0-9_.:-]{1,100}$`

// ValidServerName reports whether name matches [ServerNamePattern].
func ValidServerName(name string) bool {
	if len(name) == 0 || len(name) > 100 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// URLError is the error of [CheckURL]: a server URL that cannot be
// connected.
type URLError struct {
	// URL is the URL as the message quotes it, redacted ([RedactURL]).
	// CheckURL sets the URL it checked; a caller that checked an expanded
	// URL sets the one written in the configuration instead, so that no
	// substituted value is quoted.
	URL string
	// Problem says what is wrong: "is not a valid URL", "must start with
	// http:// or https://" or "has no host".
	Problem string
}

// Error returns `"url" "<URL, redacted>" <Problem>`.
func (e *URLError) Error() string {
	return fmt.Sprintf(`"url" %q %s`, RedactURL(e.URL), e.Problem)
}

// CheckURL reports a server URL that cannot be connected: one that does
// not parse, whose scheme is not http or https, or without a host. The
// error is a [*URLError].
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return &URLError{URL: raw, Problem: "is not a valid URL"}
	case u.Scheme != "http" && u.Scheme != "https":
		return &URLError{URL: raw, Problem: "must start with http:// or https://"}
	case u.Host == "":
		return &URLError{URL: raw, Problem: "has no host"}
	}
	return nil
}

// Clone returns a deep copy of c.
func (c ServerConfig) Clone() ServerConfig {
	c.Args = slices.Clone(c.Args)
	c.Env = maps.Clone(c.Env)
	c.Headers = maps.Clone(c.Headers)
	c.EnabledTools = slices.Clone(c.EnabledTools)
	c.DisabledTools = slices.Clone(c.DisabledTools)
	c.Roots = slices.Clone(c.Roots)
	if c.TimeoutMs != nil {
		v := *c.TimeoutMs
		c.TimeoutMs = &v
	}
	if c.ToolTimeoutMs != nil {
		v := *c.ToolTimeoutMs
		c.ToolTimeoutMs = &v
	}
	if c.MaxOutputBytes != nil {
		c.MaxOutputBytes = new(*c.MaxOutputBytes)
	}
	if c.Enabled != nil {
		v := *c.Enabled
		c.Enabled = &v
	}
	c.OAuth = c.OAuth.Clone()
	return c
}

// Hash returns the hex SHA-256 of the canonical JSON (object keys sorted,
// empty fields omitted) of the unresolved configuration. It is the tool
// cache key together with the server name: rotating a secret that is
// substituted at connect time changes neither the hash nor what is stored.
func (c ServerConfig) Hash() string {
	b, err := canonicalJSON(c)
	if err != nil {
		// A ServerConfig holds only strings, numbers and bools; marshalling
		// cannot fail.
		panic("events: hash config: " + err.Error())
	}
	return hashBytes(b)
}

// canonicalJSON marshals v with every object's keys sorted.
func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, err
	}
	// encoding/json writes map keys in sorted order.
	return json.Marshal(generic)
}

// Redact returns a copy of c that is safe to record: every env value and
// every header value is replaced by [Redacted] (so are an OAuth client
// secret and private key), and credential-like query
// parameters of the URL and of URL-shaped arguments are redacted too.
func (c ServerConfig) Redact() ServerConfig {
	r := c.Clone()
	for k := range r.Env {
		r.Env[k] = Redacted
	}
	for k := range r.Headers {
		r.Headers[k] = Redacted
	}
	r.URL = RedactURL(r.URL)
	if o := r.OAuth; o != nil {
		if o.ClientSecret != "" {
			o.ClientSecret = Redacted
		}
		if o.PrivateKey != "" {
			o.PrivateKey = Redacted
		}
	}
	r.Args = RedactArgs(r.Args)
	return r
}

// RedactArgs returns a copy of a command's arguments that is safe to
// record and print. Besides what [RedactText] redacts in each argument
// (credential-like name=value pairs such as --token=…, URL user info and
// query parameters, opaque URL path segments), it replaces
//
//   - the argument after a credential-like flag (--api-key, --token,
//     --password, --secret, --auth…, any flag whose name
//     [IsCredentialName] matches) unless that argument is another flag;
//   - the value of a credential-like header ("Authorization: …",
//     "X-Api-Key: …"), whether it follows -H or --header or stands alone;
//   - the credential after "Bearer " or "Basic ".
//
// A value that is only ${VAR} references is kept: it names the secret
// without holding it.
func RedactArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		if i > 0 && credentialFlag(args[i-1]) && !strings.HasPrefix(a, "-") && !onlyReferences(a) {
			out[i] = Redacted
			continue
		}
		out[i] = redactHeaderLine(RedactText(a))
		if flag, v, ok := flagValue(out[i]); ok {
			out[i] = flag + redactHeaderLine(RedactText(v))
		}
	}
	return out
}

// flagValue splits a --flag=value argument after its "=", so that a value
// that is itself a header line ("--header=X-Api-Key: …") or a name=value
// pair ("--env=GITHUB_TOKEN=…") is redacted as a separate argument would
// be.
func flagValue(arg string) (flag, value string, ok bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", "", false
	}
	i := strings.IndexByte(arg, '=')
	if i < 0 || strings.ContainsAny(arg[:i], " :") {
		return "", "", false
	}
	return arg[:i+1], arg[i+1:], true
}

// ArgSecrets returns the literal secrets that [RedactArgs] takes out of
// args (the value after a credential-like flag, a credential-like header's
// value and the credential after its scheme, the value of a
// credential-like name=value pair, an opaque URL path segment), so that
// they can be scrubbed from what the server prints too.
func ArgSecrets(args []string) []string {
	var out []string
	for i, a := range args {
		if i > 0 && credentialFlag(args[i-1]) && !strings.HasPrefix(a, "-") && !onlyReferences(a) {
			out = append(out, a)
			continue
		}
		parts := []string{a}
		if _, v, ok := flagValue(a); ok {
			parts = append(parts, v)
		}
		for _, p := range parts {
			if m := headerLine.FindStringSubmatch(p); m != nil && IsCredentialName(m[1]) && m[2] != "" && !onlyReferences(m[2]) {
				out = append(out, m[2])
			}
		}
		for _, m := range authScheme.FindAllStringSubmatch(a, -1) {
			if !onlyReferences(m[2]) {
				out = append(out, m[2])
			}
		}
		for _, p := range parts {
			for _, m := range inlineParam.FindAllStringSubmatch(p, -1) {
				if IsCredentialName(m[1]) && !onlyReferences(m[2]) {
					out = append(out, m[2])
				}
			}
		}
		for _, u := range urlInText.FindAllString(a, -1) {
			rest := u[strings.Index(u, "://")+3:]
			j := strings.IndexByte(rest, '/')
			if j <= 0 {
				continue // no host, or no path
			}
			path, _, _ := strings.Cut(rest[j:], "?")
			path, _, _ = strings.Cut(path, "#")
			for seg := range strings.SplitSeq(path, "/") {
				if opaqueSegment(seg) {
					out = append(out, seg)
				}
			}
		}
	}
	return out
}

// credentialFlag reports whether arg is a flag without a value of its own
// whose name looks like a credential: --api-key, -token, --client-secret.
func credentialFlag(arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if name == arg || name == "" || strings.ContainsAny(name, "= ") {
		return false
	}
	return IsCredentialName(name)
}

// headerLine matches "Name: value" with a header-shaped name.
var headerLine = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9_-]*)\s*:\s*(.*)$`)

// authScheme matches an HTTP authorization scheme and the credential after
// it.
var authScheme = regexp.MustCompile(`(?i)\b(Bearer|Basic)\s+([^\s"']+)`)

// redactHeaderLine redacts the value of a credential-like header line and
// any credential after an authorization scheme in arg.
func redactHeaderLine(arg string) string {
	if m := headerLine.FindStringSubmatch(arg); m != nil && IsCredentialName(m[1]) && m[2] != "" && !onlyReferences(m[2]) {
		if sc := authScheme.FindStringSubmatch(m[2]); sc != nil && strings.HasPrefix(m[2], sc[0]) && onlyReferences(sc[2]) {
			return arg
		}
		return m[1] + ": " + Redacted
	}
	return authScheme.ReplaceAllStringFunc(arg, func(m string) string {
		sc := authScheme.FindStringSubmatch(m)
		if onlyReferences(sc[2]) || sc[2] == Redacted {
			return m
		}
		return sc[1] + " " + Redacted
	})
}

// reference matches one ${VAR} (or ${VAR:-default}) reference.
var reference = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`)

// onlyReferences reports whether v consists of ${VAR} references alone.
func onlyReferences(v string) bool {
	return v != "" && reference.ReplaceAllString(v, "") == ""
}

// minOpaqueSegment is the shortest URL path segment taken for a secret.
const minOpaqueSegment = 12

// opaqueSegment reports whether one segment of a URL's path looks like a
// credential rather than a word: at least minOpaqueSegment characters, of
// which at least two letters and at least two digits ("PATHsecret8888", a
// UUID, a base64 token). Ordinary segments (mcp, v1, sse, 2025-06-18,
// mcp-server-v2) have fewer digits or no letters. A segment that holds a
// ${VAR} reference is kept.
func opaqueSegment(seg string) bool {
	if len(seg) < minOpaqueSegment || strings.Contains(seg, "${") || seg == Redacted {
		return false
	}
	letters, digits := 0, 0
	for _, c := range seg {
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letters++
		}
	}
	return letters >= 2 && digits >= 2
}

// redactPath replaces the opaque segments (opaqueSegment) of the path of
// u, a URL with a host ("scheme://host/…"); a URL without one (file:///…)
// is returned as it is.
func redactPath(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	rest := u[i+3:]
	j := strings.IndexByte(rest, '/')
	if j <= 0 || strings.ContainsAny(rest[:j], "?#") {
		return u // no host, or no path
	}
	start := i + 3 + j
	end := len(u)
	if k := strings.IndexAny(u[start:], "?#"); k >= 0 {
		end = start + k
	}
	segs := strings.Split(u[start:end], "/")
	changed := false
	for n, seg := range segs {
		if opaqueSegment(seg) {
			segs[n], changed = Redacted, true
		}
	}
	if !changed {
		return u
	}
	return u[:start] + strings.Join(segs, "/") + u[end:]
}

// credentialParam matches query-parameter, header and variable names that
// look like credentials: GITHUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY,
// GITHUB_PAT, DB_PASSWORD, PGPASS, DATABASE_DSN, apiKey, access_token, ….
var credentialParam = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|passphrase|auth|credential|session|signature|sig$|bearer|cookie|(^|[_.-])pat$|(^|[_.-]|^pg)pass$|dsn$|conn(ection)?[_-]?str)`)

// IsCredentialName reports whether a parameter, header or variable name
// looks like it carries a credential.
// The shell's PWD and OLDPWD are working directories, not passwords.
func IsCredentialName(name string) bool {
	if strings.EqualFold(name, "PWD") || strings.EqualFold(name, "OLDPWD") {
		return false
	}
	return credentialParam.MatchString(name)
}

// RedactURL replaces the values of credential-like query parameters (and
// of such pairs in a fragment, #access_token=…), any user info and, in a
// URL with a host, every path segment that looks like
// an opaque credential (https://host/s/<redacted>/mcp; see opaqueSegment)
// of raw with [Redacted]. Strings that do not parse as URLs are passed
// through [RedactText]. A URL with nothing to redact is returned as
// written, so ${VAR} references in it stay readable.
func RedactURL(raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return RedactText(raw)
	}
	s := redactPath(redactURLCredentials(raw, u))
	if i := strings.IndexByte(s, '#'); i >= 0 && strings.Contains(s[i:], "=") {
		// A fragment in the form of a query (#access_token=…).
		s = s[:i] + redactPairs(s[i:])
	}
	return s
}

// redactURLCredentials is RedactURL without the path rule; u is raw
// parsed.
func redactURLCredentials(raw string, u *url.URL) string {
	changed := false
	if u.User != nil {
		u.User = url.User(Redacted)
		changed = true
	}
	if u.RawQuery != "" {
		if q := redactQuery(u.RawQuery); q != u.RawQuery {
			u.RawQuery, changed = q, true
		}
	}
	if !changed {
		return raw
	}
	s := u.String()
	// url.String escapes the marker's angle brackets; keep it readable.
	return strings.ReplaceAll(strings.ReplaceAll(s, "%3Credacted%3E", Redacted), url.PathEscape(Redacted), Redacted)
}

// redactQuery redacts credential-like parameters, keeping the order and the
// form of the others.
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if !hasValue {
			continue
		}
		if dn, err := url.QueryUnescape(name); err == nil {
			name = dn
		}
		if IsCredentialName(name) {
			parts[i] = url.QueryEscape(name) + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// inlineParam finds name=value pairs with credential-like names inside free
// text, such as a URL quoted in an error message or passed as an argument.
// A value ends at "&" or ";", which separate the pairs of a query or of a
// connection string ("Server=db;Password=…"), or at white space or a quote.
var inlineParam = regexp.MustCompile(`([A-Za-z0-9_.\-]+)=([^&;\s"'<>]+)`)

// userInfo finds user:password@ in URLs inside free text.
var userInfo = regexp.MustCompile(`(://)[^/@\s"']+@`)

// urlInText finds URLs with a host inside free text.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// RedactText redacts credential-like name=value pairs, URL user info and
// opaque URL path segments (as [RedactURL] does) in free text (error
// messages, arguments).
func RedactText(s string) string {
	if strings.Contains(s, "://") {
		s = urlInText.ReplaceAllStringFunc(s, redactPath)
	}
	if !strings.Contains(s, "=") && !strings.Contains(s, "@") {
		return s
	}
	s = userInfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	return redactPairs(s)
}

// redactPairs redacts the values of the credential-like name=value pairs
// in s.
func redactPairs(s string) string {
	return inlineParam.ReplaceAllStringFunc(s, func(m string) string {
		name, _, _ := strings.Cut(m, "=")
		if IsCredentialName(name) {
			return name + "=" + Redacted
		}
		return m
	})
}
