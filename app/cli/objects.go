package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"nimbus/app/kernel/objstore"
	"nimbus/app/platform/pulumix"
)

// objects is where Nimbus keeps blobs, and with them, when they are in S3, Pulumi's state.
type objects struct {
	store   objstore.Store
	backend []pulumix.Option // for NewRunner: none keeps the state under the data dir
	where   string           // for the status page
	state   string           // the state backend's URL, for the status page
}

// openObjects opens the S3 bucket when one is configured, else <data-dir>/objects. A bucket that
// cannot be reached fails the start: every deployment would fail later.
func openObjects(ctx context.Context, cfg *config, log *slog.Logger) (*objects, error) {
	if err := cfg.checkS3(); err != nil {
		return nil, err
	}
	if cfg.S3.Endpoint == "" {
		dir, err := objstore.NewDir(filepath.Join(cfg.DataDir, "objects"))
		if err != nil {
			return nil, err
		}
		return &objects{store: dir, where: dir.Root(), state: "file://" + filepath.Join(cfg.DataDir, "state")}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s3, err := objstore.NewS3(ctx, cfg.S3)
	if err != nil {
		return nil, fmt.Errorf("object storage (NIMBUS_S3_ENDPOINT=%s, NIMBUS_S3_BUCKET=%s): %w", cfg.S3.Endpoint, cfg.S3.Bucket, err)
	}
	log.Info("object storage and Pulumi state in S3", "s3", cfg.S3)
	return &objects{
		store:   s3,
		backend: []pulumix.Option{pulumix.WithSharedState(s3)},
		where:   fmt.Sprintf("bucket %s at %s", cfg.S3.Bucket, cfg.S3.Endpoint),
		state:   s3.BackendURL(),
	}, nil
}
