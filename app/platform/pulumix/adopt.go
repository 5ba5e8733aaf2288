package pulumix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Adopted is a resource made outside a stack that the stack takes over: its type, the logical
// name the program gives it, and the provider's id of it.
type Adopted struct{ Type, Name, ID string }

// URN is the resource's URN in the stack st: a resource of the program at its top level.
func (a Adopted) URN(stack string) string {
	return "urn:pulumi:" + stack + "::" + project + "::" + a.Type + "::" + a.Name
}

// Adopt records a resource the cloud holds in the stack's state, under the URN the program's
// resource of that name has, without changing the resource: the up that follows compares the
// program with it as with a resource it made, and changes it in place where they differ.
//
// Pulumi imports in two ways: the import resource option, written into the program, and the
// import command. Nimbus never edits a component's program (its validator refuses the option
// in one), and the option fails the up unless the program's inputs equal the resource's as
// found, which they seldom do for a machine someone made by hand; the command only writes the
// state, after which the resource is one like any other. It is not protected: the stack's
// deployment destroys it as it would one it made.
func (r *Runner) Adopt(ctx context.Context, st Stack, a Adopted, progress io.Writer) error {
	ws, err := r.open(ctx, st, create)
	if err != nil {
		return err
	}
	defer ws.close()
	// The command writes no engine events: what became of the resource is told by the up.
	stdout, stderr, _, err := r.exec(ctx, ws, nil, nil, "import", a.Type, a.Name, a.ID, "--yes", "--skip-preview",
		"--generate-code=false", "--protect=false", "--stack", ws.stack, "--color", "never", "--non-interactive")
	rep := r.redactor(ws)
	if progress != nil {
		_, _ = io.WriteString(progress, rep.Replace(stdout+stderr))
	}
	if err != nil {
		return failure(ctx, "import", st.Name, err, rep.Replace(strings.TrimSpace(stdout+"\n"+stderr)))
	}
	if ws.mirror != nil {
		return ws.mirror.push(ctx)
	}
	return nil
}

// Forget takes an adopted resource out of the stack's state, leaving it in the cloud: what an
// adoption that failed gives back. A resource the state does not hold is forgotten already.
func (r *Runner) Forget(ctx context.Context, st Stack, a Adopted) error {
	ws, err := r.open(ctx, st, mustExist)
	if errors.Is(err, ErrNoStack) {
		return nil
	} else if err != nil {
		return err
	}
	defer ws.close()
	urn := a.URN(st.Name)
	_, stderr, _, err := r.exec(ctx, ws, nil, nil, "state", "delete", urn, "--force", "--yes", "--stack", ws.stack, "--color", "never")
	if err != nil && !strings.Contains(stderr, "No such resource") {
		return fmt.Errorf("forget %s in %s: %s: %w", urn, st.Name, gist(stderr), err)
	}
	if ws.mirror != nil {
		return ws.mirror.push(ctx)
	}
	return nil
}
