package main

import "context"

func runExport(ctx context.Context, g *globals, args []string) error { return usagef("not yet") }
