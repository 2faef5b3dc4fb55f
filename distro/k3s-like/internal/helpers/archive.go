package helpers

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// manifestName is the archive's first entry, its Manifest in JSON.
const manifestName = "MANIFEST.json"

// File is one program of an archive: a regular file (SHA256 set) or a
// symbolic link to another file of the archive (Link set).
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Link   string `json:"link,omitempty"`
}

// Manifest lists an archive's programs.
type Manifest struct {
	Files []File `json:"files"`
}

// Archive is an opened archive: its manifest read, nothing unpacked.
type Archive struct {
	data     string
	manifest Manifest
	hash     string
}

// Open reads the manifest of data, an archive Pack wrote.
func Open(data string) (*Archive, error) {
	var a *Archive
	err := walk(data, func(h *tar.Header, r io.Reader) (bool, error) {
		if h.Name != manifestName {
			return false, fmt.Errorf("first entry is %q, want %s", h.Name, manifestName)
		}
		raw, err := io.ReadAll(r)
		if err != nil {
			return false, err
		}
		a = &Archive{data: data}
		if err := json.Unmarshal(raw, &a.manifest); err != nil {
			return false, fmt.Errorf("%s: %w", manifestName, err)
		}
		for _, f := range a.manifest.Files {
			if err := checkName(f.Name); err != nil {
				return false, err
			}
			if (f.Link == "") == (f.SHA256 == "") {
				return false, fmt.Errorf("%s: %s: want a sha256 or a link, not both or neither", manifestName, f.Name)
			}
		}
		sum := sha256.Sum256(raw)
		a.hash = hex.EncodeToString(sum[:])
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("helpers: archive: %w", err)
	}
	if a == nil {
		return nil, errors.New("helpers: archive: empty")
	}
	return a, nil
}

// Hash is the archive's content hash: the sha256 of its manifest, which
// holds each file's.
func (a *Archive) Hash() string { return a.hash }

// Files are the archive's programs.
func (a *Archive) Files() []File { return slices.Clone(a.manifest.Files) }

// Bin is where Unpack puts the programs under dataDir: the absolute
// DATA_DIR/data/HASH/bin.
func (a *Archive) Bin(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	return filepath.Join(dataDir, "data", a.hash, "bin")
}

// checkName refuses a name that is not one plain file name.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("bad program name %q", name)
	}
	return nil
}

// newDecoder reads zstd synchronously, in little memory: no goroutines.
func newDecoder(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
}

// walk calls fn with each entry of the archive data until fn returns
// false or the archive ends.
func walk(data string, fn func(*tar.Header, io.Reader) (bool, error)) error {
	dec, err := newDecoder(strings.NewReader(data))
	if err != nil {
		return err
	}
	defer dec.Close()
	tr := tar.NewReader(dec)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		more, err := fn(h, tr)
		if err != nil || !more {
			return err
		}
	}
}

// Pack writes to w the archive of the programs in dir: its regular files
// and its symbolic links to them (nothing else, no subdirectories), in
// name order after the manifest.
func Pack(w io.Writer, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("helpers: pack: %w", err)
	}
	var m Manifest
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if err := checkName(e.Name()); err != nil {
			return fmt.Errorf("helpers: pack %s: %w", p, err)
		}
		switch {
		case e.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("helpers: pack: %w", err)
			}
			if checkName(target) != nil {
				return fmt.Errorf("helpers: pack %s: links to %s, not to a file beside it", p, target)
			}
			m.Files = append(m.Files, File{Name: e.Name(), Link: target})
		case e.Type().IsRegular():
			sum, size, err := fileSHA256(p)
			if err != nil {
				return fmt.Errorf("helpers: pack: %w", err)
			}
			m.Files = append(m.Files, File{Name: e.Name(), SHA256: sum, Size: size})
		default:
			return fmt.Errorf("helpers: pack %s: neither a file nor a link", p)
		}
	}
	for _, f := range m.Files {
		if f.Link != "" && !slices.ContainsFunc(m.Files, func(g File) bool { return g.Name == f.Link && g.Link == "" }) {
			return fmt.Errorf("helpers: pack %s: links to %s, not a file of %s", f.Name, f.Link, dir)
		}
	}
	enc, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	if err := packTo(enc, dir, m); err != nil {
		enc.Close()
		return fmt.Errorf("helpers: pack %s: %w", dir, err)
	}
	return enc.Close()
}

func packTo(w io.Writer, dir string, m Manifest) error {
	tw := tar.NewWriter(w)
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o644, Size: int64(len(raw)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(raw); err != nil {
		return err
	}
	for _, f := range m.Files {
		if f.Link != "" {
			if err := tw.WriteHeader(&tar.Header{Name: f.Name, Linkname: f.Link, Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
				return err
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.Name, Mode: 0o755, Size: f.Size, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		in, err := os.Open(filepath.Join(dir, f.Name))
		if err != nil {
			return err
		}
		_, err = io.CopyN(tw, in, f.Size)
		in.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// fileSHA256 is the hex sha256 and the size of the file at path.
func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
