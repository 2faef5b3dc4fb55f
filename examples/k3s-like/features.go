package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/scoping"
)

func newFeaturesCommand() *cobra.Command {
	var addr, output string
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show the effective feature gates of a running server, and who set them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printFeatures(cmd.OutOrStdout(), addr, output)
		},
	}
	cmd.Flags().StringVar(&addr, "status-address", "127.0.0.1:10290", "The server's --status-address")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	// KEP-3920 feature discovery: `k3s-like features check -f FILE|-` (features_check.go).
	cmd.AddCommand(newFeaturesCheckCommand())
	return cmd
}

func printFeatures(w io.Writer, addr, output string) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("-o %s: use table or json", output)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/features")
	if err != nil {
		return fmt.Errorf("no server answers at --status-address %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/features: %s: %s", addr, resp.Status, body)
	}
	if output == "json" {
		_, err := w.Write(body)
		return err
	}
	var plan scoping.Plan
	if err := json.Unmarshal(body, &plan); err != nil {
		return fmt.Errorf("%s/features: %w", addr, err)
	}
	return plan.WriteTable(w, scoping.AllFeatures)
}
