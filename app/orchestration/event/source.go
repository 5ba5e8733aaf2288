package event

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// The kinds of event sources: a webhook others call, a poller of a cloud provider, and Nimbus
// itself.
const (
	Webhook       = "webhook"
	CloudProvider = "cloud_provider"
	Nimbus        = "nimbus"
)

var kinds = []string{Webhook, CloudProvider, Nimbus}

// Source is an event source as people and the API see it: never its secret.
type Source struct {
	ID            uuid.UUID       `json:"id"`
	LandingZoneID uuid.UUID       `json:"landing_zone_id"`
	Name          string          `json:"name"`
	Kind          string          `json:"kind"`
	Config        json.RawMessage `json:"config"`
	Active        bool            `json:"active"`
	CreatedAt     time.Time       `json:"created_at"`
	// URL is where a webhook source takes events.
	URL string `json:"url,omitempty"`
}

// Created is a source just made, or whose secret was just replaced, with the secret: shown
// this once and never again.
type Created struct {
	Source
	Secret string `json:"secret,omitempty"`
}

// NewSource is what a provider admin gives to make a source.
type NewSource struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"`
	Config json.RawMessage `json:"config"`
	// Secret is what a cloud_provider source's poller signs in to its cloud with, such as an
	// API token's secret: sealed, and never shown again. A webhook's is made for it.
	Secret string `json:"secret"`
}

// ConfigCheck adds to v what is wrong with a cloud_provider source's config (fields under
// "config"); the pollers know what each cloud needs.
type ConfigCheck func(in NewSource, v *problem.ValidationError)

var sourceName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Service manages event sources and reads the event log.
type Service struct {
	pool        *pgxpool.Pool
	keys        *secrets.Keyring
	checkConfig ConfigCheck
	// addresses is where subscriptions' URLs may point, as deliveries will dial them.
	addresses egress.Policy
}

// NewService returns the service; keys seals the sources' secrets.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// CheckingConfig has the service check cloud_provider sources' configs with check.
func (s *Service) CheckingConfig(check ConfigCheck) *Service {
	s.checkConfig = check
	return s
}

// AllowingPrivate lets subscriptions' URLs name addresses of the operator's own networks, as
// DeliveryConfig.AllowPrivate lets deliveries reach them.
func (s *Service) AllowingPrivate(allow bool) *Service {
	s.addresses.AllowPrivate = allow
	return s
}

// CreateSource makes a source in a landing zone; provider admins may. A webhook's secret is
// made here and returned this once.
func (s *Service) CreateSource(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in NewSource) (Created, error) {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return Created{}, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	v := &problem.ValidationError{}
	if !sourceName.MatchString(in.Name) {
		v.Add("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter")
	}
	if !slices.Contains(kinds, in.Kind) {
		v.Add("kind", "enum", "must be one of webhook, cloud_provider, nimbus")
	}
	config := in.Config
	if len(config) == 0 || string(config) == "null" {
		config = json.RawMessage("{}")
	}
	if config[0] != '{' || !json.Valid(config) {
		v.Add("config", "type", "must be a JSON object")
	} else if in.Kind == CloudProvider && s.checkConfig != nil {
		in.Config = config
		s.checkConfig(in, v)
	}
	if in.Secret != "" && in.Kind != CloudProvider {
		v.Add("secret", "forbidden", "only a cloud_provider source is given a secret; a webhook's is made for it")
	}
	if err := v.Err(); err != nil {
		return Created{}, err
	}
	id := uuid.New()
	var secret string
	var sealed []byte
	var keyID *string
	switch {
	case in.Kind == Webhook:
		var err error
		if secret, keyID, sealed, err = s.newSecret(id); err != nil {
			return Created{}, err
		}
	case in.Secret != "":
		k, box, err := s.keys.Seal([]byte(in.Secret), id[:])
		if err != nil {
			return Created{}, fmt.Errorf("seal the source's secret: %w", err)
		}
		keyID, sealed = &k, box
	}
	var out Created
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if _, err := q.GetLandingZone(ctx, zoneID); errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		row, err := q.CreateEventSource(ctx, dbgen.CreateEventSourceParams{ID: id, LandingZoneID: zoneID, Name: in.Name, Kind: in.Kind,
			Config: config, Secret: sealed, SecretKeyID: keyID, CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "this landing zone already has an event source named %q", in.Name)
		}
		if err != nil {
			return err
		}
		out = Created{Source: sourceView(row), Secret: secret}
		return audit.Record(ctx, q, actor, audit.Event{Action: "event_source.create", TargetType: "event_source", TargetID: id.String(),
			Diff: map[string]any{"name": in.Name, "kind": in.Kind, "landing_zone": zoneID}})
	})
	if err != nil {
		return Created{}, fmt.Errorf("create event source: %w", err)
	}
	return out, nil
}

// newSecret makes a webhook's secret and seals it to the source.
func (s *Service) newSecret(id uuid.UUID) (string, *string, []byte, error) {
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.RawURLEncoding.EncodeToString(raw)
	keyID, sealed, err := s.keys.Seal([]byte(secret), id[:])
	if err != nil {
		return "", nil, nil, fmt.Errorf("seal the source's secret: %w", err)
	}
	return secret, &keyID, sealed, nil
}

// RotateSecret replaces a webhook source's secret and returns the new one, this once; the old
// one stops working at once.
func (s *Service) RotateSecret(ctx context.Context, actor access.Principal, id uuid.UUID) (Created, error) {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return Created{}, problem.ErrForbidden
	}
	var out Created
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		src, err := q.GetEventSource(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		if src.Kind != Webhook {
			return problem.Invalid("kind", "webhook", "only a webhook source has a secret")
		}
		secret, keyID, sealed, err := s.newSecret(id)
		if err != nil {
			return err
		}
		row, err := q.SetEventSourceSecret(ctx, dbgen.SetEventSourceSecretParams{ID: id, Secret: sealed, SecretKeyID: keyID})
		if err != nil {
			return err
		}
		out = Created{Source: sourceView(row), Secret: secret}
		return audit.Record(ctx, q, actor, audit.Event{Action: "event_source.rotate_secret", TargetType: "event_source", TargetID: id.String(),
			Diff: map[string]any{"name": src.Name}})
	})
	if err != nil {
		return Created{}, fmt.Errorf("replace the secret of event source %s: %w", id, err)
	}
	return out, nil
}

// SetActive turns a source on or off: an inactive source's events are refused.
func (s *Service) SetActive(ctx context.Context, actor access.Principal, id uuid.UUID, active bool) (Source, error) {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return Source{}, problem.ErrForbidden
	}
	var out Source
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := q.SetEventSourceActive(ctx, dbgen.SetEventSourceActiveParams{ID: id, Active: active})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		out = sourceView(row)
		return audit.Record(ctx, q, actor, audit.Event{Action: "event_source.update", TargetType: "event_source", TargetID: id.String(),
			Diff: map[string]any{"name": row.Name, "active": active}})
	})
	if err != nil {
		return Source{}, fmt.Errorf("update event source %s: %w", id, err)
	}
	return out, nil
}

// DeleteSource removes a source; its logged events stay, without it.
func (s *Service) DeleteSource(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		src, err := q.GetEventSource(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := q.DeleteEventSource(ctx, id); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "event_source.delete", TargetType: "event_source", TargetID: id.String(),
			Diff: map[string]any{"name": src.Name}})
	})
}

// Source reads one source; to those who may not manage sources it is not found, as the
// landing zones it belongs to are not.
func (s *Service) Source(ctx context.Context, actor access.Principal, id uuid.UUID) (Source, error) {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return Source{}, problem.ErrNotFound
	}
	row, err := db.Queries(s.pool).GetEventSource(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Source{}, problem.ErrNotFound
	}
	if err != nil {
		return Source{}, fmt.Errorf("get event source %s: %w", id, err)
	}
	return sourceView(row), nil
}

// Sources lists a landing zone's sources; provider admins may.
func (s *Service) Sources(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]Source, error) {
	if !actor.Can(access.EventsSourceManage, uuid.Nil) {
		return nil, problem.ErrForbidden
	}
	rows, err := db.Queries(s.pool).ZoneEventSources(ctx, zoneID)
	if err != nil {
		return nil, fmt.Errorf("list event sources: %w", err)
	}
	out := make([]Source, len(rows))
	for i, r := range rows {
		out[i] = sourceView(r)
	}
	return out, nil
}

func sourceView(r dbgen.EventSource) Source {
	src := Source{ID: r.ID, LandingZoneID: r.LandingZoneID, Name: r.Name, Kind: r.Kind, Config: json.RawMessage(r.Config),
		Active: r.Active, CreatedAt: r.CreatedAt}
	if r.Kind == Webhook {
		src.URL = "/api/v1/events/" + r.ID.String()
	}
	return src
}
