package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Simcloud reads the simulated cloud: a folder holding a JSON file per machine
// (machine/<id>.json) whose status an operator changes with the provider's machine command.
type Simcloud struct {
	Dir string
}

// Machines reads every machine's file; one without a status is running, as the provider made
// machines before they had one.
func (c Simcloud) Machines(context.Context) (map[string]Machine, error) {
	files, err := filepath.Glob(filepath.Join(c.Dir, "machine", "*.json"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Machine, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		} else if err != nil {
			return nil, fmt.Errorf("read the simulated cloud: %w", err)
		}
		var m struct{ Status string }
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("read the simulated cloud: %s: %w", filepath.Base(f), err)
		}
		if m.Status == "" {
			m.Status = Running
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = Machine{State: m.Status}
	}
	return out, nil
}
