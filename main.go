// Command nimbus is the Nimbus server and its operator commands; see app/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"nimbus/app/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args, cli.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nimbus:", err)
		os.Exit(1)
	}
}
