package deployweb

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/pulumix"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// operationURL is the page of an operation, where a form that starts or changes one goes on to.
func operationURL(op deploy.Operation) string { return "/operations/" + op.ID.String() }

// OperationPage shows an operation; while it runs, the page follows it over server-sent events.
func (h *Handlers) OperationPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, err := h.svc.Detail(ctx, actor, id)
	if err != nil {
		return err
	}
	lines, err := h.svc.LogOf(ctx, d, 0)
	if err != nil {
		return err
	}
	dep, err := h.svc.Peek(ctx, actor, d.DeploymentID)
	if err != nil {
		return err
	}
	page := web.Page(c, d.Kind.Label()+" of "+d.Deployment).Under(views.Crumb{Label: "Deployments", URL: "/deployments"},
		views.Crumb{Label: dep.Environment, URL: "/environments/" + dep.EnvironmentID.String()},
		views.Crumb{Label: d.Deployment, URL: "/deployments/" + d.DeploymentID.String()})
	live, err := h.live(c, d, dep, page.CSRF)
	if err != nil {
		return err
	}
	v := OperationView{ID: d.ID.String(), Kind: string(d.Kind), DeploymentID: d.DeploymentID.String(), Deployment: d.Deployment,
		Live: live, LogTruncated: d.LogTruncated}
	var last int64
	for _, l := range lines {
		v.Log = append(v.Log, LogRow{ID: l.ID, Line: l.Line})
		last = l.ID
	}
	if !d.Status.Ended() {
		v.StreamURL = fmt.Sprintf("/operations/%s/stream?after=%d", id, last)
	}
	return web.Render(c, http.StatusOK, OperationPage(page, v))
}

// finding says what a drift check found: nothing, or which resources differ from what the
// stack recorded and in which properties.
func finding(rows []ResourceRow) string {
	var drifted []string
	for _, r := range rows {
		if strings.HasPrefix(r.Type, "pulumi:") || r.Op == "same" {
			continue
		}
		what := r.Name
		if r.Op == "delete" {
			what += " (gone)"
		} else if len(r.Changes) > 0 {
			paths := make([]string, len(r.Changes))
			for i, c := range r.Changes {
				paths[i] = c.Path
			}
			what += " (" + strings.Join(paths, ", ") + ")"
		}
		drifted = append(drifted, what)
	}
	if len(drifted) == 0 {
		return "No drift found: every resource is as the stack recorded it."
	}
	return "Drift found: " + strings.Join(drifted, ", ") + " differ from what the stack recorded."
}

// timingRows words where an operation's time went, part by part, and the whole.
func timingRows(t deploy.Timing) ([]TimingRow, string) {
	rows := make([]TimingRow, len(t.Parts))
	for i, p := range t.Parts {
		r := TimingRow{Kind: p.Kind, Label: p.Name, Took: ms(p.DurationMS)}
		switch p.Kind {
		case deploy.PartQueue:
			r.Label = "In the queue"
		case deploy.PartApproval:
			r.Label = "Waiting for approval"
		case deploy.PartNimbus:
			r.Label = "Nimbus, between steps"
		}
		if t.DurationMS > 0 {
			r.Share = int(p.DurationMS * 100 / t.DurationMS)
		}
		if p.Engine != nil {
			r.Engine = ms(p.Engine.DurationMS)
		}
		rows[i] = r
	}
	return rows, ms(t.DurationMS)
}

// ms words a duration given in milliseconds.
func ms(n float64) string {
	return time.Duration(n * float64(time.Millisecond)).Round(time.Millisecond).String()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// live is the changing part of an operation's page: status, times, progress, resources,
// outputs, steps, and what can be done next; dep is its deployment as it is now.
func (h *Handlers) live(c echo.Context, d deploy.Detail, dep deploy.Deployment, csrf string) (LiveView, error) {
	ctx, actor := web.Ctx(c), web.Actor(c)
	v := LiveView{OperationRow: operationRow(d.Operation), Started: "—", Finished: "—", CSRF: csrf, TenantRunning: d.TenantRunning,
		CanCancel: !d.Status.Ended() && actor.Can(access.ComponentDeploy, dep.TenantID)}
	if d.ExitCode != nil {
		v.ExitCode = strconv.Itoa(*d.ExitCode)
	}
	if d.Version > 0 {
		v.Parameters = views.Values(d.Parameters)
	}
	if d.StartedAt != nil {
		v.Started = stamp(*d.StartedAt)
	}
	if d.FinishedAt != nil {
		v.Finished = stamp(*d.FinishedAt)
	}
	for _, s := range d.Steps {
		row := StepRow{Name: s.Name, Status: s.Status, Error: s.Error, Attempts: s.Attempts}
		if s.StartedAt != nil && s.FinishedAt != nil {
			row.Took = s.FinishedAt.Sub(*s.StartedAt).Round(10 * time.Millisecond).String()
		}
		v.Steps = append(v.Steps, row)
	}
	v.Timing, v.Took = timingRows(d.Timing)
	v.Resources, v.Planned, v.Done = ResourceRows(d.Resources)
	v.Policy = d.Policy
	for i, r := range v.Resources {
		if strings.HasPrefix(r.Type, "pulumi:") {
			continue
		}
		switch {
		case pulumix.ResourceStatus(r.Status) == pulumix.ResourceFailed:
			v.Failed++
		case pulumix.ResourceStatus(r.Status) == pulumix.ResourceRunning && d.Status.Ended():
			// The engine stopped before it said how the step ended.
			v.Interrupted++
			v.Resources[i].Status = "stopped part way"
		}
		switch pulumix.ResourceStatus(r.UndoStatus) {
		case pulumix.ResourceDone:
			v.Undone++
		case pulumix.ResourceFailed:
			v.UndoFailed++
		}
	}
	v.Summary = explain(d, v.Resources)
	if d.Kind == deploy.KindDriftCheck && d.Status == deploy.Succeeded {
		v.Finding = finding(v.Resources)
	}
	v.Diagnostics = DiagnosticsOf(v.Resources)
	v.Cancelling = d.CancelRequested && !d.Status.Ended()
	if d.Status == deploy.AwaitingApproval {
		a, err := h.svc.AwaitedApproval(ctx, actor, d.ID)
		if err != nil {
			return LiveView{}, err
		}
		v.Approval = ApprovalProgress{Approvals: a.Approvals, Required: a.Required}
		if a.ID != uuid.Nil {
			v.Approval.ID = a.ID.String()
		}
	}
	if d.Status == deploy.Succeeded && d.Kind != deploy.KindPreview && d.Kind != deploy.KindDestroy {
		v.Outputs = views.Values(dep.Outputs)
	}
	v.Source = d.Source
	if d.Kind == deploy.KindPreview && d.Status == deploy.Succeeded && dep.Status != deploy.Destroyed && d.Source == nil {
		fresh, err := h.svc.NeverDeployed(ctx, actor, dep.ID)
		if err != nil {
			return LiveView{}, err
		}
		label := "Update"
		switch {
		case fresh:
			label = "Deploy"
		case d.Version > dep.Version:
			label = fmt.Sprintf("Upgrade to v%d", d.Version)
		}
		v.Next = NextAction{Label: label, URL: "/operations/" + d.ID.String() + "/apply"}
	}
	return v, nil
}

// ResourceRows is an operation's resources as its page shows them, with how many real
// resources it plans and how many of them it finished.
func ResourceRows(resources []deploy.Resource) (rows []ResourceRow, planned, done int) {
	for _, r := range resources {
		// The stack and its providers are bookkeeping, not resources anyone waits for: shown
		// only when they have something to say.
		bookkeeping := strings.HasPrefix(r.Type, "pulumi:")
		if bookkeeping && r.Diagnostics == "" && r.Status != pulumix.ResourceFailed {
			continue
		}
		row := ResourceRow{Name: r.Name, Type: r.Type, Op: r.Op, Status: string(r.Status), Diagnostics: r.Diagnostics,
			Undo: undoWords(r.UndoOp, r.UndoStatus), UndoStatus: r.UndoStatus}
		if r.StartedAt != nil && r.FinishedAt != nil {
			row.Took = r.FinishedAt.Sub(*r.StartedAt).Round(10 * time.Millisecond).String()
		}
		for _, ch := range r.Changes {
			row.Changes = append(row.Changes, ChangeRow{Path: ch.Path, Kind: ch.Kind, Old: views.Value(ch.Old), New: views.Value(ch.New)})
		}
		rows = append(rows, row)
		// A row only an undo or a diagnostic made is no step of the operation's own.
		if bookkeeping || r.Op == "" {
			continue
		}
		planned++
		if r.Status == "done" {
			done++
		}
	}
	return rows, planned, done
}

// shortSHA is a commit's id as people read it.
func shortSHA(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
