package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// foldSharing follows, in one session's stream, which server's latest
// connection was to a shared server (sharedOf: server → instance) and,
// in a shared host's session, which hosts are attached to its servers;
// it returns the attached hosts after env.
func foldSharing(env events.Envelope, sharedOf map[string]string, hosts []attachedHostJSON) []attachedHostJSON {
	switch env.Type {
	case events.TypeServerConnected, events.TypeHostAttached, events.TypeHostDetached:
	default:
		return hosts
	}
	ev, err := events.Decode(env)
	if err != nil {
		return hosts
	}
	switch e := ev.(type) {
	case *events.ServerConnected:
		if e.Transport == events.TransportShared && e.SharedInstance != "" {
			sharedOf[e.Server] = e.SharedInstance
		} else {
			delete(sharedOf, e.Server)
		}
	case *events.HostAttached:
		hosts = append(hosts, attachedHostJSON{Instance: e.Server, Session: e.Session, Pid: e.Pid})
	case *events.HostDetached:
		// One attachment of the host goes.
		if i := slices.IndexFunc(hosts, func(h attachedHostJSON) bool {
			return h.Instance == e.Server && h.Session == e.Session && h.Pid == e.Pid
		}); i >= 0 {
			hosts = slices.Delete(hosts, i, i+1)
		}
	}
	return hosts
}

// sharedRef finds the shared host's session that ran instance, and the
// pid the server had there: the session whose ServerConnected names the
// instance (a shared host names its servers by their instance ids). Nil
// for no instance.
func sharedRef(ctx context.Context, st store.Store, instance string) *sharedRefJSON {
	if instance == "" {
		return nil
	}
	ref := &sharedRefJSON{Instance: instance}
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			break
		}
		if env.Type != events.TypeServerConnected {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			continue
		}
		if c, ok := ev.(*events.ServerConnected); ok && c.Server == instance && c.Transport != events.TransportShared {
			ref.SharedHost, ref.Pid = env.SessionID, c.Pid
		}
	}
	return ref
}

// writeInspectSharing prints which shared server each shared connection
// used and, for a shared host's session, the hosts attached.
func writeInspectSharing(g *globals, out inspectJSON) {
	first := true
	for _, s := range out.Servers {
		if s.Shared == nil {
			continue
		}
		if first {
			fmt.Fprintln(g.stdout, "shared servers (server: instance, shared host session, pid)")
			first = false
		}
		host, pid := s.Shared.SharedHost, "-"
		if host == "" {
			host = "-"
		}
		if s.Shared.Pid != 0 {
			pid = strconv.Itoa(s.Shared.Pid)
		}
		fmt.Fprintf(g.stdout, "  %s: %s  %s  pid %s\n", escapeLine(s.Name), escapeLine(s.Shared.Instance), escapeLine(host), pid)
	}
	if !first {
		fmt.Fprintln(g.stdout)
	}
	if len(out.Hosts) > 0 {
		fmt.Fprintln(g.stdout, "hosts attached (instance: session, pid)")
		for _, h := range out.Hosts {
			fmt.Fprintf(g.stdout, "  %s: %s  pid %d\n", escapeLine(h.Instance), escapeLine(h.Session), h.Pid)
		}
		fmt.Fprintln(g.stdout)
	}
}
