package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"nimbus/app/kernel/secrets"
)

// BenchmarkBackupSeeded times nimbus backup of an installation seeded at full size (nimbus
// seed: 10,000 deployments, 50,000 operations, 100,000 audit events), and nimbus restore of its
// archive onto a new data directory, and reports the archive's size.
func BenchmarkBackupSeeded(b *testing.B) {
	bin := nimbusBinary(b)
	data := b.TempDir()
	password := []string{"NIMBUS_USER_PASSWORD=" + adminPassword}
	seeded := time.Now()
	nimbusOut(b, bin, password, "seed", "--data-dir", data)
	b.Logf("seeded in %s", time.Since(seeded).Round(time.Second))
	key, err := os.ReadFile(filepath.Join(data, secrets.KeyFileName))
	if os.IsNotExist(err) {
		// Seeding seals nothing, so it made no key: the backup needs one to name.
		key = []byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
		err = os.WriteFile(filepath.Join(data, secrets.KeyFileName), key, 0o600)
	}
	if err != nil {
		b.Fatal(err)
	}
	var (
		backups, restores time.Duration
		size              int64
	)
	b.ResetTimer()
	for range b.N {
		archive := filepath.Join(b.TempDir(), "seeded.tar.gz")
		start := time.Now()
		nimbusOut(b, bin, nil, "backup", "--to", archive, "--data-dir", data)
		backups += time.Since(start)
		info, err := os.Stat(archive)
		if err != nil {
			b.Fatal(err)
		}
		size = info.Size()

		target := b.TempDir()
		if err := os.WriteFile(filepath.Join(target, secrets.KeyFileName), key, 0o600); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		nimbusOut(b, bin, nil, "restore", "--from", archive, "--data-dir", target)
		restores += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.Logf("seeded installation: backup %.1f s, restore onto a new data directory %.1f s (each starting and stopping its embedded Postgres), archive %.1f MiB",
		backups.Seconds()/n, restores.Seconds()/n, float64(size)/(1<<20))
	b.ReportMetric(backups.Seconds()/n, "backup-s")
	b.ReportMetric(restores.Seconds()/n, "restore-s")
	b.ReportMetric(float64(size)/(1<<20), "archive-MiB")
}
