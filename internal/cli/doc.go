// Package cli holds what the project's commands (examples/generate,
// examples/serve, tools/decodebench) share about flags and exit statuses:
// -h exits 0 after the usage, a flag the flag package rejects exits 2 after
// its own report, a cancelled run 130 and any other error 1, reported once
// as "command: error".
package cli
