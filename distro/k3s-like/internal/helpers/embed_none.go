//go:build !embedhelpers

package helpers

// Embedded returns nil: this binary was built without the helpers (go
// build without -tags embedhelpers; make build embeds them).
func Embedded() (*Archive, error) { return nil, nil }
