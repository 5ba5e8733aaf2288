package pulumix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// Import replaces the stack's state with an export of it (see Export), read from state, for
// when something outside Nimbus changed the stack or its state must be put back. The export's
// secrets must be encrypted with the stack's own passphrase, as an export of the same stack's
// are. The stack is created when it does not exist.
func (r *Runner) Import(ctx context.Context, st Stack, state io.Reader) error {
	var dep apitype.UntypedDeployment
	dec := json.NewDecoder(state)
	if err := dec.Decode(&dep); err != nil {
		return fmt.Errorf("%w: not a stack export: %v", ErrBadState, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: not a stack export: more follows the export", ErrBadState)
	}
	if dep.Version == 0 || len(dep.Deployment) == 0 {
		return fmt.Errorf("%w: not a stack export: no version or deployment", ErrBadState)
	}
	ws, err := r.open(ctx, st, create)
	if err != nil {
		return err
	}
	defer ws.close()
	file := filepath.Join(ws.tmp, "import-"+randomHex(8)+".json")
	data, err := json.Marshal(dep)
	if err == nil {
		// An export made before Nimbus named the project speaks of the program's.
		data, err = adoptURNs(data, st.Name)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return fmt.Errorf("import %s: %w", st.Name, err)
	}
	defer os.Remove(file)
	_, stderr, _, err := r.exec(ctx, ws, nil, nil, "stack", "import", "--stack", st.Name, "--file", file)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("import %s: %w", st.Name, ctx.Err())
		}
		return fmt.Errorf("%w: %s", ErrBadState, gist(stderr))
	}
	if ws.mirror != nil {
		return ws.mirror.push(ctx)
	}
	return nil
}

// ErrBadState means a state given to Import was refused.
var ErrBadState = errors.New("the state was refused")
