// Package images imports the image archives of a node's data dir
// (DATA_DIR/agent/images, k3s's airgap convention) into containerd's CRI
// namespace, pinned and unpacked: what k3s-like's runtime does before it
// is ready, and what the node benchmark does for its node of processes.
package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/platforms"
	"github.com/go-logr/logr"
)

// criNamespace is the containerd namespace the CRI, so the kubelet, sees.
const criNamespace = "k8s.io"

// pinnedLabel keeps an image from the kubelet's image garbage collector
// (containerd's CRI reports it pinned), as k3s labels the airgap images.
const pinnedLabel = "io.cri-containerd.pinned"

// imageArchives returns the image archives in dir, k3s's airgap
// convention: *.tar, *.tar.gz, *.tgz and *.tar.zst, sorted; none if dir
// does not exist.
func imageArchives(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst"} {
			if strings.HasSuffix(name, ext) {
				out = append(out, filepath.Join(dir, name))
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Import imports every archive of dir into containerd's CRI namespace
// through its socket, unpacks each image for the CRI's snapshotter and
// pins it, and returns the images' names; the first archive that fails is
// the error, naming it. No archive (or no dir) imports nothing.
func Import(ctx context.Context, socket, dir, snapshotter string, log logr.Logger) ([]string, error) {
	files, err := imageArchives(dir)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	client, err := containerd.New(socket, containerd.WithDefaultNamespace(criNamespace))
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, criNamespace)
	var all []string
	for _, f := range files {
		names, err := importArchive(ctx, client, f, snapshotter)
		if err != nil {
			return all, fmt.Errorf("images: %s: %w", f, err)
		}
		log.Info("Imported images", "archive", f, "images", names)
		all = append(all, names...)
	}
	return all, nil
}

func importArchive(ctx context.Context, client *containerd.Client, file, snapshotter string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := compression.DecompressStream(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	imgs, err := client.Import(ctx, r, containerd.WithImportPlatform(platforms.Default()), containerd.WithSkipDigestRef(func(string) bool { return true }))
	if err != nil {
		return nil, err
	}
	if len(imgs) == 0 {
		return nil, fmt.Errorf("no image for %s in the archive", platforms.DefaultString())
	}
	var names []string
	for _, img := range imgs {
		img.Labels = setLabel(img.Labels, pinnedLabel, "pinned")
		if _, err := client.ImageService().Update(ctx, img, "labels."+pinnedLabel); err != nil {
			return nil, err
		}
		if err := containerd.NewImageWithPlatform(client, img, platforms.Default()).Unpack(ctx, snapshotter); err != nil {
			return nil, fmt.Errorf("unpacking %s: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}

func setLabel(labels map[string]string, k, v string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[k] = v
	return labels
}
