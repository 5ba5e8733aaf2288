package deploy

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// GitOptIns are what a deployment lets its component's repository do to it: typically a
// staging deployment previews each pushed branch (a pull request's) with the branch's
// program, and upgrades to each version a tag publishes.
type GitOptIns struct {
	PreviewFromGit   bool `json:"preview_from_git"`
	UpgradeOnPublish bool `json:"upgrade_on_publish"`
}

// SetGitOptIns sets what the component's repository may do to the deployment. Turning one on
// asks what it leads to of the actor: previews the right to preview, upgrades the right to
// upgrade; turning one off asks no more than turning it on did. A stack instance's slot
// upgrades with its instance alone.
func (s *Service) SetGitOptIns(ctx context.Context, actor access.Principal, id uuid.UUID, in GitOptIns) (Deployment, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return Deployment{}, err
	}
	if !actor.Can(access.ComponentPreview, d.TenantID) ||
		(in.UpgradeOnPublish || d.UpgradeOnPublish) && !actor.Can(access.ComponentUpgrade, d.TenantID) {
		return Deployment{}, problem.ErrForbidden
	}
	if in.UpgradeOnPublish && d.StackInstanceID.Valid {
		return Deployment{}, problem.Invalid("upgrade_on_publish", "stack", "%s holds slot %s of a stack instance: it upgrades with the instance", d.Name, slotName(d.Slot))
	}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if err := q.SetDeploymentGitOptIns(ctx, dbgen.SetDeploymentGitOptInsParams{ID: id, PreviewFromGit: in.PreviewFromGit, UpgradeOnPublish: in.UpgradeOnPublish}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.git_opt_ins", TargetType: "deployment", TargetID: id.String(),
			Diff: map[string]any{"name": d.Name, "preview_from_git": in.PreviewFromGit, "upgrade_on_publish": in.UpgradeOnPublish}})
	})
	if err != nil {
		return Deployment{}, fmt.Errorf("set git opt-ins of deployment %s: %w", id, err)
	}
	return s.Get(ctx, actor, id)
}
