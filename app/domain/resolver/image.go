package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// imageResolver looks an image up in the catalog by operating system, version and
// architecture: from the deployment's own os_family, os_version and architecture parameters
// when it has them, else from the environment's defaults.
type imageResolver struct{}

// imageConfig is an environment's image catalog configuration: the defaults.
type imageConfig struct {
	Provider     string `json:"provider,omitempty"` // the component's provider when empty
	OSFamily     string `json:"os_family"`
	OSVersion    string `json:"os_version"`
	Architecture string `json:"architecture,omitempty"`
}

func (imageResolver) Type() string      { return "image_catalog" }
func (imageResolver) Outputs() []string { return []string{"image_id", "image_name"} }

func (imageResolver) Check(_ context.Context, _ *dbgen.Queries, _ Scope, raw json.RawMessage, v *problem.ValidationError) {
	var c imageConfig
	if err := strictJSON(raw, &c); err != nil {
		v.Add("config", "json", "must be {\"os_family\": …, \"os_version\": …, \"architecture\": optional, \"provider\": optional}: %v", err)
		return
	}
	if c.OSFamily == "" {
		v.Add("config.os_family", "required", "name the operating system deployments get unless they ask, such as debian")
	}
	if c.OSVersion == "" {
		v.Add("config.os_version", "required", "name its version, such as 12")
	}
}

func (imageResolver) Resolve(ctx context.Context, q *dbgen.Queries, c Call) (map[string]any, error) {
	var cfg imageConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		return nil, err
	}
	pick := func(param, fallback string) string {
		if s, ok := c.Params[param].(string); ok && s != "" {
			return s
		}
		return fallback
	}
	provider := cfg.Provider
	if provider == "" {
		provider = c.Deployment.Provider
	}
	family, version, arch := pick("os_family", cfg.OSFamily), pick("os_version", cfg.OSVersion), pick("architecture", cfg.Architecture)
	if arch == "" {
		arch = "amd64"
	}
	img, err := q.FindImage(ctx, dbgen.FindImageParams{Provider: provider, OsFamily: family, OsVersion: version, Architecture: arch})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("the image catalog has no %s %s image for %s on %s", family, version, arch, provider)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"image_id": img.ImageID, "image_name": img.ImageName}, nil
}
