package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/harness"
)

const (
	manifestsName = "manifests" // the harness component
	// deployManager is the field manager of everything applied.
	deployManager = "k3s-like-deploy"
	// manifestRecordPrefix starts a file's record name (recordName).
	manifestRecordPrefix = "k3s-like-manifest-"
	// legacyRecordLabel labelled the records an older release kept as
	// ConfigMaps in kube-system: they are no longer read, and deleted.
	legacyRecordLabel = "kubeharness.io/k3s-like-manifest"
	// ownerLabel is on every object the deployer applies; its value is
	// the file's (ownerValue). The deployer deletes only objects that
	// carry its file's value, as k3s's deploy controller prunes only the
	// objects labelled with its Addon's hash.
	ownerLabel = "kubeharness.io/k3s-like-manifest-owner"
	// manifestPoll is how often the directory is read again (k3s polls too).
	manifestPoll = 15 * time.Second
	// deployerBinding binds cluster-admin to pki.DeployerUser.
	deployerBinding = "kubeharness:manifest-deployer"
)

// Config is what a server's manifests component needs.
type Config struct {
	DataDir string // the manifests are in DATA_DIR/server/manifests
	// DeployerKubeconfig is what applies them (pki.DeployerUser's);
	// AdminKubeconfig only binds that user cluster-admin.
	DeployerKubeconfig, AdminKubeconfig string
	Values                              Values
	Disabled                            []string // --disable
}

func manifestsDir(dataDir string) string { return filepath.Join(dataDir, "server", "manifests") }

// recordsDir is where the deployer keeps what each file applied (0700,
// records 0600): under DATA_DIR, never in the cluster, so no object of the
// cluster tells it what to delete.
func recordsDir(dataDir string) string {
	return filepath.Join(dataDir, "server", "manifests-applied")
}

// deployer applies the manifests of one directory.
type deployer struct {
	dir, records string
	client       kubernetes.Interface
	dyn          dynamic.Interface
	mapper       meta.ResettableRESTMapper
	log          logr.Logger
	// bind, until it succeeds, binds the deployer's user its role (nil
	// once done).
	bind func(context.Context) error
	// applied is each file's checksum, once it applied without an error.
	applied map[string]string
	// lastErr is each file's last error, logged once.
	lastErr map[string]string
}

// restConfig is a kubeconfig's client configuration with the deployer's
// user agent.
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = deployManager
	return cfg, nil
}

// newDeployer is a deployer of dir with the deployer kubeconfig's
// credentials, its records in records.
func newDeployer(dir, records, kubeconfig string, log logr.Logger) (*deployer, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &deployer{
		dir: dir, records: records, client: client, dyn: dyn, log: log,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		applied: map[string]string{}, lastErr: map[string]string{},
	}, nil
}

// bindDeployer binds cluster-admin to pki.DeployerUser with the admin's
// kubeconfig: a fixed object, nothing read from the cluster or the
// manifests.
func bindDeployer(adminKubeconfig string) func(context.Context) error {
	return func(ctx context.Context) error {
		cfg, err := restConfig(adminKubeconfig)
		if err != nil {
			return err
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(deployerBinding).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName("cluster-admin")).
			WithSubjects(rbacv1ac.Subject().WithKind("User").WithAPIGroup("rbac.authorization.k8s.io").WithName(pki.DeployerUser)),
			metav1.ApplyOptions{FieldManager: deployManager, Force: true}); err != nil {
			return fmt.Errorf("binding cluster-admin to %s (ClusterRoleBinding %s): %w", pki.DeployerUser, deployerBinding, err)
		}
		return nil
	}
}

// Add adds the manifests component: once the apiserver is ready
// it writes the packaged manifests, binds the deployer's user
// cluster-admin, applies the directory as that user, and polls it
// for changes until stopped. It is ready after its first pass; errors
// (named by file and object) are logged, never fatal.
func (c Config) Add(h *harness.Harness) error {
	synced := make(chan struct{})
	return h.Add(&harness.Func{
		ComponentName: manifestsName,
		RunFunc: func(ctx context.Context) error {
			log := klog.FromContext(ctx)
			dir := manifestsDir(c.DataDir)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			if err := writePackaged(dir, c.Values, c.Disabled, log); err != nil {
				return err
			}
			d, err := newDeployer(dir, recordsDir(c.DataDir), c.DeployerKubeconfig, log)
			if err != nil {
				return err
			}
			d.bind = bindDeployer(c.AdminKubeconfig)
			d.run(ctx, synced)
			return nil
		},
		ReadyFunc: func(ctx context.Context) error {
			select {
			case <-synced:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil, components.APIServerName)
}

// run syncs until ctx ends, every manifestPoll, sooner after an error;
// synced is closed after the first pass.
func (d *deployer) run(ctx context.Context, synced chan<- struct{}) {
	retry := 2 * time.Second
	for first := true; ; first = false {
		wait := manifestPoll
		if err := d.sync(ctx); err != nil && ctx.Err() == nil {
			wait = retry
			retry = min(2*retry, manifestPoll)
		} else {
			retry = 2 * time.Second
		}
		if first {
			close(synced)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// sync applies each manifest of the directory that changed since it last
// applied, and deletes what removed files applied. It returns whether
// anything failed; each failure is logged once.
func (d *deployer) sync(ctx context.Context) error {
	if d.bind != nil {
		if err := d.bind(ctx); err != nil {
			return d.report("", err)
		}
		d.bind = nil
		// An older release's records: never read, deleted once.
		if err := d.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: legacyRecordLabel}); err != nil {
			d.log.Error(err, "Deleting an older release's manifest records; they are not read", "namespace", metav1.NamespaceSystem, "label", legacyRecordLabel)
		}
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return d.report("", err)
	}
	byName, err := loadRecords(d.records, d.log)
	if err != nil {
		return d.report("", err)
	}
	var errs []error
	present := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !isManifest(e.Name()) {
			continue
		}
		name := e.Name()
		rec := recordName(name)
		if present[rec] {
			errs = append(errs, d.report(name, fmt.Errorf("%s: another file of the directory has the same record %s: rename one", name, rec)))
			continue
		}
		present[rec] = true
		data, err := os.ReadFile(filepath.Join(d.dir, name))
		if err != nil {
			errs = append(errs, d.report(name, err))
			continue
		}
		sum := sha256.Sum256(data)
		checksum := hex.EncodeToString(sum[:])
		if d.applied[name] == checksum {
			continue
		}
		if err := d.applyFile(ctx, name, data, checksum, byName[rec]); err != nil {
			errs = append(errs, d.report(name, err))
			continue
		}
		d.applied[name] = checksum
		d.report(name, nil)
	}
	for _, r := range byName {
		if present[r.name] {
			continue
		}
		if err := d.remove(ctx, r); err != nil {
			errs = append(errs, d.report(r.File, err))
			continue
		}
		delete(d.applied, r.File)
	}
	return errors.Join(errs...)
}

// report logs err once per file while it stays the same, and returns it.
func (d *deployer) report(file string, err error) error {
	if err == nil {
		delete(d.lastErr, file)
		return nil
	}
	if d.lastErr[file] != err.Error() {
		d.log.Error(err, "Applying manifests; retrying", "dir", d.dir, "file", file)
		d.lastErr[file] = err.Error()
	}
	return err
}

// manifestRecord is what a file applied: DIR/NAME.json of the records
// directory.
type manifestRecord struct {
	name     string
	File     string          `json:"file"`
	Checksum string          `json:"checksum"`
	Objects  []appliedObject `json:"objects"`
}

// loadRecords reads the records of dir (none if it is missing). A record
// that does not parse, or whose file's record name is not its own, is
// logged and skipped: it deletes nothing.
func loadRecords(dir string, log logr.Logger) (map[string]*manifestRecord, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*manifestRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manifests' records: %w", err)
	}
	out := map[string]*manifestRecord{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if e.IsDir() || !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading the manifests' records: %w", err)
		}
		r := &manifestRecord{name: name}
		if err := json.Unmarshal(data, r); err != nil || recordName(r.File) != name {
			log.Info("Skipping a manifest record that is not one: it deletes nothing", "record", filepath.Join(dir, e.Name()))
			continue
		}
		out[name] = r
	}
	return out, nil
}

// save writes r to dir (0700) as NAME.json (0600).
func (r *manifestRecord) save(dir string) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, r.name+".json"), data, 0o600)
}

// ownerValue is ownerLabel's value on what file applied: a hash of its
// record name (a label value has at most 63 characters).
func ownerValue(file string) string {
	sum := sha256.Sum256([]byte(recordName(file)))
	return hex.EncodeToString(sum[:16])
}

// applyFile applies a file's objects, records them, and deletes what its
// previous record (old, or nil) held and this one does not.
func (d *deployer) applyFile(ctx context.Context, file string, data []byte, checksum string, old *manifestRecord) error {
	if old != nil && old.File != file {
		return fmt.Errorf("%s: its record %s belongs to %s: rename one", file, old.name, old.File)
	}
	objs, err := decodeManifest(file, data)
	if err != nil {
		return err
	}
	applied, err := d.applyObjects(ctx, file, objs)
	if err != nil {
		return err
	}
	rec := &manifestRecord{name: recordName(file), File: file, Checksum: checksum, Objects: applied}
	if err := rec.save(d.records); err != nil {
		return fmt.Errorf("%s: recording what it applied: %w", file, err)
	}
	if old != nil {
		var errs []error
		for _, o := range old.Objects {
			if !slices.Contains(applied, o) {
				errs = append(errs, d.delete(ctx, file, file, o))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	d.log.Info("Applied manifest", "file", filepath.Join(d.dir, file), "objects", len(applied))
	return nil
}

// applyObjects applies objs in order. An object whose kind or namespace is
// not there yet (a CRD, a Namespace of the same file) is tried again, up
// to three more times, the discovery cache reset.
func (d *deployer) applyObjects(ctx context.Context, file string, objs []*unstructured.Unstructured) ([]appliedObject, error) {
	applied := make([]appliedObject, len(objs))
	pending := make([]int, len(objs))
	for i := range objs {
		pending[i] = i
	}
	var errs []error
	for round := 0; len(pending) > 0 && round < 4; round++ {
		if round > 0 {
			d.mapper.Reset()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		var again []int
		errs = errs[:0]
		for _, i := range pending {
			a, err := d.applyObject(ctx, objs[i], ownerValue(file))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", file, a, err))
				if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
					again = append(again, i)
				}
				continue
			}
			applied[i] = a
		}
		if len(again) < len(errs) {
			break // an error that a retry does not fix
		}
		pending = again
	}
	return applied, errors.Join(errs...)
}

// applyObject applies obj (namespaced in "default" if it names none),
// labelled ownerLabel=owner, and returns what it applied.
func (d *deployer) applyObject(ctx context.Context, obj *unstructured.Unstructured, owner string) (appliedObject, error) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ownerLabel] = owner
	obj.SetLabels(labels)
	a := appliedObject{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	gvk := obj.GroupVersionKind()
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		d.mapper.Reset()
		m, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return a, err
	}
	var ri dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if a.Namespace == "" {
			a.Namespace = metav1.NamespaceDefault
			obj.SetNamespace(a.Namespace)
		}
		ri = d.dyn.Resource(m.Resource).Namespace(a.Namespace)
	} else {
		a.Namespace = ""
		obj.SetNamespace("")
	}
	_, err = ri.Apply(ctx, a.Name, obj, metav1.ApplyOptions{FieldManager: deployManager, Force: true})
	return a, err
}

// delete deletes one object file applied, if it carries file's owner
// label (ownerValue): one that does not is left, and logged. One already
// gone, or whose kind is gone, is no error. what names the file in logs
// and errors.
func (d *deployer) delete(ctx context.Context, file, what string, o appliedObject) error {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return fmt.Errorf("%s: deleting %s: %w", what, o, err)
	}
	m, err := d.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
	if meta.IsNoMatchError(err) {
		d.mapper.Reset()
		if m, err = d.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version); meta.IsNoMatchError(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s: deleting %s: %w", what, o, err)
	}
	var ri dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if o.Namespace != "" {
		ri = d.dyn.Resource(m.Resource).Namespace(o.Namespace)
	}
	obj, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: deleting %s: %w", what, o, err)
	}
	if got, want := obj.GetLabels()[ownerLabel], ownerValue(file); got != want {
		d.log.Info("Not deleting an object its manifest no longer holds: it does not carry the manifest's owner label", "file", what, "object", o.String(), "label", ownerLabel, "value", got, "want", want)
		return nil
	}
	policy := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: metav1.NewUIDPreconditions(string(obj.GetUID()))}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("%s: deleting %s: %w", what, o, err)
	}
	d.log.Info("Deleted an object its manifest no longer holds", "file", what, "object", o.String())
	return nil
}

// remove deletes everything a removed file applied, then its record.
func (d *deployer) remove(ctx context.Context, r *manifestRecord) error {
	var errs []error
	for _, o := range r.Objects {
		errs = append(errs, d.delete(ctx, r.File, r.File+" (removed)", o))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(d.records, r.name+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s (removed): deleting its record: %w", r.File, err)
	}
	d.log.Info("Deleted what a removed manifest applied", "file", filepath.Join(d.dir, r.File), "objects", len(r.Objects))
	return nil
}
