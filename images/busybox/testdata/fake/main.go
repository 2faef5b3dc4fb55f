// Command fake stands for a busybox binary in the package's tests: it is
// static and prints two applets for --list.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--list" {
		fmt.Println("sh")
		fmt.Println("wget")
		return
	}
	os.Exit(1)
}
