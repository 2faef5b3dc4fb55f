package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// GoBuild builds the program pkg with the go command goCmd in the module
// directory dir, static (CGO_ENABLED=0), stripped and reproducible
// (-trimpath, no VCS stamp), for linux and this architecture, with the
// extra build flags (such as -modfile or -tags) and the -X settings of
// ldflagsX (such as "main.Version=2.66.1"), and returns the binary. An
// error names pkg, the command and its output.
func GoBuild(ctx context.Context, goCmd, dir, pkg string, flags []string, ldflagsX ...string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "images-gobuild-")
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "program")
	ldflags := "-s -w"
	for _, x := range ldflagsX {
		ldflags += " -X " + x
	}
	args := append([]string{"build", "-trimpath", "-buildvcs=false"}, flags...)
	args = append(args, "-ldflags="+ldflags, "-o", bin, pkg)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s (in %s: %s): %w\n%s", pkg, dir, strings.Join(cmd.Args, " "), err, out)
	}
	if err := CheckStatic(bin); err != nil {
		return nil, fmt.Errorf("building %s: %w", pkg, err)
	}
	return os.ReadFile(bin)
}

// FileSHA256 is the lower-case hex SHA-256 of the file at path, for a
// download checked against a digest an index or a pin gives.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
