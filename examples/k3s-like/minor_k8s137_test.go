//go:build !k8s1_36

package main_test

// apiserverStopHangsWithoutDatastore: see minor_k8s136_test.go; fixed
// upstream in 1.37.
const apiserverStopHangsWithoutDatastore = false
