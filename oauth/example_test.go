package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
)

// A connect without a token fails with a [*oauth.NeedsAuthError] naming
// the login command; [oauth.Authorizer.Login] runs the browser login and
// stores the token, which the connection's handler then sends. Here the
// authorization server and the MCP server it protects run on loopback,
// and the "browser" follows the redirects as a user's would.
func ExampleAuthorizer_Login() {
	ctx := context.Background()
	fx, err := oauthfixture.Start(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer fx.Close()
	dir, err := os.MkdirTemp("", "oauth-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	a, err := oauth.New(&oauth.Options{
		Store: oauth.NewFileStore(filepath.Join(dir, "oauth.json")), // default: DefaultStorePath
		Open:  oauthfixture.Browser,                                 // default: the user's browser
	})
	if err != nil {
		log.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}
	connect := func() (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
		return client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:     cfg.URL,
			OAuthHandler: a.Handler(cfg.Name, cfg, nil),
			MaxRetries:   -1,
		}, nil)
	}

	// A connect never opens a browser: it fails, saying how to log in.
	if _, err := connect(); err != nil {
		if ne, ok := errors.AsType[*oauth.NeedsAuthError](err); ok {
			fmt.Printf("needs authorization, scopes %v: run %s\n", ne.Scopes, ne.Login)
		}
	}

	res, err := a.Login(ctx, cfg.Name, cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("logged in: %s grant, scopes %v\n", res.Grant, res.Scopes)

	cs, err := connect()
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("read:", r.Content[0].(*mcp.TextContent).Text)
	// Output:
	// needs authorization, scopes [read]: run mcp-audit auth login tracker
	// logged in: authorization_code grant, scopes [read]
	// read: read ok
}
