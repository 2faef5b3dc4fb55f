// Package features is the commands about feature gates and served APIs
// (KEP-3920, KEP-4330), clients of a server's status endpoint:
//
//	features       // the plan as kubectl get features shows the Feature objects
//	               // (the CRD's columns through the apiserver's table convertor)
//	features check // per object of manifests: served, or what would serve it
//	               // (package featurecheck)
//	upgrade-plan   // what moving to another emulated version changes
//	               // (package upgradeplan); exit 3 when something does
//
// See docs/features.md.
package features
