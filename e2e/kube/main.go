// Command kube runs a Kubernetes control plane on loopback (see package kubeplane) until
// interrupted, and prints an admin kubeconfig for it: paste it into a Kubernetes landing zone's
// cluster page to try the Kubernetes components without a cluster of one's own.
//
// Usage: kube <directory holding etcd and kube-apiserver> [data directory]
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
		fmt.Fprintln(os.Stderr, "usage: kube <directory holding etcd and kube-apiserver> [data directory]")
		os.Exit(2)
	}
	dir := filepath.Join(os.TempDir(), "nimbus-kube")
	if len(os.Args) > 2 {
		dir = os.Args[2]
	}
	// Each start makes new credentials, so an old store would hold objects signed for none.
	if err := os.RemoveAll(dir); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	plane, err := kubeplane.Start(startCtx, os.Args[1], dir)
	cancel()
	if err != nil {
		fail(err)
	}
	defer plane.Stop()
	config := filepath.Join(dir, "admin.kubeconfig")
	fmt.Printf("Kubernetes API server on %s (logs and data in %s)\n", plane.URL, dir)
	fmt.Printf("Admin kubeconfig (also in %s):\n\n%s\nCtrl-C stops it.\n", config, plane.Kubeconfig())
	<-ctx.Done()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kube:", err)
	os.Exit(1)
}
