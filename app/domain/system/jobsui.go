package system

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"
)

// JobsUI serves the job queue's own view under prefix, starting its background work (it counts
// the jobs of each state every few seconds) when it is first opened rather than on every node
// from boot: most nodes never show it. ctx bounds that work.
func JobsUI(ctx context.Context, client *river.Client[pgx.Tx], prefix string, log *slog.Logger) (echo.HandlerFunc, error) {
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(client, nil), Logger: log, Prefix: prefix})
	if err != nil {
		return nil, fmt.Errorf("jobs UI: %w", err)
	}
	var start sync.Once
	serve := echo.WrapHandler(ui)
	return func(c echo.Context) error {
		start.Do(func() {
			if err := ui.Start(ctx); err != nil {
				log.Error("start the jobs UI", "err", err)
			}
		})
		return serve(c)
	}, nil
}
