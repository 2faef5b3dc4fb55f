package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kubeharness/kubeharness/conformance/report"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "results:", err)
		os.Exit(1)
	}
}

// metaFlags collects repeated -meta key=value flags.
type metaFlags map[string]string

func (m metaFlags) String() string { return fmt.Sprint(map[string]string(m)) }

func (m metaFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	m[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

// run is results with its arguments and output streams.
func run(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("results", flag.ContinueOnError)
	flags.SetOutput(stderr)
	jsonPath := flags.String("json", "", "the report `ginkgo --json-report` wrote (required without -skip-regexp)")
	skipPath := flags.String("skip", "", "the skip list: <spec full text><TAB><reason> per line")
	out := flags.String("out", "", "the Markdown file to write (default: stdout)")
	version := flags.String("version", "", "the suite's Kubernetes version, for the title (required without -skip-regexp)")
	command := flags.String("command", "", "the command that ran the suite")
	subject := flags.String("subject", "k3s-like", "what was tested, for the title")
	date := flags.String("date", "", "the run's date (default: the report's start date, UTC)")
	skipRegexp := flags.Bool("skip-regexp", false, "print the --skip regexp of -skip and exit")
	suite := flags.String("suite", report.DefaultSuite, "the suite's description, which ginkgo's --skip also matches")
	meta := metaFlags{}
	flags.Var(meta, "meta", "a machine fact `key=value` for the document (repeatable)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}

	if *skipRegexp {
		if *skipPath == "" {
			return errors.New("-skip-regexp needs -skip FILE")
		}
		skips, err := loadSkips(*skipPath)
		if err != nil {
			return err
		}
		if re := skips.Regexp(*suite); re != "" {
			fmt.Fprintln(stdout, re)
		}
		return nil
	}

	if *jsonPath == "" {
		return errors.New("-json FILE is required")
	}
	if *version == "" {
		return errors.New("-version is required (e.g. v1.37.2)")
	}
	var skips report.SkipList
	if *skipPath != "" {
		var err error
		if skips, err = loadSkips(*skipPath); err != nil {
			return err
		}
	}
	f, err := os.Open(*jsonPath)
	if err != nil {
		return err
	}
	defer f.Close()
	reports, err := report.LoadReports(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *jsonPath, err)
	}
	sum := report.Summarize(reports, skips)
	if sum.Total == 0 && len(sum.SuiteFailures) == 0 {
		return fmt.Errorf("%s: no [Conformance] spec in the report (not e2e.test's, or run with another --focus?)", *jsonPath)
	}
	var buf bytes.Buffer
	if err := sum.Markdown(&buf, report.Meta{
		Subject: *subject,
		Version: *version,
		Date:    *date,
		Command: *command,
		Machine: meta,
	}); err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

// loadSkips reads the skip list at path; errors name the file.
func loadSkips(path string) (report.SkipList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	skips, err := report.LoadSkips(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return skips, nil
}
