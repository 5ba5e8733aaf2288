package backup

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/audit"
	"nimbus/app/platform/web"
	"nimbus/db"
)

// Handlers lets provider admins download a backup from the system page.
type Handlers struct {
	in  Installation
	log *slog.Logger
}

// NewHandlers returns the handlers, which back up in.
func NewHandlers(in Installation, log *slog.Logger) *Handlers {
	in.Progress = nil
	return &Handlers{in: in, log: log}
}

// DownloadPath is where the system page's button asks for a backup.
const DownloadPath = "/admin/system/backup"

// Routes registers the download on pages.
func (h *Handlers) Routes(pages *echo.Group) {
	pages.POST(DownloadPath, h.Download, web.RequireProviderAdmin)
}

// Download takes a backup and sends it as a file. The archive holds every row of the database,
// so who took one is recorded: the audit event is in the archive itself too.
func (h *Handlers) Download(c echo.Context) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	err := db.BeginFunc(ctx, h.in.Pool, func(tx pgx.Tx) error {
		return audit.Record(ctx, db.Queries(tx), actor, audit.Event{Action: "system.backup", TargetType: "system", TargetID: "backup"})
	})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nimbus-download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	name := fmt.Sprintf("nimbus-%s.tar.gz", time.Now().UTC().Format("20060102-150405"))
	path := filepath.Join(dir, name)
	m, err := Backup(ctx, h.in, path)
	if err != nil {
		return err
	}
	h.log.Info("backup downloaded", "by", actor.Email, "entries", len(m.Entries), "key_id", m.KeyID)
	return c.Attachment(path, name)
}
