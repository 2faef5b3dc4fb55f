package deploy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// resettable is a static RESTMapper with the Reset the deployer calls.
type resettable struct{ meta.RESTMapper }

func (resettable) Reset() {}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMap(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetUID(k8stypes.UID("uid-" + name))
	u.SetLabels(labels)
	return u
}

// testDeployer is a deployer of an empty manifests directory with fake
// clients holding objs, its records in DATA_DIR.
func testDeployer(t *testing.T, kube *kubefake.Clientset, objs ...runtime.Object) *deployer {
	t.Helper()
	dataDir := t.TempDir()
	require.NoError(t, os.MkdirAll(manifestsDir(dataDir), 0o700))
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	return &deployer{
		dir: manifestsDir(dataDir), records: recordsDir(dataDir), client: kube,
		dyn:    dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"}, objs...),
		mapper: resettable{m}, log: logr.Discard(),
		applied: map[string]string{}, lastErr: map[string]string{},
	}
}

func exists(t *testing.T, d *deployer, name string) bool {
	t.Helper()
	_, err := d.dyn.Resource(configMaps).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestForgedRecordDeletesNothing: a labelled ConfigMap in kube-system that
// lists an object (an older release's record, or a forged one) makes the
// deployer delete nothing; a record of its own under DATA_DIR deletes only
// the objects that carry the file's owner label; the older release's
// records are deleted, once the deployer's user is bound.
func TestForgedRecordDeletesNothing(t *testing.T) {
	victim := `[{"apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"victim"}]`
	kube := kubefake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "k3s-like-manifest-evil", Namespace: "kube-system", Labels: map[string]string{legacyRecordLabel: "true"}},
		Data:       map[string]string{"file": "evil.yaml", "objects": victim},
	})
	d := testDeployer(t, kube,
		configMap("victim", nil),
		configMap("mine", map[string]string{ownerLabel: ownerValue("app.yaml")}),
		configMap("other-file", map[string]string{ownerLabel: ownerValue("other.yaml")}))
	binds := 0
	d.bind = func(context.Context) error { binds++; return nil }
	// app.yaml was removed; its record lists three objects, one its own.
	rec := &manifestRecord{name: recordName("app.yaml"), File: "app.yaml", Objects: []appliedObject{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "mine"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "victim"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "other-file"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "gone"},
	}}
	require.NoError(t, rec.save(d.records))

	ctx := context.Background()
	require.NoError(t, d.sync(ctx))
	assert.False(t, exists(t, d, "mine"), "the removed file's own object is deleted")
	assert.True(t, exists(t, d, "victim"), "an object without the owner label is left")
	assert.True(t, exists(t, d, "other-file"), "another file's object is left")
	_, err := os.Stat(filepath.Join(d.records, rec.name+".json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the removed file's record is deleted")
	assert.Equal(t, 1, binds)
	var cleanups []string
	for _, a := range kube.Actions() {
		if dc, ok := a.(k8stesting.DeleteCollectionAction); ok && a.GetResource().Resource == "configmaps" {
			cleanups = append(cleanups, dc.GetNamespace()+" "+dc.GetListRestrictions().Labels.String())
		}
	}
	assert.Equal(t, []string{"kube-system " + legacyRecordLabel}, cleanups, "the older release's records are deleted, by their label")

	// Again, with nothing to do: the forged record is not read.
	require.NoError(t, d.sync(ctx))
	assert.True(t, exists(t, d, "victim"))
	assert.Equal(t, 1, binds, "bound once")
}

// TestRecordsUnderDataDir: records are 0600 in a 0700 directory; one that
// does not parse, or that names a file whose record is not its own, is
// skipped (deletes nothing).
func TestRecordsUnderDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests-applied")
	rec := &manifestRecord{name: recordName("My_App.yaml"), File: "My_App.yaml", Checksum: "c",
		Objects: []appliedObject{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "a"}}}
	require.NoError(t, rec.save(dir))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	st, err = os.Stat(filepath.Join(dir, rec.name+".json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "k3s-like-manifest-bad.json"), []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k3s-like-manifest-x.json"), []byte(`{"file":"y.yaml","objects":[{"apiVersion":"v1","kind":"ConfigMap","name":"z"}]}`), 0o600))
	got, err := loadRecords(dir, logr.Discard())
	require.NoError(t, err)
	assert.Equal(t, map[string]*manifestRecord{rec.name: rec}, got)

	got, err = loadRecords(filepath.Join(dir, "missing"), logr.Discard())
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestApplyLabelsOwner: every object applied carries its file's owner
// label, its own labels kept; the values of two files differ and fit a
// label value.
func TestApplyLabelsOwner(t *testing.T) {
	d := testDeployer(t, kubefake.NewClientset())
	var sent []byte
	d.dyn.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sent = a.(k8stesting.PatchAction).GetPatch()
		return true, configMap("x", nil), nil
	})
	a, err := d.applyObject(context.Background(), configMap("x", map[string]string{"keep": "me"}), ownerValue("app.yaml"))
	require.NoError(t, err)
	assert.Equal(t, appliedObject{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x"}, a)
	var got unstructured.Unstructured
	require.NoError(t, got.UnmarshalJSON(sent))
	assert.Equal(t, map[string]string{"keep": "me", ownerLabel: ownerValue("app.yaml")}, got.GetLabels())
	assert.NotEqual(t, ownerValue("app.yaml"), ownerValue("other.yaml"))
	assert.Len(t, ownerValue("app.yaml"), 32)
	assert.Equal(t, ownerValue("My_App.yaml"), ownerValue("my-app.yml"), "one record name, one owner")
}
