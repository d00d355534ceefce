// Package orphans counts the processes that outlive mcp-audit run, for
// each way its host process can end: Ctrl-C (SIGINT), SIGTERM, SIGHUP,
// SIGINT with its stdout closed, and SIGKILL. Each test builds the
// mcp-audit binary, runs it on stdio fixture servers that start a process
// in their own group and two that leave it (setsid, one of them a
// double-forked daemon), and checks every process it recorded by pid and
// start time.
//
// A host that tears down leaves nothing running. A host killed with
// SIGKILL takes its servers with it (the parent-death signal), and what
// they started survives only until the next mcp-audit run on the same
// store, which marks the session abandoned and kills those processes,
// those the host had not recorded yet too (right after a connect or a
// config edit, or a daemon started between two looks): they carry the
// session's id in their environment.
package orphans
