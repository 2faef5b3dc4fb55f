module github.com/kubeharness/kubeharness/examples/k3s-like

go 1.26.0
