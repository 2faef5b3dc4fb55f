// Command pause is the sandbox ("pause") container's program: it holds a
// pod's namespaces open and does nothing else. It blocks until SIGINT or
// SIGTERM, then exits 0, and reaps every child that exits (on SIGCHLD, wait4
// until none is left), so as a pod's PID 1 no zombie stays behind. It is
// also a child subreaper (PR_SET_CHILD_SUBREAPER), so it reaps orphaned
// descendants when it is not PID 1 either.
//
// Built static (CGO_ENABLED=0) by ../cmd/mkimages into the image
// registry.k8s.io/pause:3.10.2.
package main
