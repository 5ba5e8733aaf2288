// Command countcli stands in for the pulumi CLI in a test's toolchain: it notes each run's
// arguments in the simulated cloud's directory (the one place every deployment's engine may
// write), then becomes the real CLI, which the toolchain holds beside it as
// pulumi-language-counted (a name the engine's sandbox lets it execute).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	if dir := os.Getenv("SIMCLOUD_DIR"); dir != "" {
		if f, err := os.OpenFile(filepath.Join(dir, "engine-runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(os.Args[1:], " "))
			f.Close()
		}
	}
	real := filepath.Join(filepath.Dir(os.Args[0]), "pulumi-language-counted")
	if err := syscall.Exec(real, append([]string{real}, os.Args[1:]...), os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "countcli:", err)
		os.Exit(2)
	}
}
