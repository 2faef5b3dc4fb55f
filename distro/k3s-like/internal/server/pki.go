package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// ensurePKI makes the server's PKI: on an external datastore from the
// cluster's shared CAs (fetched, or stored by the first server, with
// --token), otherwise locally. A full token (one that pins the server CA)
// never starts a cluster: on a datastore without one it is an error before
// anything is generated (bootstrap.NoClusterError).
func (o *options) ensurePKI(ctx context.Context, log logr.Logger) error {
	if !o.externalDatastore() {
		if err := o.writePKI(); err != nil {
			return err
		}
		return o.writeEmbeddedToken(log)
	}
	tok, source, found, err := o.serverToken()
	if err != nil {
		return err
	}
	client, err := bootstrap.Dial(o.datastoreEndpoint, o.datastoreCA, o.datastoreCert, o.datastoreKey)
	if err != nil {
		return err
	}
	defer client.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !found {
		// Only the first server may make the token: a cluster that exists
		// needs its own.
		exists, err := bootstrap.Exists(sctx, client)
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("the datastore %s holds a cluster: give this server its token (--token-file with the first server's %s)", o.datastoreEndpoint, cluster.TokenFile("DATA_DIR"))
		}
		secret, err := cluster.NewSecret()
		if err != nil {
			return err
		}
		tok, source = cluster.Token{Secret: secret}, "generated"
	} else if tok.CAHash == "" {
		log.Info(fmt.Sprintf("Warning: the token (%s) is a bare secret: the cluster CA fetched from the datastore is not pinned; use the full token of the first server's DATA_DIR/token", source))
	}
	// With a pin, Sync refuses an empty datastore and any record whose
	// server CA is not the pinned one or whose CA key is not that CA's,
	// before anything is generated or written.
	err = bootstrap.Sync(sctx, bootstrap.Config{
		KV: client, Secret: tok.Secret, Pinned: tok.CAHash,
		Dir: o.layout().Dir, Generate: o.writePKI, Log: log,
	})
	if err != nil {
		return fmt.Errorf("cluster PKI via %s: %w", o.datastoreEndpoint, err)
	}
	return o.writeFullToken(log, tok, source)
}

// writeFullToken checks tok against the cluster CA (when it pins one) and
// writes the full token to DATA_DIR/token (0600), saying so if it changed,
// and the agents' join credential (cluster.WriteJoinAuthFile).
func (o *options) writeFullToken(log logr.Logger, tok cluster.Token, source string) error {
	ca, err := os.ReadFile(o.layout().ServerCA().CertFile)
	if err != nil {
		return err
	}
	if err := tok.CheckCA(ca); err != nil {
		return err
	}
	changed, err := cluster.WriteTokenFile(o.DataDir, tok.Full(ca))
	if err != nil {
		return fmt.Errorf("writing %s: %w", cluster.TokenFile(o.DataDir), err)
	}
	agent, agentSource, found, err := cluster.ResolveAgentToken(o.agentToken, o.agentTokenFile, os.Getenv)
	if err != nil {
		return err
	}
	agentFull := ""
	if found {
		if err := agent.CheckCA(ca); err != nil {
			return fmt.Errorf("%s: %w", agentSource, err)
		}
		if agent.Secret == tok.Secret {
			return fmt.Errorf("%s: the agent token is the server token: give agents a token of their own, or none (then the server token joins them)", agentSource)
		}
		agentFull = agent.Full(ca)
	}
	agentChanged, err := cluster.WriteAgentTokenFile(o.DataDir, agentFull)
	if err != nil {
		return fmt.Errorf("writing %s: %w", cluster.AgentTokenFile(o.DataDir), err)
	}
	if err := cluster.WriteJoinAuthFile(o.DataDir, tok, agent); err != nil {
		return fmt.Errorf("writing %s: %w", cluster.JoinAuthFile(o.DataDir), err)
	}
	if changed {
		log.Info(fmt.Sprintf("The cluster's token (%s) is in %s (0600): give it to the other servers and agents with --token-file", source, cluster.TokenFile(o.DataDir)))
	}
	if agentChanged && found {
		log.Info(fmt.Sprintf("The agent token (%s) is in %s (0600): agents join with it (--token-file), servers never", agentSource, cluster.AgentTokenFile(o.DataDir)))
	}
	return nil
}

// serverToken is ResolveToken's token, refused if it is an agent's: an
// agent token or a bootstrap token never joins or starts a server.
func (o *options) serverToken() (tok cluster.Token, source string, found bool, err error) {
	tok, source, found, err = o.ResolveToken(os.Getenv)
	if err == nil && found && tok.Kind != "" && tok.Kind != cluster.ServerToken {
		return cluster.Token{}, source, false, fmt.Errorf("the token (%s) is an agent's (%s): an agent token or a bootstrap token joins agents only; a server needs the server token, a server's DATA_DIR/token", source, tok.Kind)
	}
	return tok, source, found, err
}

// addAgentTokenFlags adds --agent-token and --agent-token-file, k3s's.
func (o *options) addAgentTokenFlags(f *pflag.FlagSet) {
	f.StringVar(&o.agentToken, "agent-token", "", "A token that joins agents and never servers (k3s's): a bare secret or K10…::node:SECRET; without one the server token joins agents too. Visible to every local user in the process's arguments: prefer --agent-token-file. Also $K3S_LIKE_AGENT_TOKEN")
	f.StringVar(&o.agentTokenFile, "agent-token-file", "", "File holding the agent token (see --agent-token); the server writes its full form to DATA_DIR/agent-token (0600) for agents' --token-file. Every server of a cluster needs the same one. Also $K3S_LIKE_AGENT_TOKEN_FILE")
}

// writeEmbeddedToken writes the cluster's full token to DATA_DIR/token
// (0600) on the embedded datastore, as k3s's server does: the one given
// (--token, --token-file, the environment, a token file already there),
// checked against the cluster CA when it pins one, or a new secret. It is
// what an agent joins with.
func (o *options) writeEmbeddedToken(log logr.Logger) error {
	tok, source, found, err := o.serverToken()
	if err != nil {
		return err
	}
	if !found {
		secret, err := cluster.NewSecret()
		if err != nil {
			return err
		}
		tok, source = cluster.Token{Secret: secret}, "generated"
	}
	return o.writeFullToken(log, tok, source)
}

// writePKI creates the certificates, keys and kubeconfigs on first start and
// reuses them after (components/pki), and writes the admin kubeconfig.
func (o *options) writePKI() error {
	// The admin's kubeconfig is for users, on this host or another: it
	// points at the advertised address, the components' at the local one.
	if _, err := controlplane.EnsurePKI(o.layout(), o.settings(), o.adminKubeconfig()); err != nil {
		return err
	}
	mode, err := parseFileMode(o.kubeconfigMode)
	if err != nil {
		return err
	}
	// Through the file pki just renamed into place, not a link planted
	// there since (cli.NoFollow).
	f, err := os.OpenFile(o.adminKubeconfig(), os.O_RDONLY|cli.NoFollow, 0)
	if err != nil {
		return fmt.Errorf("--write-kubeconfig-mode: %w", err)
	}
	return errors.Join(f.Chmod(mode), f.Close())
}
