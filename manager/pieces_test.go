package manager

import (
	"errors"
	"testing"

	"github.com/mcplife/mcplife/events"
)

func TestValidateConfigMessages(t *testing.T) {
	tests := []struct {
		name string
		cfg  events.ServerConfig
		want string
	}{
		{"ok", events.ServerConfig{Command: "x"}, ""},
		{"both", events.ServerConfig{Command: "x", URL: "http://h"}, `Server "both": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
		{"nocmd", events.ServerConfig{Type: "stdio"}, `Server "nocmd": stdio server requires "command" field`},
		{"nourl", events.ServerConfig{Type: "sse"}, `Server "nourl": sse server requires "url" field`},
		{"nourlh", events.ServerConfig{Type: "http"}, `Server "nourlh": http server requires "url" field`},
		{"weird", events.ServerConfig{Type: "ws", URL: "ws://h"}, `Server "weird": unknown server type "ws"`},
		{"bad name!", events.ServerConfig{Command: "x"}, `Server "bad name!": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
	}
	for _, tt := range tests {
		err := validateConfig(tt.name, tt.cfg)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: %v does not wrap ErrInvalidConfig", tt.name, err)
			}
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
