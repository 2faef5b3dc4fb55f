package bootstrap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Dial is a client of the external datastore endpoints (comma-separated
// etcd client URLs), with the CA and client certificate files the
// server's --datastore-cafile, --datastore-certfile and --datastore-keyfile
// name (all "" for none); errors name those flags.
func Dial(endpoints, caFile, certFile, keyFile string) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if caFile != "" || certFile != "" {
		var err error
		tlsInfo := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
		if tlsConfig, err = tlsInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("--datastore-cafile/--datastore-certfile/--datastore-keyfile: %w", err)
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(endpoints, ","),
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("--datastore-endpoint=%s: %w", endpoints, err)
	}
	return client, nil
}

// Rotate seals the cluster's PKI record in the datastore again with the
// secret next, in place of old's (`k3s-like token rotate` on an external
// datastore), in one transaction that fails if the record changed since
// it was read. A record that does not open with old is ErrWrongToken and
// left as it is; so is none (found false).
func Rotate(ctx context.Context, kv clientv3.KV, old, next string) (found bool, err error) {
	resp, err := kv.Get(ctx, Key)
	if err != nil {
		return false, fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return false, nil
	}
	files, _, err := open(old, resp.Kvs[0].Value)
	if err != nil {
		return true, err
	}
	if _, err := (Config{KV: kv, Secret: next}).store(ctx, files, resp.Kvs[0].ModRevision); err != nil {
		if errors.Is(err, errRecordChanged) {
			return true, errors.New("the cluster's PKI record changed while it was re-sealed (a server rewrote it): run token rotate again")
		}
		return true, err
	}
	return true, nil
}
