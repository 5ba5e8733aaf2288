package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// imageFamily is what a family name may be. It is a file name in the cloud's folder, so it
// must not be able to name a path outside it.
var imageFamily = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// getImage answers simcloud:index:getImage from images/<family>.
func (p *simcloud) getImage(args resource.PropertyMap) (resource.PropertyMap, error) {
	id, err := currentImage(p.dir, args["family"].StringValue())
	if err != nil {
		return nil, err
	}
	return resource.PropertyMap{"id": resource.NewProperty(id), "family": args["family"]}, nil
}

func imagePath(dir, family string) string { return filepath.Join(dir, "images", family) }

// currentImage is the ID in the family's file, or <family>-v1 while it has none, so programs
// work on a fresh cloud.
func currentImage(dir, family string) (string, error) {
	data, err := os.ReadFile(imagePath(dir, family))
	if errors.Is(err, fs.ErrNotExist) {
		return family + "-v1", nil
	} else if err != nil {
		return "", fmt.Errorf("simcloud: image of %s: %w", family, err)
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", fmt.Errorf("simcloud: image of %s: %s is empty", family, imagePath(dir, family))
	}
	return id, nil
}

// publishImage makes id the family's current image. The file is replaced by a rename, so a
// look-up running at the same time sees the old ID or the new one, never an empty file.
func publishImage(dir, family, id string) error {
	if !imageFamily.MatchString(family) {
		return fmt.Errorf("simcloud: image family %q must match %s", family, imageFamily)
	}
	if id == "" || strings.ContainsAny(id, " \t\r\n") {
		return fmt.Errorf("simcloud: image ID %q must be a non-empty word", id)
	}
	path := imagePath(dir, family)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), family+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// imageCommand runs "image set <family> <id>" against the cloud in dir.
func imageCommand(args []string, dir string) error {
	if len(args) != 3 || args[0] != "set" {
		return errors.New("usage: pulumi-resource-simcloud image set <family> <id>")
	}
	if dir == "" {
		return errors.New("simcloud: no state directory: set the environment variable SIMCLOUD_DIR")
	}
	return publishImage(dir, args[1], args[2])
}
