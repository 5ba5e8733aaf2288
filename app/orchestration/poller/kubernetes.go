package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/inventory"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// namespaceType is a namespace's resource type in the inventory, as the engine's Kubernetes
// provider names the namespaces it makes; their provider's id is their name.
const namespaceType = "kubernetes:core/v1:Namespace"

// workloads are the kinds of workload discovery looks for, by the engine's type of each and the
// API's list of them in every namespace; the engine's id of one is its namespace and name.
var workloads = []struct{ Type, Path string }{
	{"kubernetes:apps/v1:Deployment", "/apis/apps/v1/deployments"},
	{"kubernetes:apps/v1:StatefulSet", "/apis/apps/v1/statefulsets"},
	{"kubernetes:apps/v1:DaemonSet", "/apis/apps/v1/daemonsets"},
}

// discoverClusters holds each landing zone's namespace and workload items to what the zone's
// cluster holds
// (see inventory.Discover). Every zone with a cluster is looked at, without an event source of
// its own: the zone's cluster and its credentials say all there is to say. A cluster that does
// not answer is logged and looked at again next round; the others are looked at all the same.
func (w *Worker) discoverClusters(ctx context.Context) error {
	zones, err := db.Queries(w.pool).ClusteredZones(ctx)
	if err != nil {
		return fmt.Errorf("list the zones with a cluster: %w", err)
	}
	for _, zone := range zones {
		if err := w.discoverCluster(ctx, zone); err != nil {
			w.log.Warn("cluster discovery failed", "landing_zone", zone, "err", err)
		}
	}
	return nil
}

// discoverCluster asks the zone's cluster for its namespaces and workloads, outside any
// transaction, then records what it found under the lock of the zone's cluster, so two looks do not both find the
// same stranger.
func (w *Worker) discoverCluster(ctx context.Context, zone uuid.UUID) error {
	q := db.Queries(w.pool)
	raw, err := cluster.Open(ctx, q, w.clouds.Keys, zone)
	if errors.Is(err, cluster.ErrNoCluster) {
		return nil // removed since the list
	} else if err != nil {
		return err
	}
	kc, err := cluster.ParseKubeconfig(raw)
	if err != nil {
		return err
	}
	names, err := kc.Namespaces(ctx)
	if err != nil {
		return err
	}
	found := make([][]cluster.Object, len(workloads))
	for i, kind := range workloads {
		if found[i], err = kc.Objects(ctx, kind.Path); err != nil {
			return err
		}
	}
	return db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if _, err := q.LockZoneCluster(ctx, zone); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		// A tenant's namespace is Nimbus's whether or not an item records it: the tenant
		// factory may have made it before the inventory was kept.
		tenants, err := q.ZoneTenantNamespaces(ctx, zone)
		if err != nil {
			return err
		}
		known := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
			return !kubernetesOwn(n) && !slices.ContainsFunc(tenants, func(t dbgen.ZoneTenantNamespacesRow) bool { return t.Namespace == n })
		})
		if err := inventory.Discover(ctx, q, inventory.Sighting{Zone: zone, Type: namespaceType, IDs: names, Known: known}); err != nil {
			return err
		}
		// A workload in a tenant's namespace is no more Nimbus's than one elsewhere, unless a
		// deployment made it (and its item claims it); Kubernetes' own are never strangers.
		for i, kind := range workloads {
			ids, own := []string{}, []string{}
			for _, o := range found[i] {
				ids = append(ids, o.ID())
				if kubernetesOwn(o.Namespace) {
					own = append(own, o.ID())
				}
			}
			if err := inventory.Discover(ctx, q, inventory.Sighting{Zone: zone, Type: kind.Type, IDs: ids, Known: own}); err != nil {
				return err
			}
		}
		return nil
	})
}

// kubernetesOwn reports whether a namespace is one Kubernetes makes for itself.
func kubernetesOwn(name string) bool { return name == "default" || strings.HasPrefix(name, "kube-") }
