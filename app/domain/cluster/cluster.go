package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Provider is the Nimbus provider whose landing zones and components deploy on a cluster.
const Provider = "kubernetes"

// Cluster is a landing zone's cluster as provider admins see it: never its kubeconfig.
type Cluster struct {
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	Server        string    `json:"server"`
	Version       string    `json:"version"`
	SignedInAs    string    `json:"signed_in_as"`
	CheckedAt     time.Time `json:"checked_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Service keeps the landing zones' clusters.
type Service struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewService returns the service; keys seals the kubeconfigs.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// checkTimeout bounds the save's wait for the API server.
const checkTimeout = 15 * time.Second

// Set gives a landing zone its cluster, replacing the one it had, once the API server has
// answered with the kubeconfig's credentials. Provider admins only.
func (s *Service) Set(ctx context.Context, actor access.Principal, zoneID uuid.UUID, kubeconfig []byte) (Cluster, error) {
	if !actor.ProviderAdmin {
		return Cluster{}, problem.ErrForbidden
	}
	z, err := s.zone(ctx, zoneID)
	if err != nil {
		return Cluster{}, err
	}
	if z.Provider != Provider {
		return Cluster{}, problem.Invalid("kubeconfig", "provider", "landing zone %s is for %s, not Kubernetes: it has no cluster", z.Name, z.Provider)
	}
	kc, err := ParseKubeconfig(kubeconfig)
	if err != nil {
		return Cluster{}, err
	}
	// Asked before the transaction: a slow or absent server must not hold a connection.
	checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	check, err := kc.Check(checkCtx)
	if err != nil {
		return Cluster{}, problem.Invalid("kubeconfig", "reachable", "%s", err)
	}
	keyID, sealed, err := s.keys.Seal(kc.Marshal(), zoneID[:])
	if err != nil {
		return Cluster{}, fmt.Errorf("seal the kubeconfig: %w", err)
	}
	var out Cluster
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := q.SetZoneCluster(ctx, dbgen.SetZoneClusterParams{LandingZoneID: zoneID, Server: kc.Server, Kubeconfig: sealed,
			SecretKeyID: keyID, ServerVersion: check.Version, SignedInAs: check.User,
			SetBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		out = view(row)
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.cluster.set", TargetType: "landing_zone", TargetID: zoneID.String(),
			Diff: map[string]any{"server": kc.Server, "version": check.Version, "signed_in_as": check.User}})
	})
	if err != nil {
		return Cluster{}, fmt.Errorf("set the cluster: %w", err)
	}
	return out, nil
}

// Get returns the landing zone's cluster, or nil when it has none. Provider admins only.
func (s *Service) Get(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (*Cluster, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	if _, err := s.zone(ctx, zoneID); err != nil {
		return nil, err
	}
	row, err := db.Queries(s.pool).GetZoneCluster(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := view(row)
	return &c, nil
}

// Recheck asks the API server again with the kept kubeconfig and records what it said. A
// cluster that no longer answers keeps its last check and the error says why.
func (s *Service) Recheck(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (Cluster, error) {
	if !actor.ProviderAdmin {
		return Cluster{}, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	before, err := q.GetZoneCluster(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Cluster{}, problem.ErrNotFound
	}
	if err != nil {
		return Cluster{}, err
	}
	data, err := open(s.keys, before)
	if err != nil {
		return Cluster{}, err
	}
	kc, err := ParseKubeconfig(data)
	if err != nil {
		return Cluster{}, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	check, err := kc.Check(checkCtx)
	if err != nil {
		return Cluster{}, problem.Invalid("kubeconfig", "reachable", "%s", err)
	}
	// Recorded only on the kubeconfig it checked: one set or removed meanwhile is not this one.
	row, err := q.CheckedZoneCluster(ctx, dbgen.CheckedZoneClusterParams{LandingZoneID: zoneID, ServerVersion: check.Version,
		SignedInAs: check.User, UpdatedAt: before.UpdatedAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return Cluster{}, problem.Invalid("kubeconfig", "current", "the cluster was replaced or forgotten while it was checked: check again")
	}
	if err != nil {
		return Cluster{}, err
	}
	return view(row), nil
}

// Remove forgets the landing zone's cluster, while the zone is a draft or retired: a published
// zone's deployments are changed and destroyed with it. What was deployed on it stays there.
func (s *Service) Remove(ctx context.Context, actor access.Principal, zoneID uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	z, err := s.zone(ctx, zoneID)
	if err != nil {
		return err
	}
	if lifecycle.ZoneStatus(z.Status) == lifecycle.ZonePublished {
		return problem.Invalid("kubeconfig", "published", "landing zone %s is published: its deployments need the cluster; replace the kubeconfig instead, or retire the zone first", z.Name)
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.RemoveZoneCluster(ctx, zoneID)
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.cluster.remove", TargetType: "landing_zone", TargetID: zoneID.String()})
	})
}

func (s *Service) q() *dbgen.Queries { return db.Queries(s.pool) }

func view(r dbgen.ZoneCluster) Cluster {
	return Cluster{LandingZoneID: r.LandingZoneID, Server: r.Server, Version: r.ServerVersion, SignedInAs: r.SignedInAs,
		CheckedAt: r.CheckedAt, UpdatedAt: r.UpdatedAt}
}

// ErrNoCluster means a deployment needs its landing zone's cluster and the zone has none.
var ErrNoCluster = errors.New("the landing zone has no Kubernetes cluster: a provider admin sets one on the landing zone's page")

// Open returns the kubeconfig of a landing zone's cluster, for the engine only.
func Open(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring, zoneID uuid.UUID) ([]byte, error) {
	row, err := q.GetZoneCluster(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoCluster
	}
	if err != nil {
		return nil, err
	}
	return open(keys, row)
}

func open(keys *secrets.Keyring, row dbgen.ZoneCluster) ([]byte, error) {
	kc, err := keys.Open(row.SecretKeyID, row.Kubeconfig, row.LandingZoneID[:])
	if err != nil {
		return nil, fmt.Errorf("open the cluster's kubeconfig: %w", err)
	}
	return kc, nil
}
