// Package cli holds what `k3s-like server` and `k3s-like agent` share on
// their command line, declared once: Options (the config file, data dir,
// node name, token, --protect-files, logging, stop timeout), with one help
// text each.
//
// The flow of either command before it runs anything:
//
//	cmd := o.NewCommand(short, run)  // the shared flags (AddFlags); the command adds its own
//	o.Load(cmd.Flags(), stderr, os.Getenv) // before run:
//	    ConfigFiles                  // --config, $K3S_LIKE_CONFIG_FILE or /etc/k3s-like/config.yaml, then FILE.d/*.yaml
//	    ApplyConfig                  // k3s's rules: long flag names as keys, key+: appends, the command line wins
//	    CheckFileModes               // the config files and the token file: a warning each, or with --protect-files an error
//	o.Logging.Shorthands()           // -v, --vmodule, --logging-format for every component
//	o.Logging.Redirect()             // --log FILE becomes the process's stderr
//	CheckWritable(o.DataDir)
//
// ResolveToken finds the token (--token, --token-file, $K3S_LIKE_TOKEN,
// $K3S_LIKE_TOKEN_FILE and, for a server, DATA_DIR/token; package
// cluster parses it). Logger is the binary's own logger, configured by the
// harness's barrier. UseVersionFlag and VersionRequested are the root
// command's --version; ExitCode ends the process with a status and no
// message. Every error names the flag (or config key and file) and its
// value, never a secret.
package cli
