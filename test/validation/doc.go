// Package validation checks that discovery and the manager refuse a
// server configuration with the same message: both apply
// [events.ServerConfig.Validate], so a configuration that discovery
// reports invalid is refused by the manager in the same words, and a
// configuration given to the manager directly is held to the same rules as
// one read from a file.
package validation
