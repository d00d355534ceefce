package loader_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcplife/mcplife/loader"
)

func ExampleLoadConfigs() {
	root, _ := os.MkdirTemp("", "loader-example")
	defer os.RemoveAll(root)
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(`
[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
`), 0o644)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{
  // project servers, trailing commas allowed
  "mcpServers": {"repo": {"command": "./bin/repo-mcp", "args": ["--root", "${PWD:-.}"]},},
}`), 0o644)

	d, err := loader.LoadConfigs(context.Background(), loader.Options{
		Cwd:                  project,
		Home:                 home,
		Env:                  map[string]string{"FIGMA_TOKEN": "secret"},
		DisableProjectConfig: true,
	})
	if err != nil {
		panic(err)
	}
	for _, s := range d.Servers {
		fmt.Println(s.Config.Name, s.Config.Transport(), s.Source.ProviderName, s.Source.Level, s.Config.Headers)
	}
	for _, s := range d.Skipped {
		fmt.Println(s.Name, s.Reason)
	}
	// Output:
	// figma http OpenAI Codex user map[Authorization:Bearer ${FIGMA_TOKEN}]
}

func ExampleResolver_Resolve() {
	r := loader.NewResolver(loader.MapEnv(map[string]string{"TOKEN": "t0k"}), nil)
	ctx := context.Background()
	for _, v := range []string{"Bearer ${TOKEN}", "${TOKEN}", "TOKEN", "!echo from-a-command", "!exit 3"} {
		got, err := r.Resolve(ctx, v)
		fmt.Printf("%q %v\n", got, err)
	}
	// Output:
	// "Bearer t0k" <nil>
	// "t0k" <nil>
	// "TOKEN" <nil>
	// "from-a-command" <nil>
	// "" shell command failed: exit status 3
}

func ExampleWatcher() {
	root, _ := os.MkdirTemp("", "watcher-example")
	defer os.RemoveAll(root)
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(project, 0o755)
	ctx := context.Background()
	opts := loader.Options{Cwd: project, Home: home}

	d, err := loader.LoadConfigs(ctx, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(d.Servers), "servers")
	w, err := loader.NewWatcher(d.WatchPaths(), nil)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	// A config file appears where discovery looked for one.
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"repo": {"command": "repo-mcp"}}}`), 0o644)
	for _, p := range <-w.Changes() {
		rel, _ := filepath.Rel(root, p)
		fmt.Println("changed:", filepath.ToSlash(rel))
	}
	if d, err = loader.LoadConfigs(ctx, opts); err != nil {
		panic(err)
	}
	for _, s := range d.Servers {
		fmt.Println(s.Config.Name, "from", s.Source.ProviderName)
	}
	// Output:
	// 0 servers
	// changed: project/.mcp.json
	// repo from Claude Code
}
