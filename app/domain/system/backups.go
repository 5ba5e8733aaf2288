package system

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"nimbus/db"
	"nimbus/db/dbgen"
)

// lastBackups are the newest scheduled backup and the newest that succeeded; either is nil
// when there is none.
func lastBackups(ctx context.Context, pool *pgxpool.Pool) (last, success *dbgen.Backup, err error) {
	q := db.Queries(pool)
	one := func(b dbgen.Backup, err error) (*dbgen.Backup, error) {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return &b, err
	}
	if last, err = one(q.LastBackup(ctx)); err != nil {
		return nil, nil, err
	}
	success, err = one(q.LastSuccessfulBackup(ctx))
	return last, success, err
}

// backupChecks are the status page's lines on scheduled backups.
func backupChecks(ctx context.Context, pool *pgxpool.Pool, schedule string) []Check {
	if schedule == "" {
		return []Check{{Name: "Scheduled backups", Value: "off (NIMBUS_BACKUP_INTERVAL)", Status: "off"}}
	}
	checks := []Check{{Name: "Scheduled backups", Value: schedule, Status: "ok"}}
	last, success, err := lastBackups(ctx, pool)
	switch {
	case err != nil:
		return append(checks, Check{Name: "Last backup", Value: "unknown: " + err.Error(), Status: "err"})
	case last == nil:
		return append(checks, Check{Name: "Last backup", Value: "none yet", Status: "warn"})
	case !last.Succeeded:
		checks = append(checks, Check{Name: "Last backup", Value: fmt.Sprintf("failed at %s: %s", when(last.CreatedAt), last.Error), Status: "err"})
	}
	if success != nil {
		checks = append(checks, Check{Name: "Last successful backup", Status: "ok",
			Value: fmt.Sprintf("%s, %d bytes, %s", when(success.CreatedAt), success.Size, success.Location)})
	}
	return checks
}

func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

var (
	backupSuccessDesc = prometheus.NewDesc("nimbus_backup_last_success_timestamp_seconds",
		"When the newest scheduled backup that succeeded ended, in Unix seconds.", nil, nil)
	backupSizeDesc = prometheus.NewDesc("nimbus_backup_last_success_size_bytes",
		"The size of the newest scheduled backup that succeeded.", nil, nil)
	backupFailedDesc = prometheus.NewDesc("nimbus_backup_last_failed",
		"1 when the newest scheduled backup failed, else 0.", nil, nil)
)

// backupCollector reports the scheduled backups at scrape time; nothing before the first.
type backupCollector struct{ pool *pgxpool.Pool }

func (b *backupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backupSuccessDesc
	ch <- backupSizeDesc
	ch <- backupFailedDesc
}

func (b *backupCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	last, success, err := lastBackups(ctx, b.pool)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(backupSuccessDesc, err)
		return
	}
	if last != nil {
		failed := 0.0
		if !last.Succeeded {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(backupFailedDesc, prometheus.GaugeValue, failed)
	}
	if success != nil {
		ch <- prometheus.MustNewConstMetric(backupSuccessDesc, prometheus.GaugeValue, float64(success.CreatedAt.Unix()))
		ch <- prometheus.MustNewConstMetric(backupSizeDesc, prometheus.GaugeValue, float64(success.Size))
	}
}
