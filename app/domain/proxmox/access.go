package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
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

// Access is a landing zone's Proxmox API access as provider admins see it: never the token's
// secret, only that it is set.
type Access struct {
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	Endpoint      string    `json:"endpoint"`
	TokenID       string    `json:"token_id"`
	Secret        string    `json:"secret"` // always "set"
	CACert        string    `json:"ca_cert,omitempty"`
	Version       string    `json:"version"`
	CheckedAt     time.Time `json:"checked_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// NewAccess is what a provider admin gives a zone.
type NewAccess struct {
	Endpoint string `json:"endpoint"`
	TokenID  string `json:"token_id"`
	Secret   string `json:"secret"`
	CACert   string `json:"ca_cert"`
}

// Service keeps the landing zones' Proxmox API access.
type Service struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewService returns the service; keys seals the tokens' secrets.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// Set gives a Proxmox landing zone its API access, replacing what it had, once the API has
// answered with the token. Provider admins only.
func (s *Service) Set(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in NewAccess) (Access, error) {
	if !actor.ProviderAdmin {
		return Access{}, problem.ErrForbidden
	}
	z, err := s.zone(ctx, zoneID)
	if err != nil {
		return Access{}, err
	}
	if z.Provider != Provider {
		return Access{}, problem.Invalid("endpoint", "provider", "landing zone %s is for %s, not Proxmox: it has no Proxmox API access", z.Name, z.Provider)
	}
	c, err := parse(in)
	if err != nil {
		return Access{}, err
	}
	// Asked before the transaction: a slow or absent API must not hold a connection.
	checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	version, err := c.Version(checkCtx)
	if err != nil {
		return Access{}, err
	}
	keyID, sealed, err := s.keys.Seal([]byte(c.Secret), zoneID[:])
	if err != nil {
		return Access{}, fmt.Errorf("seal the token's secret: %w", err)
	}
	var out Access
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := q.SetZoneProxmoxAccess(ctx, dbgen.SetZoneProxmoxAccessParams{LandingZoneID: zoneID, Endpoint: c.Endpoint,
			TokenID: c.TokenID, TokenSecret: sealed, SecretKeyID: keyID, CaCert: c.CACert, ServerVersion: version,
			SetBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		out = view(row)
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.proxmox_access.set", TargetType: "landing_zone", TargetID: zoneID.String(),
			Diff: map[string]any{"endpoint": c.Endpoint, "token_id": c.TokenID, "version": version, "ca_cert": c.CACert != ""}})
	})
	if err != nil {
		return Access{}, fmt.Errorf("set the Proxmox API access: %w", err)
	}
	return out, nil
}

// parse checks what a provider admin gave, naming each field that is wrong.
func parse(in NewAccess) (Credentials, error) {
	c := Credentials{Endpoint: strings.TrimRight(strings.TrimSpace(in.Endpoint), "/"), TokenID: strings.TrimSpace(in.TokenID),
		Secret: strings.TrimSpace(in.Secret), CACert: strings.TrimSpace(in.CACert)}
	v := &problem.ValidationError{}
	if !HTTPS(c.Endpoint) {
		v.Add("endpoint", "https", EndpointRule)
	} else if u, _ := url.Parse(c.Endpoint); u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		// The provider adds /api2/json itself: a path here would be asked twice.
		v.Add("endpoint", "https", "must be the Proxmox API's address alone, such as https://pve.example:8006: no path, query or fragment")
	}
	if !TokenID.MatchString(c.TokenID) {
		v.Add("token_id", "pattern", TokenIDRule)
	}
	switch {
	case c.Secret == "":
		v.Add("secret", "required", "give the API token's secret")
	case len(c.Secret) > 200 || strings.ContainsAny(c.Secret, " \t\r\n="):
		v.Add("secret", "pattern", "must be the API token's secret as Proxmox shows it once: at most 200 characters, no spaces and no =")
	}
	if c.CACert != "" {
		if _, err := Roots(c.CACert); err != nil {
			v.Add("ca_cert", "pem", "%s", err)
		}
	}
	return c, v.Err()
}

// Get returns the landing zone's API access, or nil when it has none. Provider admins only.
func (s *Service) Get(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (*Access, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	if _, err := s.zone(ctx, zoneID); err != nil {
		return nil, err
	}
	row, err := db.Queries(s.pool).GetZoneProxmoxAccess(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := view(row)
	return &a, nil
}

// Recheck asks the API again with the kept token and records what it said. An API that no
// longer answers keeps its last check and the error says why.
func (s *Service) Recheck(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (Access, error) {
	if !actor.ProviderAdmin {
		return Access{}, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	before, err := q.GetZoneProxmoxAccess(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Access{}, problem.ErrNotFound
	}
	if err != nil {
		return Access{}, err
	}
	c, err := credentials(s.keys, before)
	if err != nil {
		return Access{}, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	version, err := c.Version(checkCtx)
	if err != nil {
		return Access{}, err
	}
	// Recorded only on the access it checked: one set or removed meanwhile is not this one.
	row, err := q.CheckedZoneProxmoxAccess(ctx, dbgen.CheckedZoneProxmoxAccessParams{LandingZoneID: zoneID, ServerVersion: version,
		UpdatedAt: before.UpdatedAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return Access{}, problem.Invalid("endpoint", "current", "the API access was replaced or forgotten while it was checked: check again")
	}
	if err != nil {
		return Access{}, err
	}
	return view(row), nil
}

// Remove forgets the landing zone's API access, while the zone is a draft or retired: a
// published zone's deployments are changed and destroyed with it.
func (s *Service) Remove(ctx context.Context, actor access.Principal, zoneID uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	z, err := s.zone(ctx, zoneID)
	if err != nil {
		return err
	}
	if lifecycle.ZoneStatus(z.Status) == lifecycle.ZonePublished {
		return problem.Invalid("endpoint", "published", "landing zone %s is published: its deployments need the API access; replace the token instead, or retire the zone first", z.Name)
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.RemoveZoneProxmoxAccess(ctx, zoneID)
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.proxmox_access.remove", TargetType: "landing_zone", TargetID: zoneID.String()})
	})
}

func (s *Service) zone(ctx context.Context, id uuid.UUID) (dbgen.LandingZone, error) {
	z, err := db.Queries(s.pool).GetLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return z, problem.ErrNotFound
	}
	return z, err
}

func view(r dbgen.ZoneProxmoxAccess) Access {
	return Access{LandingZoneID: r.LandingZoneID, Endpoint: r.Endpoint, TokenID: r.TokenID, Secret: "set", CACert: r.CaCert,
		Version: r.ServerVersion, CheckedAt: r.CheckedAt, UpdatedAt: r.UpdatedAt}
}

// ErrNoAccess is what a deployment that needs its landing zone's Proxmox API access gets when
// the zone has none.
var ErrNoAccess = errors.New("no Proxmox API access")

// NoAccess is ErrNoAccess for a zone (none: the environment has no zone), in words a person
// acts on.
type NoAccess struct{ Zone string }

func (e NoAccess) Error() string {
	if e.Zone == "" {
		return "the environment has no landing zone, and so no Proxmox API access: Proxmox components deploy into environments of a Proxmox landing zone"
	}
	return fmt.Sprintf("landing zone %s has no Proxmox API access: a provider admin sets it on the zone's page", e.Zone)
}

func (e NoAccess) Unwrap() error { return ErrNoAccess }

// Open returns the credentials of a landing zone's API access, for the engine only.
func Open(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring, zoneID uuid.UUID) (Credentials, error) {
	row, err := q.GetZoneProxmoxAccess(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		z, err := q.GetLandingZone(ctx, zoneID)
		if err != nil {
			return Credentials{}, err
		}
		return Credentials{}, NoAccess{Zone: z.Name}
	}
	if err != nil {
		return Credentials{}, err
	}
	return credentials(keys, row)
}

func credentials(keys *secrets.Keyring, row dbgen.ZoneProxmoxAccess) (Credentials, error) {
	secret, err := keys.Open(row.SecretKeyID, row.TokenSecret, row.LandingZoneID[:])
	if err != nil {
		return Credentials{}, fmt.Errorf("open the Proxmox API token's secret: %w", err)
	}
	return Credentials{Endpoint: row.Endpoint, TokenID: row.TokenID, Secret: string(secret), CACert: row.CaCert}, nil
}

// Has reports whether a landing zone has its Proxmox API access.
func Has(ctx context.Context, q *dbgen.Queries, zoneID uuid.UUID) (bool, error) {
	return q.ZoneHasProxmoxAccess(ctx, zoneID)
}

// NoZoneWithAccess is why a Proxmox component cannot be checked with the engine yet.
const NoZoneWithAccess = "no landing zone has Proxmox API access yet: set a Proxmox zone's access first, " +
	"on the zone's page under Landing zones (its Proxmox API access, /landing-zones/{id}/proxmox-access)"

// Zone is a Proxmox landing zone that has its API access.
type Zone struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// Zones lists the Proxmox landing zones that have their API access, by name.
func Zones(ctx context.Context, q *dbgen.Queries) ([]Zone, error) {
	rows, err := q.ProxmoxZonesWithAccess(ctx)
	if err != nil {
		return nil, fmt.Errorf("Proxmox zones with API access: %w", err)
	}
	out := make([]Zone, len(rows))
	for i, r := range rows {
		out[i] = Zone{ID: r.ID, Name: r.Name}
	}
	return out, nil
}
