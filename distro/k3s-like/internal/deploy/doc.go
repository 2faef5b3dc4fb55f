// Package deploy is a server's packaged components, the k3s way:
// manifests embedded in the binary (manifests/*.yaml, templates of
// Values) are written to DATA_DIR/server/manifests at start, and every
// manifest there, the user's too, is applied with server-side apply, and
// again when it changes.
//
//	Config.Add -> the manifests component, once the apiserver is ready:
//	    writePackaged     // unless NAME.yaml.skip; --disable removes ours
//	    deployer.run      // every 15 s (sooner after an error):
//	        bindDeployer  // once: cluster-admin for pki.DeployerUser (admin's
//	                      // kubeconfig; everything else is that user's)
//	        sync          // each changed file: decode, apply in order (a kind or
//	                      // namespace of the same file is retried), each object
//	                      // labelled ownerLabel=ownerValue(file); record what it
//	                      // applied in DATA_DIR/server/manifests-applied/NAME.json;
//	                      // delete what a file no longer holds, or a removed file
//	                      // held, if it carries that label
//
// What it deletes comes from its own records under DATA_DIR, never from
// the cluster: whoever can write ConfigMaps in kube-system cannot make it
// delete anything, and an object listed in a record is deleted only if it
// carries the file's owner label (as k3s's deploy controller prunes only
// the objects labelled with its Addon's hash).
//
// It is ready after its first pass; errors, named by file and object,
// are logged once each and never fatal.
package deploy
