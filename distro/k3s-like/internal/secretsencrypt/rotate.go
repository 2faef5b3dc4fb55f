package secretsencrypt

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
)

// Cluster is what a rotation needs from the running cluster.
type Cluster interface {
	// APIServers counts the kube-apiservers running now.
	APIServers(ctx context.Context) (int, error)
	// WaitLoaded waits until kube-apiserver serves with the config whose
	// file hashes to hash (FileHash).
	WaitLoaded(ctx context.Context, hash string) error
	// RewriteSecrets reads every Secret and writes it back unchanged, so
	// that kube-apiserver stores it again with its active key; it returns
	// how many it rewrote.
	RewriteSecrets(ctx context.Context) (int, error)
}

// TooManyServersError: a rotation with more than one kube-apiserver
// running is refused (each reads its own copy of the config).
type TooManyServersError struct {
	Path       string
	APIServers int
}

func (e *TooManyServersError) Error() string {
	return fmt.Sprintf("secrets-encrypt rotate-keys: %d kube-apiservers are running, and each reads its own %s: a Secret rewritten here with the new key could not be read by the others. Stop the other servers, rotate, copy the file to each server's data dir, then start them", e.APIServers, e.Path)
}

// Rotation is `secrets-encrypt rotate-keys`, k3s's: a new key first (the
// old ones still decrypt), wait until kube-apiserver loaded it, rewrite
// every Secret (now encrypted with the new key), then drop the old keys
// and wait for that config too. Nothing is lost at any step: a key is
// dropped only after every Secret was rewritten without an error.
//
// A rotation that stopped half way leaves a config with more than one
// key; the next Run adds no key and finishes that rotation.
type Rotation struct {
	Path     string // the config, DATA_DIR/cred/encryption-config.json
	Provider string // the new key's provider; "" keeps the active one's
	Cluster  Cluster
	Now      func() time.Time
	Log      logr.Logger
}

// RotationResult is what a Run did.
type RotationResult struct {
	Active   string   // the active key's name after the rotation
	Dropped  []string // the keys removed
	Secrets  int      // the Secrets rewritten
	Finished bool     // it finished a rotation that had stopped half way
}

// Run rotates the key; see Rotation.
func (r Rotation) Run(ctx context.Context) (RotationResult, error) {
	var res RotationResult
	c, err := Load(r.Path)
	if err != nil {
		return res, err
	}
	n, err := r.Cluster.APIServers(ctx)
	if err != nil {
		return res, fmt.Errorf("secrets-encrypt rotate-keys: counting the kube-apiservers: %w", err)
	}
	if n > 1 {
		return res, &TooManyServersError{Path: r.Path, APIServers: n}
	}
	if len(c.Keys()) > 1 {
		res.Finished = true
		r.Log.Info("Finishing the rotation that stopped half way: no new key", "active", c.Active().Name, "keys", len(c.Keys()))
	} else {
		provider := r.Provider
		if provider == "" {
			provider = c.Providers[0].Type
		}
		k, err := NewKey(provider, r.Now())
		if err != nil {
			return res, err
		}
		c = c.withNewKey(provider, k)
		if err := Write(r.Path, c); err != nil {
			return res, err
		}
		r.Log.Info("Added a key, first: new writes use it, the old ones still decrypt", "active", k.Name, "provider", provider)
	}
	if err := r.waitLoaded(ctx); err != nil {
		return res, err
	}
	if res.Secrets, err = r.Cluster.RewriteSecrets(ctx); err != nil {
		return res, fmt.Errorf("secrets-encrypt rotate-keys: rewriting the Secrets with key %s (the old keys stay until every Secret is rewritten: run rotate-keys again): %w", c.Active().Name, err)
	}
	r.Log.Info("Rewrote every Secret with the active key", "secrets", res.Secrets, "active", c.Active().Name)
	for _, k := range c.Keys()[1:] {
		res.Dropped = append(res.Dropped, k.Name)
	}
	if err := Write(r.Path, c.onlyActive()); err != nil {
		return res, err
	}
	res.Active = c.Active().Name
	r.Log.Info("Dropped the old keys", "dropped", res.Dropped)
	return res, r.waitLoaded(ctx)
}

func (r Rotation) waitLoaded(ctx context.Context) error {
	hash, err := FileHash(r.Path)
	if err != nil {
		return err
	}
	r.Log.Info("Waiting for kube-apiserver to load the config (it reads the file about once a minute)", "hash", hash)
	if err := r.Cluster.WaitLoaded(ctx, hash); err != nil {
		return fmt.Errorf("secrets-encrypt rotate-keys: kube-apiserver did not load %s (%s): %w", r.Path, hash, err)
	}
	return nil
}
