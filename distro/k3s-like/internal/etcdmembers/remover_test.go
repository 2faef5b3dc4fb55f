package etcdmembers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeMembers is an etcd member list.
type fakeMembers struct{ members []*etcdserverpb.Member }

func (f *fakeMembers) MemberList(context.Context, ...clientv3.OpOption) (*clientv3.MemberListResponse, error) {
	return &clientv3.MemberListResponse{Members: f.members}, nil
}

func (f *fakeMembers) MemberRemove(_ context.Context, id uint64) (*clientv3.MemberRemoveResponse, error) {
	for i, m := range f.members {
		if m.ID == id {
			f.members = append(f.members[:i], f.members[i+1:]...)
			break
		}
	}
	return &clientv3.MemberRemoveResponse{}, nil
}

func (f *fakeMembers) names() []string {
	var out []string
	for _, m := range f.members {
		out = append(out, m.Name)
	}
	return out
}

// TestReconcile: the Nodes of members get the finalizer (an agent's
// Node does not); a deleted server Node's member is removed, then its
// finalizer; the last voting member is never removed.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "server-0"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "server-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "agent-0"}},
	)
	ec := &fakeMembers{members: []*etcdserverpb.Member{{ID: 1, Name: "server-0"}, {ID: 2, Name: "server-1"}}}
	list := func(labels.Selector) ([]*corev1.Node, error) {
		nl, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []*corev1.Node
		for i := range nl.Items {
			out = append(out, &nl.Items[i])
		}
		return out, nil
	}
	finalizers := func(name string) []string {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return n.Finalizers
	}
	require.NoError(t, Reconcile(ctx, kube, ec, list))
	assert.Equal(t, []string{Finalizer}, finalizers("server-0"))
	assert.Equal(t, []string{Finalizer}, finalizers("server-1"))
	assert.Empty(t, finalizers("agent-0"), "no member, no finalizer")

	// server-1's Node deleted: held by the finalizer until its member goes.
	markDeleted := func(name string) {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		now := metav1.NewTime(time.Now())
		n.DeletionTimestamp = &now
		_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	markDeleted("server-1")
	require.NoError(t, Reconcile(ctx, kube, ec, list))
	assert.Equal(t, []string{"server-0"}, ec.names())
	assert.Empty(t, finalizers("server-1"))

	// The last voting member stays; its Node goes.
	markDeleted("server-0")
	require.NoError(t, Reconcile(ctx, kube, ec, list))
	assert.Equal(t, []string{"server-0"}, ec.names())
	assert.Empty(t, finalizers("server-0"))
}
