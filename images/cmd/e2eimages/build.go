package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/images"
)

// build makes p's archive OUT/FILE.tar unless OUT/FILE.tar.inputs says
// it was made of the same files, configuration and names, and returns
// the archive's file name.
func (b *builder) build(ctx context.Context, p plan) (string, error) {
	_, tag := split(p.names[0])
	spec, err := p.recipe(ctx, b, p.variant, tag)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", strings.Join(p.names, ", "), err)
	}
	file := p.file + ".tar"
	path := filepath.Join(b.opts.out, file)
	inputs := specDigest(spec, p.names)
	if old, err := os.ReadFile(path + ".inputs"); err == nil && string(old) == inputs {
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(b.stdout, "%s: %s unchanged\n", path, strings.Join(p.names, ", "))
			return file, nil
		}
	}
	img, err := images.Build(spec)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", strings.Join(p.names, ", "), err)
	}
	if err := images.WriteRefs(path, p.names, img); err != nil {
		return "", err
	}
	if err := writeFileAtomic(path+".inputs", []byte(inputs)); err != nil {
		return "", err
	}
	id, err := img.ConfigName()
	if err != nil {
		return "", err
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b.stdout, "%s: %s id %s, %d files, %d bytes\n", path, strings.Join(p.names, ", "), id, len(spec.Files), info.Size())
	return file, nil
}

// specDigest is a digest of everything the image of spec tagged names is
// made of.
func specDigest(spec images.Spec, names []string) string {
	h := sha256.New()
	w := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	w(strings.Join(names, "\x00"))
	for _, l := range [][]string{spec.Entrypoint, spec.Cmd, spec.Env, {spec.User, spec.WorkingDir, spec.CreatedBy}} {
		w(strings.Join(l, "\x00"))
	}
	for _, f := range spec.Files {
		w(fmt.Sprintf("%s %v %d %d %s", f.Path, f.Mode, f.UID, f.GID, f.Target))
		w(string(f.Data))
	}
	return hex.EncodeToString(h.Sum(nil)) + "\n"
}
