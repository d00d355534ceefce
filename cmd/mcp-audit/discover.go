package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/mcplife/mcplife/loader"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// discoveryFlags are the flags shared by discover and run.
type discoveryFlags struct {
	cwd             string
	configs         multiFlag
	noProjectConfig bool
}

func (d *discoveryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.cwd, "cwd", ".", "project directory")
	fs.Var(&d.configs, "config", "extra config `FILE` in mcplife's format (repeatable)")
	fs.BoolVar(&d.noProjectConfig, "no-project-config", false, "ignore project-level config files (they can run commands)")
}

// options returns the loader options: the home directory is $HOME and the
// environment is the process's.
func (d *discoveryFlags) options() (loader.Options, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return loader.Options{}, usagef("no home directory: %v", err)
	}
	st, err := os.Stat(d.cwd)
	if err != nil || !st.IsDir() {
		return loader.Options{}, usagef("--cwd %s is not a directory", d.cwd)
	}
	// Absolute, so the session records where it ran, not ".".
	cwd, err := filepath.Abs(d.cwd)
	if err != nil {
		return loader.Options{}, usagef("--cwd %s: %v", d.cwd, err)
	}
	for _, c := range d.configs {
		if _, err := os.Stat(c); err != nil {
			return loader.Options{}, usagef("--config %s: %v", c, errors.Unwrap(err))
		}
	}
	return loader.Options{
		Cwd:                  cwd,
		Home:                 home,
		LookupEnv:            os.LookupEnv,
		ExtraConfigs:         d.configs,
		DisableProjectConfig: d.noProjectConfig,
	}, nil
}

func runDiscover(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("discover", g)
	var df discoveryFlags
	df.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("discover takes no arguments (use --cwd DIR)")
	}
	opts, err := df.options()
	if err != nil {
		return err
	}
	d, err := loader.LoadConfigs(ctx, opts)
	if err != nil {
		return usagef("discovery failed: %v", err)
	}
	rep := d.Report()
	if g.json {
		if err := g.writeJSON(discoverJSON{Report: rep, Warnings: nonNil(d.Warnings)}); err != nil {
			return err
		}
	} else {
		printDiscovery(g, rep, d.Warnings)
	}
	if len(rep.Errors) > 0 {
		return errInputProblems
	}
	return nil
}

// discoverJSON is `discover --json`: the loader's report and the
// warnings the text output shows.
type discoverJSON struct {
	loader.Report
	Warnings []string `json:"warnings"`
}

// errInputProblems: the report was printed, but some input (a config file)
// was broken: exit 2 without another message.
var errInputProblems = usageError{errors.New("")}

func printDiscovery(g *globals, rep loader.Report, warnings []string) {
	w := g.stdout
	fmt.Fprintf(w, "%d server(s) to connect\n", len(rep.Servers))
	if len(rep.Servers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tTRANSPORT\tTARGET\tSOURCE\tLEVEL\tPATH")
		for _, s := range rep.Servers {
			target := s.URL
			if s.Transport == "stdio" {
				target = strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", escapeLine(s.Name), escapeLine(s.Transport), clip(escapeLine(target), 48),
				escapeLine(s.Source.ProviderName), escapeLine(s.Source.Level), escapeLine(s.Source.Path))
		}
		tw.Flush()
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "\n%d entr(ies) skipped\n", len(rep.Skipped))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tREASON\tSOURCE\tDETAIL")
		for _, s := range rep.Skipped {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", escapeLine(s.Name), g.paint(colorYellow, escapeLine(string(s.Reason))),
				escapeLine(s.Source.ProviderName+" "+s.Source.Path), escapeLine(firstLine(s.Detail)))
		}
		tw.Flush()
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(w, "\n%d file(s) could not be read\n", len(rep.Errors))
		for _, e := range rep.Errors {
			fmt.Fprintf(w, "  %s %s\n", g.paint(colorRed, "error"), escapeLine(e.Error))
		}
	}
	for _, warn := range warnings {
		fmt.Fprintf(w, "  %s %s\n", g.paint(colorYellow, "warning"), escapeLine(warn))
	}
	if rep.ExaKeys > 0 {
		fmt.Fprintf(w, "\n%d Exa API key(s) collected from filtered Exa servers\n", rep.ExaKeys)
	}
}
