package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/go-logr/logr"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// The packaged components: manifests embedded in the binary, templates of
// Values, written to the manifests directory at every start.

//go:embed manifests/*.yaml
var packagedManifests embed.FS

// CoreDNSImage is images.CoreDNSName (TestCoreDNSImageIsTheImagesOne):
// this module does not require the images module, whose CoreDNS
// dependencies would move this module's versions.
const CoreDNSImage = "kubeharness.local/coredns:v1.15.0"

// ourManifestHeader starts every packaged manifest k3s-like writes: a file
// that starts with it is ours to overwrite or, when disabled, remove.
const ourManifestHeader = "# Written by k3s-like at every start; create %s.yaml.skip to keep your own, or disable it with --disable %s.\n"

// Values are the packaged manifests' template variables.
type Values struct {
	ClusterDNS    string   // the kube-dns Service's IP
	ClusterDomain string   // the cluster's DNS domain
	Image         string   // the CoreDNS image
	Upstreams     []string // CoreDNS's forward targets; none by default
}

// PackagedNames are the packaged components, sorted: "coredns".
func PackagedNames() []string {
	entries, _ := packagedManifests.ReadDir("manifests")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// renderPackaged is the packaged manifest name with v, ours (it starts
// with ourManifestHeader).
func renderPackaged(name string, v Values) ([]byte, error) {
	text, err := packagedManifests.ReadFile(path.Join("manifests", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("packaged manifest %s: %w", name, err)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("packaged manifest %s: %w", name, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ourManifestHeader, name, name)
	if err := tmpl.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("packaged manifest %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// CheckFlags checks --disable and --cluster-dns-upstream.
func CheckFlags(disable, dnsUpstreams []string) error {
	valid := PackagedNames()
	for _, n := range disable {
		if !slices.Contains(valid, n) {
			return fmt.Errorf("--disable=%s: not a packaged component; they are %s", n, strings.Join(valid, ", "))
		}
	}
	for _, u := range dnsUpstreams {
		if _, err := netip.ParseAddr(u); err == nil {
			continue
		}
		if _, err := netip.ParseAddrPort(u); err == nil {
			continue
		}
		if filepath.IsAbs(u) {
			continue
		}
		return fmt.Errorf("--cluster-dns-upstream=%s: want an IP address, IP:port, or a resolv.conf path in the CoreDNS container such as /etc/resolv.conf", u)
	}
	return nil
}

// writePackaged writes each packaged manifest into dir (0600, atomically)
// unless NAME.yaml.skip exists; a disabled one is not written, and
// removed if the file there is ours.
func writePackaged(dir string, v Values, disabled []string, log logr.Logger) error {
	for _, name := range PackagedNames() {
		file := filepath.Join(dir, name+".yaml")
		if slices.Contains(disabled, name) {
			if ours(file, name) {
				if err := os.Remove(file); err != nil {
					return fmt.Errorf("disabled %s: %w", name, err)
				}
				log.Info("Removed the packaged manifest of a disabled component", "file", file)
			}
			continue
		}
		if _, err := os.Stat(file + ".skip"); err == nil {
			log.Info("Not writing a packaged manifest: a .skip file exists", "file", file)
			continue
		}
		data, err := renderPackaged(name, v)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(file, data, 0o600); err != nil {
			return fmt.Errorf("packaged manifest %s: %w", name, err)
		}
	}
	return nil
}

// ours reports whether the file holds a packaged manifest k3s-like wrote.
func ours(file, name string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return line == fmt.Sprintf(ourManifestHeader, name, name)
}
