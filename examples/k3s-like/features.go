package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/scoping"
)

func newFeaturesCommand() *cobra.Command {
	var status statusClient
	var output string
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show the effective feature gates of a running server, and who set them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printFeatures(cmd.OutOrStdout(), &status, output)
		},
	}
	status.addFlags(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	// KEP-3920 feature discovery: `k3s-like features check -f FILE|-` (features_check.go).
	cmd.AddCommand(newFeaturesCheckCommand())
	return cmd
}

func printFeatures(w io.Writer, status *statusClient, output string) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("-o %s: use table or json", output)
	}
	body, err := status.get("/features")
	if err != nil {
		return err
	}
	if output == "json" {
		_, err := w.Write(body)
		return err
	}
	var plan scoping.Plan
	if err := json.Unmarshal(body, &plan); err != nil {
		return fmt.Errorf("%s/features: %w", status.addr, err)
	}
	return plan.WriteTable(w, scoping.AllFeatures)
}
