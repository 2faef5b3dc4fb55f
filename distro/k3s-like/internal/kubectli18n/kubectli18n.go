package kubectli18n

import (
	"os"
	"path/filepath"
	"slices"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	// An error means an i18n.T ran first (an import of main initialized
	// before this package): upstream's loader stays, which is only slower.
	_ = i18n.SetLoadTranslationsFunc(func() error {
		if !Wanted(os.Args) {
			return nil
		}
		return i18n.LoadTranslations("kubectl", nil)
	})
}

// Wanted reports whether a process started with args runs kubectl: called
// kubectl (a symlink to the binary), or given the kubectl command.
func Wanted(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == "kubectl" || slices.Contains(args[1:], "kubectl")
}
