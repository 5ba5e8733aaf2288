package deploy

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"nimbus/app/cluster"
	"nimbus/app/secrets"
	"nimbus/db/dbgen"
)

// errNotOnCluster refuses a tenant's Kubernetes deployment: the zone's kubeconfig is the
// provider's, for what the provider deploys; a tenant's components run with the tenant's own
// account on the cluster, which the tenant factory makes.
var errNotOnCluster = errors.New("Kubernetes components deploy into a tenant's environment once the tenant factory has provisioned the tenant on the landing zone's cluster")

// kubeconfigKey is the Kubernetes provider's own setting: the engine's default provider reads
// it, so the program never names the credentials and cannot choose others.
const kubeconfigKey = "kubernetes:kubeconfig"

// clusterConfig adds to secrets the cluster credentials a deployment's engine needs: none but
// for a Kubernetes component, whose engine always gets a kubeconfig, so that the provider never
// falls back to one it finds on the server.
func clusterConfig(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring, depID uuid.UUID, into map[string]string) error {
	c, err := q.DeploymentCluster(ctx, depID)
	if err != nil {
		return err
	}
	if c.Provider != cluster.Provider {
		return nil
	}
	if !c.System {
		return errNotOnCluster
	}
	if !c.LandingZoneID.Valid {
		return cluster.ErrNoCluster
	}
	kc, err := cluster.Open(ctx, q, keys, c.LandingZoneID.UUID)
	if err != nil {
		return err
	}
	into[kubeconfigKey] = string(kc)
	return nil
}
