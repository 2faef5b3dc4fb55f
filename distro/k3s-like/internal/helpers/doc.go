// Package helpers holds the node's helper programs, as k3s does: the
// programs containerd runs (its runc shim, the CNI plugins), built small
// and apart from the k3s-like binary (hack/helpers.sh), packed into one
// zstd-compressed tar (Pack) and embedded in the binary under the build
// tag embedhelpers (make build). Unpack writes them into
// DATA_DIR/data/HASH/bin, HASH the archive's content hash: each file is
// checked against the archive's manifest at every start and written again
// if missing or changed; other HASH directories are removed once no
// process runs from them.
//
// Built without the tag (go build ./cmd/k3s-like), Embedded returns nil
// and the node runs the binary itself under the helpers' names.
package helpers
