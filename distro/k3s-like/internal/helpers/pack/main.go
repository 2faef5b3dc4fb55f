// Command pack writes the helpers' archive (helpers.Pack) of the programs
// in a directory: pack -o ARCHIVE DIR. make build runs it through
// hack/helpers.sh.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/helpers"
)

func main() {
	out := flag.String("o", "", "the archive to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pack -o ARCHIVE DIR")
		os.Exit(2)
	}
	var buf bytes.Buffer
	if err := helpers.Pack(&buf, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a, err := helpers.Open(buf.String())
	if err == nil {
		err = atomicfile.Write(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("pack: %s: %d bytes, %d programs, hash %s\n", *out, buf.Len(), len(a.Files()), a.Hash())
}
