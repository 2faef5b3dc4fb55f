// Command machines makes or removes test machines on this host (package
// machines), for scripts:
//
//	machines up -prefix khconf -n 2   # prints each machine: NAME IP NETNS-PATH
//	machines down -prefix khconf      # kills what is left in them, deletes them
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubeharness/kubeharness/distro/k3s-like/test/machines"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "machines:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		return fmt.Errorf("usage: machines up -prefix P -n N | machines down -prefix P")
	}
	fs := flag.NewFlagSet("machines "+args[0], flag.ContinueOnError)
	prefix := fs.String("prefix", "", "the namespaces' prefix (required)")
	n := fs.Int("n", 2, "how many machines (up)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *prefix == "" {
		return fmt.Errorf("-prefix is required")
	}
	if args[0] == "down" {
		return machines.Teardown(*prefix)
	}
	lan, err := machines.New(*prefix, *n)
	if err != nil {
		return err
	}
	for _, m := range lan.Machines {
		fmt.Println(m.Name, m.IP, m.NetnsPath())
	}
	return nil
}
