package heldlog_test

import (
	"fmt"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/heldlog"
)

// Lines logged before release wait for it, then come out through klog's
// logger as configured by then (here one that prints to stdout).
func Example() {
	logger, release := heldlog.New()
	logger.WithName("harness").Info("Harness phase", "phase", "parse")
	fmt.Println("logging is configured now")
	klog.SetLogger(funcr.New(func(_, args string) { fmt.Println(args) }, funcr.Options{}))
	defer klog.ClearLogger()
	release()
	logger.Info("Running")
	// Output:
	// logging is configured now
	// "level"=0 "msg"="Harness phase" "logger"="harness" "phase"="parse"
	// "level"=0 "msg"="Running"
}
