package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// path is where the resource with id is kept; an ID the provider did not make has no file.
func (p *simcloud) path(k *resourceKind, id string) string {
	if !validID.MatchString(id) {
		return filepath.Join(p.dir, k.dir, "invalid-id-has-no-file")
	}
	return filepath.Join(p.dir, k.dir, id+".json")
}

// write stores outs through a temporary file and a rename, so a reader (or a provider that is
// killed midway) never sees half a file.
func (p *simcloud) write(k *resourceKind, id string, outs resource.PropertyMap) error {
	stored := outs.Mappable()
	stored["id"] = id
	data, err := json.MarshalIndent(stored, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(p.path(k, id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, id+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p.path(k, id))
}

func randomHex() string {
	var b [4]byte
	rand.Read(b[:]) // never fails: crypto/rand aborts the program instead
	return hex.EncodeToString(b[:])
}
