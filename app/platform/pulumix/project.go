package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Nimbus, not the program, decides what the engine takes for the project. The CLI reads the
// project's name, runtime and settings from Pulumi.yaml, and puts a program's own config under
// the project's name: a program named after a provider's package (name: kubernetes) would have
// set that provider's settings, a kubeconfig that runs a command among them. So the working
// directory's Pulumi.yaml is Nimbus's, naming every stack's project "nimbus" with the YAML
// runtime and nothing else, and the program goes beside it as Main.yaml, which the YAML
// language host reads in its place. Whatever the program declares, the CLI never sees it.
const (
	project     = "nimbus"
	projectFile = "name: " + project + "\nruntime: yaml\n"
	programFile = "Main.yaml"
)

// writeProgram writes Nimbus's project file and the program beside it into dir.
func writeProgram(dir, code string) error {
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(projectFile), 0o600); err != nil {
		return fmt.Errorf("write project: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, programFile), []byte(code), 0o600); err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	return nil
}

// legacyProject is the project a stack made before Nimbus named the project had: the program's
// own name, which its URNs and the path of its state carry. "" when the program names none that
// could have been one.
func legacyProject(code string) string {
	var p struct {
		Name string `yaml:"name"`
	}
	if yaml.Unmarshal([]byte(code), &p) != nil || !validProjectName.MatchString(p.Name) || p.Name == "." || p.Name == ".." {
		return ""
	}
	return p.Name
}

// adoptState moves a stack made under another project name into Nimbus's: its checkpoint to
// the key the engine now looks for, every URN of the stack renamed (adoptURNs). It looks for
// the checkpoint under the name the program gives (legacy), then under any other, so that a
// program renamed in a later version still finds its stack. Nothing happens when the stack is
// already Nimbus's or has no state.
func adoptState(ctx context.Context, b Bucket, stack, legacy string) error {
	if ok, err := exists(ctx, b, checkpointKey(project, stack)); ok || err != nil {
		return err
	}
	var found string
	if legacy != "" && legacy != project {
		if ok, _ := exists(ctx, b, checkpointKey(legacy, stack)); ok {
			found = checkpointKey(legacy, stack)
		}
	}
	if found == "" {
		keys, err := b.List(ctx, ".pulumi/stacks/")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if path.Base(k) == stack+".json" && k != checkpointKey(project, stack) {
				found = k
				break
			}
		}
	}
	if found == "" {
		return nil
	}
	old, err := get(ctx, b, found)
	if err != nil {
		return err
	}
	renamed, err := adoptURNs(old, stack)
	if err != nil {
		return fmt.Errorf("rename the project of %s: %w", stack, err)
	}
	if err := b.PutEngine(ctx, checkpointKey(project, stack), bytes.NewReader(renamed), int64(len(renamed))); err != nil {
		return err
	}
	return b.Delete(ctx, found)
}

// adoptURNs renames the project in every URN of stack that a checkpoint, an export or a saved
// plan holds, as strings or as keys, to Nimbus's: urn:pulumi:<stack>::<old>::<type>::<name>
// becomes urn:pulumi:<stack>::nimbus::<type>::<name>, and the stack's own resource, named
// <project>-<stack>, is named anew. The checkpoint's organization/<old>/<stack> follows.
func adoptURNs(doc []byte, stack string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers kept as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(renameIn(v, stack))
}

func renameIn(v any, stack string) any {
	switch x := v.(type) {
	case string:
		return renameURN(x, stack)
	case []any:
		for i, e := range x {
			x[i] = renameIn(e, stack)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[renameURN(k, stack)] = renameIn(e, stack)
		}
		return out
	}
	return v
}

// renameURN is s with the project of stack's URN (or provider reference, a URN and an id) made
// Nimbus's; any other string as it is.
func renameURN(s, stack string) string {
	if org, ok := strings.CutPrefix(s, "organization/"); ok {
		if old, name, ok := strings.Cut(org, "/"); ok && name == stack && old != "" && !strings.Contains(old, "/") {
			return "organization/" + project + "/" + stack
		}
		return s
	}
	prefix := "urn:pulumi:" + stack + "::"
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return s
	}
	old, rest, ok := strings.Cut(rest, "::")
	if !ok || old == project {
		return s
	}
	const root = "pulumi:pulumi:Stack::"
	if name, ok := strings.CutPrefix(rest, root); ok && name == old+"-"+stack {
		rest = root + project + "-" + stack
	}
	return prefix + project + "::" + rest
}
