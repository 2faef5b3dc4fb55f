package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the time stamped on every layer entry, the image's creation time
// and its history: a fixed time (the Unix epoch), so the same inputs give the
// same digest.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

// File is one entry of an image's layer.
type File struct {
	// Path is where the entry lives in the image, such as "/bin/sh"; it is
	// cleaned and may not leave the root.
	Path string
	// Mode is the entry's type (fs.ModeDir, fs.ModeSymlink, or none for a
	// regular file) and permission bits, including setuid, setgid and sticky.
	Mode fs.FileMode
	// UID and GID own the entry.
	UID, GID int
	// Data is a regular file's content.
	Data []byte
	// Target is a symlink's target.
	Target string
}

// Layer returns a layer holding files: a gzip-compressed tar with the
// entries sorted by path, every time stamp at the Unix epoch, and each missing
// parent directory added (0755, owned by 0:0). Two entries with one path, a
// path that leaves the root, a symlink without a target or an entry of
// another type (device, pipe, socket) is an error naming the path.
func Layer(files []File) (v1.Layer, error) {
	entries, err := normalize(files)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range entries {
		hdr := &tar.Header{
			Name:    f.Path,
			Mode:    tarMode(f.Mode),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: epoch(),
			Format:  tar.FormatPAX,
		}
		switch {
		case f.Mode.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = f.Target
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %q: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("layer entry %q: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// normalize checks files and returns them with relative cleaned paths
// ("bin/sh"), missing parent directories added, sorted by path.
func normalize(files []File) ([]File, error) {
	byPath := make(map[string]File, len(files))
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if c := path.Clean(f.Path); f.Path == "" || p == "" || c == ".." || strings.HasPrefix(c, "../") {
			return nil, fmt.Errorf("layer entry %q: not a path inside the image", f.Path)
		}
		if _, ok := byPath[p]; ok {
			return nil, fmt.Errorf("layer entry %q: given twice", f.Path)
		}
		switch t := f.Mode.Type(); {
		case t == fs.ModeDir, t == 0:
			if f.Target != "" {
				return nil, fmt.Errorf("layer entry %q: a target (%q) on an entry that is not a symlink", f.Path, f.Target)
			}
			if t == fs.ModeDir && len(f.Data) > 0 {
				return nil, fmt.Errorf("layer entry %q: a directory with data", f.Path)
			}
		case t == fs.ModeSymlink:
			if f.Target == "" {
				return nil, fmt.Errorf("layer entry %q: a symlink without a target", f.Path)
			}
			if len(f.Data) > 0 {
				return nil, fmt.Errorf("layer entry %q: a symlink with data", f.Path)
			}
		default:
			return nil, fmt.Errorf("layer entry %q: unsupported type %v", f.Path, t)
		}
		f.Path = p
		byPath[p] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			d, ok := byPath[dir]
			if !ok {
				byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
				continue
			}
			if !d.Mode.IsDir() {
				return nil, fmt.Errorf("layer entry %q: its parent %q is not a directory", p, dir)
			}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// tarMode is the tar header's mode for m: the permission bits and the
// setuid, setgid and sticky bits in their Unix places.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
