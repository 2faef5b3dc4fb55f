//go:build embedhelpers

package helpers

import (
	_ "embed"
)

// archive is the archive make build packs (hack/helpers.sh), git-ignored;
// a string, so that it is read-only.
//
//go:embed helpers.tar.zst
var archive string

// Embedded opens the archive built into this binary.
func Embedded() (*Archive, error) { return Open(archive) }
