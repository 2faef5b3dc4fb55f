// Package daemon is the run `k3s-like server` and `k3s-like agent` share
// once their flags are checked: a harness as a service.
//
//	Daemon.Run(ctx)
//	    take $NOTIFY_SOCKET          // only the daemon speaks to systemd (Type=notify)
//	    SIGINT, SIGTERM end ctx      // and systemd hears STOPPING=1
//	    Prepare(ctx) -> harness      // an agent joins its server here
//	    hold the harness's log lines until the barrier configured logging
//	    barrier passed -> release them, then the command's AfterBarrier hooks
//	    every component ready -> Ready, then READY=1
//	    harness.Run returns
//	    AfterStop, only if the barrier passed (the node's mounts)
//	    an error before the barrier: returned, one plain line;
//	    after it: logged, cli.ExitCode(1) — but a stop that was asked for
//	    whose only errors are components failing while stopping, nothing
//	    abandoned: logged, nil (exit 0)
//
// The embedded kube-apiserver and the kubelet each send their own early
// READY=1 through go-systemd, which reads $NOTIFY_SOCKET; the daemon takes
// it away from them before anything starts, and writes its datagrams
// itself.
package daemon
