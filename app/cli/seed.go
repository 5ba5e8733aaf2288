package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"nimbus/app/domain/auth"
	"nimbus/db"
	"nimbus/db/seed"
)

// seedData fills an empty database with a large installation's worth of made-up history, to
// try Nimbus, and measure it, at scale.
func seedData(ctx context.Context, args []string, env Env) error {
	fs := flagSet("seed", "Fill an empty database with 100 tenants, 10,000 components, 10,000 deployments, 50,000 operations,\n"+
		"100,000 audit events and 1,000,000 inventory items. Every seeded user (provider@seed.example, admin-N@seed.example and\n"+
		"user-N@seed.example for tenants 1 to 100) signs in with the password read as for \"user create\".", env)
	cfg, err := parseConfig(fs, args, env.Getenv, "data-dir", "database-url", "log-format", "log-level")
	if err != nil {
		return err
	}
	password, generated, err := readPassword(env)
	if err != nil {
		return err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return err
	}
	d, err := openDatabase(ctx, cfg, cfg.logger(env.Stderr), 2)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := db.Migrate(ctx, d.Pool, cfg.logger(io.Discard)); err != nil {
		return err
	}
	var taken bool
	if err := d.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM tenants WHERE NOT system)").Scan(&taken); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if taken {
		return errors.New("seed: the database already has tenants; seed only an empty one")
	}
	start := time.Now()
	if err := seed.Run(ctx, d.Pool, seed.Full, hash); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "seeded the database %s in %s\n", d.Where, time.Since(start).Round(time.Millisecond))
	if generated {
		fmt.Fprintf(env.Stdout, "password of every seeded user: %s\n", password)
	}
	return nil
}
