// Package deploy is a server's packaged components, the k3s way:
// manifests embedded in the binary (manifests/*.yaml, templates of
// Values) are written to DATA_DIR/server/manifests at start, and every
// manifest there, the user's too, is applied with server-side apply, and
// again when it changes.
//
//	Config.Add -> the manifests component, once the apiserver is ready:
//	    writePackaged     // unless NAME.yaml.skip; --disable removes ours
//	    deployer.run      // every 15 s (sooner after an error):
//	        sync          // each changed file: decode, apply in order (a kind or
//	                      // namespace of the same file is retried), record what it
//	                      // applied in kube-system/k3s-like-manifest-NAME; delete what
//	                      // a file no longer holds, or a removed file held
//
// It is ready after its first pass; errors, named by file and object,
// are logged once each and never fatal.
package deploy
