package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/harness"
)

const (
	manifestsName = "manifests" // the harness component
	// deployManager is the field manager of everything applied.
	deployManager = "k3s-like-deploy"
	// manifestRecordPrefix names a file's record, kube-system/PREFIX+NAME.
	manifestRecordPrefix = "k3s-like-manifest-"
	manifestRecordLabel  = "kubeharness.io/k3s-like-manifest"
	// manifestPoll is how often the directory is read again (k3s polls too).
	manifestPoll = 15 * time.Second
)

// Config is what a server's manifests component needs.
type Config struct {
	DataDir         string // the manifests are in DATA_DIR/server/manifests
	AdminKubeconfig string // what applies them
	Values          Values
	Disabled        []string // --disable
}

func manifestsDir(dataDir string) string { return filepath.Join(dataDir, "server", "manifests") }

// deployer applies the manifests of one directory.
type deployer struct {
	dir    string
	client kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	log    logr.Logger
	// applied is each file's checksum, once it applied without an error.
	applied map[string]string
	// lastErr is each file's last error, logged once.
	lastErr map[string]string
}

// newDeployer is a deployer of dir with the admin kubeconfig's credentials.
func newDeployer(dir, kubeconfig string, log logr.Logger) (*deployer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = deployManager
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
		dir: dir, client: client, dyn: dyn, log: log,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		applied: map[string]string{}, lastErr: map[string]string{},
	}, nil
}

// Add adds the manifests component: once the apiserver is ready
// it writes the packaged manifests, applies the directory, and polls it
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
			d, err := newDeployer(dir, c.AdminKubeconfig, log)
			if err != nil {
				return err
			}
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
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return d.report("", err)
	}
	records, err := d.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: manifestRecordLabel})
	if err != nil {
		return d.report("", fmt.Errorf("listing the manifests' records: %w", err))
	}
	byName := map[string]*manifestRecord{}
	for i := range records.Items {
		r := parseRecord(records.Items[i].Name, records.Items[i].Data)
		byName[r.name] = &r
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
			errs = append(errs, d.report(r.file, err))
			continue
		}
		delete(d.applied, r.file)
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

// manifestRecord is what a file applied: kube-system/NAME's data.
type manifestRecord struct {
	name, file, checksum string
	objects              []appliedObject
}

func parseRecord(name string, data map[string]string) manifestRecord {
	r := manifestRecord{name: name, file: data["file"], checksum: data["checksum"]}
	_ = json.Unmarshal([]byte(data["objects"]), &r.objects) // a bad record deletes nothing
	return r
}

// applyFile applies a file's objects, records them, and deletes what its
// previous record (old, or nil) held and this one does not.
func (d *deployer) applyFile(ctx context.Context, file string, data []byte, checksum string, old *manifestRecord) error {
	if old != nil && old.file != "" && old.file != file {
		return fmt.Errorf("%s: its record %s belongs to %s: rename one", file, old.name, old.file)
	}
	objs, err := decodeManifest(file, data)
	if err != nil {
		return err
	}
	applied, err := d.applyObjects(ctx, file, objs)
	if err != nil {
		return err
	}
	list, err := json.Marshal(applied)
	if err != nil {
		return err
	}
	rec := recordName(file)
	if _, err := d.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Apply(ctx,
		corev1ac.ConfigMap(rec, metav1.NamespaceSystem).
			WithLabels(map[string]string{manifestRecordLabel: "true"}).
			WithData(map[string]string{"file": file, "checksum": checksum, "objects": string(list)}),
		metav1.ApplyOptions{FieldManager: deployManager, Force: true}); err != nil {
		return fmt.Errorf("%s: recording what it applied in kube-system/%s: %w", file, rec, err)
	}
	if old != nil {
		var errs []error
		for _, o := range old.objects {
			if !slices.Contains(applied, o) {
				errs = append(errs, d.delete(ctx, file, o))
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
			a, err := d.applyObject(ctx, objs[i])
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

// applyObject applies obj (namespaced in "default" if it names none) and
// returns what it applied.
func (d *deployer) applyObject(ctx context.Context, obj *unstructured.Unstructured) (appliedObject, error) {
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

// delete deletes one object a file applied; one already gone, or whose
// kind is gone, is no error.
func (d *deployer) delete(ctx context.Context, file string, o appliedObject) error {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return fmt.Errorf("%s: deleting %s: %w", file, o, err)
	}
	m, err := d.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
	if meta.IsNoMatchError(err) {
		d.mapper.Reset()
		if m, err = d.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version); meta.IsNoMatchError(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s: deleting %s: %w", file, o, err)
	}
	var ri dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if o.Namespace != "" {
		ri = d.dyn.Resource(m.Resource).Namespace(o.Namespace)
	}
	policy := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: deleting %s: %w", file, o, err)
	}
	d.log.Info("Deleted an object its manifest no longer holds", "file", file, "object", o.String())
	return nil
}

// remove deletes everything a removed file applied, then its record.
func (d *deployer) remove(ctx context.Context, r *manifestRecord) error {
	var errs []error
	for _, o := range r.objects {
		errs = append(errs, d.delete(ctx, r.file+" (removed)", o))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := d.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s (removed): deleting its record kube-system/%s: %w", r.file, r.name, err)
	}
	d.log.Info("Deleted what a removed manifest applied", "file", filepath.Join(d.dir, r.file), "objects", len(r.objects))
	return nil
}
