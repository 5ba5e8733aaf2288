// Package migrations holds Nimbus's schema as numbered SQL files, applied in order by db.Migrate.
package migrations

import "embed"

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
