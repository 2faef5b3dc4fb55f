package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrune: the newest retention snapshots of a prefix stay, the others
// of it go, those of another prefix (another node's, on-demand) stay;
// what is not a snapshot is listed as such.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"etcd-snapshot-a-1", "etcd-snapshot-a-2", "on-demand-a-3", "etcd-snapshot-b-4", "etcd-snapshot-a-5", "etcd-snapshot-a-6"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("not a snapshot"), 0o600))
		at := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(p, at, at))
	}
	deleted, err := Prune(dir, prefix(ScheduledName, "a"), 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"etcd-snapshot-a-1", "etcd-snapshot-a-2"}, deleted)
	entries, err := List(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
		assert.Error(t, e.Err, "%s is no snapshot", e.Name)
	}
	assert.Equal(t, []string{"on-demand-a-3", "etcd-snapshot-b-4", "etcd-snapshot-a-5", "etcd-snapshot-a-6"}, names, "oldest first")
}

// TestDeleteRefusesPaths: a name is a file of the directory, never a path.
func TestDeleteRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "keep")
	require.NoError(t, os.WriteFile(outside, nil, 0o600))
	err := Delete(dir, []string{"../" + filepath.Base(filepath.Dir(outside)) + "/keep", ".."})
	require.Error(t, err)
	assert.FileExists(t, outside)
}

// TestOptionsCheck: the schedule is cron syntax, the retention at least 1.
func TestOptionsCheck(t *testing.T) {
	o := Options{Schedule: DefaultSchedule, Retention: DefaultRetention}
	require.NoError(t, o.Check())
	next := o.schedule.Next(time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC))
	assert.Equal(t, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), next)
	o.Schedule = "every day"
	assert.ErrorContains(t, o.Check(), "--etcd-snapshot-schedule-cron=every day")
	o = Options{Schedule: DefaultSchedule, Retention: 0}
	assert.ErrorContains(t, o.Check(), "--etcd-snapshot-retention=0")
}
