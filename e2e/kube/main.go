// Command kube runs a Kubernetes control plane on loopback (see package kubeplane) until
// interrupted, and prints an admin kubeconfig for it: paste it into a Kubernetes landing zone's
// cluster page to try the Kubernetes components without a cluster of one's own.
//
// Usage: kube <directory holding etcd, kube-apiserver and kube-controller-manager> [data directory]
//
// The data directory is made anew, and must not exist yet; without one, a new temporary
// directory is used.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"nimbus/e2e/kubeplane"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube <directory holding etcd, kube-apiserver and kube-controller-manager> [data directory]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "kube:", err)
		os.Exit(1)
	}
}

func run(bin string, args []string) error {
	// Each start makes new credentials, so a store of an earlier one would hold objects signed
	// for none: the directory is always new, and never one that holds something else.
	var dir string
	if len(args) > 0 {
		dir = args[0]
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("the data directory must not exist yet: %w", err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "nimbus-kube-"); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	plane, err := kubeplane.Start(startCtx, bin, dir)
	cancel()
	if err != nil {
		return err
	}
	defer plane.Stop()
	config := filepath.Join(dir, "admin.kubeconfig")
	fmt.Printf("Kubernetes API server on %s (logs and data in %s)\n", plane.URL, dir)
	fmt.Printf("Admin kubeconfig (also in %s):\n\n%s\nCtrl-C stops it.\n", config, plane.Kubeconfig())
	<-ctx.Done()
	return nil
}
