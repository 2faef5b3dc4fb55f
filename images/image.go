package images

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Spec describes a single-layer image.
type Spec struct {
	// Files are the layer's entries (see [Layer]).
	Files []File
	// Entrypoint, Cmd, Env, User and WorkingDir go into the image's config
	// as they are.
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
	// CreatedBy is the history entry's text, saying what made the layer.
	CreatedBy string
}

// Build returns the image spec describes: one layer of spec.Files on an
// empty image, and a config for OS "linux" and the architecture this
// program runs on (runtime.GOARCH), created at the Unix epoch.
func Build(spec Spec) (v1.Image, error) {
	layer, err := Layer(spec.Files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch()}, CreatedBy: spec.CreatedBy},
	})
	if err != nil {
		return nil, fmt.Errorf("image: appending the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: reading the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: epoch()}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = spec.Cmd
	cf.Config.Env = spec.Env
	cf.Config.User = spec.User
	cf.Config.WorkingDir = spec.WorkingDir
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: setting the config: %w", err)
	}
	return img, nil
}

// Write writes img to the file path as a docker-save style tarball tagged
// ref (such as [PauseName]), the format containerd's importer and
// `ctr images import` read. It writes a temporary file in path's directory
// (made if missing) and renames it into place, so a reader never sees half
// an archive; the file is 0644.
func Write(path, ref string, img v1.Image) error {
	return WriteRefs(path, []string{ref}, img)
}

// WriteRefs is [Write] with img tagged under each of refs (at least one).
func WriteRefs(path string, refs []string, img v1.Image) error {
	if len(refs) == 0 {
		return fmt.Errorf("image archive %s: no image name", path)
	}
	tags := map[name.Tag]v1.Image{}
	for _, ref := range refs {
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image name %q: %w", ref, err)
		}
		tags[tag] = img
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("image archive %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("image archive %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	err = tarball.MultiWrite(tags, tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("image archive %s (%s): %w", path, strings.Join(refs, ", "), err)
	}
	return nil
}
