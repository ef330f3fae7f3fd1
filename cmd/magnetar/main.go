// Command magnetar is the single Magnetar binary: every role (standalone, metadata, bookie,
// broker, proxy) and every tool (admin, client, perf) is a subcommand.
package main

import (
	"os"

	"github.com/magnetar-io/magnetar/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
