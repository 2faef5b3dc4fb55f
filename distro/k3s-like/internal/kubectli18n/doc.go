// Package kubectli18n loads kubectl's message catalogs only in a process
// that runs kubectl.
//
// Upstream kubectl loads its catalogs at the first i18n.T, and its
// packages call i18n.T in their package variables: every process of a
// binary that links kubectl pays for it at init (a zip of the catalogs
// built and parsed, some 4 MB allocated), also the CNI plugins and the
// runc shim that containerd starts from the same binary several times per
// Pod. Imported by main, this package's init replaces the loader through
// upstream's hook (i18n.SetLoadTranslationsFunc, which must run before any
// i18n.T): the catalogs load when the arguments say kubectl (Wanted), and
// kubectl's own English strings are used otherwise, where nothing shows
// them.
//
// This is the one process-wide upstream setting the binary makes before
// main runs; it concerns kubectl's help text only.
package kubectli18n
