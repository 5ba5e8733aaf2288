package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/pulumix"
	"nimbus/db/dbgen"
)

// errNoNamespace refuses a tenant's Kubernetes deployment on a zone whose cluster holds no
// namespace of the tenant's: the zone's kubeconfig is the provider's, for what the provider
// deploys, and a tenant's components run with the tenant's own account in its namespace, which
// the tenant factory makes.
var errNoNamespace = errors.New("the tenant has no namespace on the landing zone's Kubernetes cluster: a provider admin provisions the tenant there with the zone's tenant factory")

// How the engine's default Kubernetes provider is given its cluster, so that the program never
// names the credentials and cannot choose others (the validator refuses a provider of its own).
const (
	namespaceKey = "kubernetes:namespace" // a setting: where objects that name no namespace are made
	// kubeconfigFile names the file the provider reads its kubeconfig from. The kubeconfig is
	// never a setting: the engine hands a provider its settings in its environment, in the clear
	// (PULUMI_CONFIG), and a saved plan or the state would hold a token that changes each run.
	kubeconfigFile = "KUBECONFIG"
)

// clusterAccess is what a deployment's engine is given to reach its cloud: the ports its
// provider needs, and for a Kubernetes component its cluster, for a Proxmox one its API.
type clusterAccess struct {
	kubeconfig string   // the zone's for the provider's own deployments, a tenant's token otherwise
	ports      []uint16 // the TCP ports the provider reaches its cloud on: the API server's
	namespace  string   // the tenant's; "" for the provider's own deployments
	env        map[string]string
	files      map[string][]byte // a Proxmox API's certificate authority (proxmox.Credentials.Give)
	hidden     []string          // what the engine says must never show, should the provider echo it
}

// give hands the access to the stack's engine: the kubeconfig as a file of the run's own, in
// memory and removed when the run ends, the API server's port as the one its sandbox opens,
// a tenant's namespace as a setting, and a Proxmox API's credentials in the engine's
// environment alone.
func (a clusterAccess) give(st *pulumix.Stack) {
	st.Ports = a.ports
	st.Env, st.Files, st.Hidden = a.env, a.files, a.hidden
	if a.kubeconfig == "" {
		return
	}
	st.Files = map[string][]byte{kubeconfigFile: []byte(a.kubeconfig)}
	if a.namespace != "" {
		st.Settings = map[string]string{namespaceKey: a.namespace}
	}
}

// proxmoxAccess is the access of a Proxmox component's engine: the zone's API, reached on its
// port alone.
func proxmoxAccess(c proxmox.Credentials) (clusterAccess, error) {
	var st pulumix.Stack
	if err := c.Give(&st); err != nil {
		return clusterAccess{}, err
	}
	return clusterAccess{ports: st.Ports, env: st.Env, files: st.Files, hidden: st.Hidden}, nil
}

// engineSite is what decides the cluster credentials a deployment's engine gets: its
// component's provider, its environment's landing zone, whether it belongs to the provider's
// own (system) tenant, and the tenant.
type engineSite struct {
	provider string
	zone     uuid.NullUUID
	system   bool
	tenant   uuid.UUID
}

// clusterAccessOf is the cluster access of a deployment's engine. A Kubernetes component's
// engine always gets a kubeconfig, so that the provider never falls back to one it finds on
// the server: the zone's for the provider's system tenant, and for any other tenant one holding
// a token of the tenant's account in its namespace on the zone's cluster, issued now with the
// zone's credentials and good for lifetime. The token is kept nowhere: a resumed or retried
// operation asks for another.
func clusterAccessOf(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring, c engineSite, lifetime time.Duration) (clusterAccess, error) {
	if c.provider == proxmox.Provider {
		if !c.zone.Valid {
			return clusterAccess{}, proxmox.NoAccess{}
		}
		creds, err := proxmox.Open(ctx, q, keys, c.zone.UUID)
		if err != nil {
			return clusterAccess{}, err
		}
		return proxmoxAccess(creds)
	}
	if c.provider != cluster.Provider {
		return clusterAccess{}, nil
	}
	if !c.zone.Valid {
		return clusterAccess{}, cluster.ErrNoCluster
	}
	zone, err := cluster.Open(ctx, q, keys, c.zone.UUID)
	if err != nil {
		return clusterAccess{}, err
	}
	port, err := cluster.APIPort(zone)
	if err != nil {
		return clusterAccess{}, err
	}
	if c.system {
		return clusterAccess{kubeconfig: string(zone), ports: []uint16{port}}, nil
	}
	ns, err := q.LiveTenantNamespace(ctx, dbgen.LiveTenantNamespaceParams{TenantID: c.tenant, LandingZoneID: c.zone.UUID})
	if errors.Is(err, pgx.ErrNoRows) {
		return clusterAccess{}, errNoNamespace
	}
	if err != nil {
		return clusterAccess{}, err
	}
	kc, err := cluster.TenantKubeconfig(ctx, zone, ns.Namespace, lifetime)
	if err != nil {
		return clusterAccess{}, fmt.Errorf("the tenant's account on the cluster: %w", err)
	}
	return clusterAccess{kubeconfig: string(kc), ports: []uint16{port}, namespace: ns.Namespace}, nil
}

// finalOnCluster reports whether a failure to reach the cluster would fail again on a retry.
func finalOnCluster(err error) bool {
	return errors.Is(err, errNoNamespace) || errors.Is(err, cluster.ErrNoCluster) || errors.Is(err, cluster.ErrRefused) ||
		errors.Is(err, proxmox.ErrNoAccess)
}

// onProxmox refuses a Proxmox deployment into an environment whose landing zone has no
// Proxmox API access: its engine would have no credentials to deploy with.
func onProxmox(ctx context.Context, q *dbgen.Queries, env dbgen.GetEnvironmentRow) error {
	if !env.LandingZoneID.Valid {
		return problem.Invalid("component_id", "proxmox_access", "%s", proxmox.NoAccess{})
	}
	has, err := proxmox.Has(ctx, q, env.LandingZoneID.UUID)
	if err != nil || has {
		return err
	}
	z, err := q.GetLandingZone(ctx, env.LandingZoneID.UUID)
	if err != nil {
		return err
	}
	return problem.Invalid("component_id", "proxmox_access", "%s", proxmox.NoAccess{Zone: z.Name})
}

// onCluster refuses a Kubernetes deployment into an environment of a tenant that has no
// namespace on the cluster of the environment's landing zone. The provider's system tenant
// deploys with the zone's own credentials.
func onCluster(ctx context.Context, q *dbgen.Queries, env dbgen.GetEnvironmentRow) error {
	t, err := q.GetTenant(ctx, env.TenantID)
	if err != nil || t.System {
		return err
	}
	if env.LandingZoneID.Valid {
		_, err = q.LiveTenantNamespace(ctx, dbgen.LiveTenantNamespaceParams{TenantID: env.TenantID, LandingZoneID: env.LandingZoneID.UUID})
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
	}
	return problem.Invalid("component_id", "cluster", "%s: %s", t.Name, errNoNamespace)
}
