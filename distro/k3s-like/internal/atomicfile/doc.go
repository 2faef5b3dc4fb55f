// Package atomicfile writes the files k3s-like keeps (tokens, keys,
// kubeconfigs, configuration) so that a reader or a crash sees the old file
// or the new one, never half of one, and so that a symbolic link planted
// at the path is replaced, never followed: Write.
package atomicfile
