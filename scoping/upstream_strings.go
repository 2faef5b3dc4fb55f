package scoping

// Upstream messages this package recognises by text: component-base
// returns them as plain fmt.Errorf strings, with no sentinel error or type
// to match instead. Each constant cites the file of k8s.io/component-base
// that produces it; TestUpstreamStrings reads each of those files at the
// version this module was built with (any minor make test-minors swaps in)
// and provokes the message where that is cheap, so that a bump that
// rewords one fails that test instead of silently changing what this
// package does.
const (
	// upstreamMinCompatibilityInvalid begins the error of an effective
	// version whose min-compatibility version is out of range
	// ("minCompatibilityVersion version %s is not between [%s, %s]";
	// k8s.io/component-base compatibility/version.go, Validate). Scope's
	// checkVersions attributes it to --min-compatibility-version; every
	// other error of Validate to --emulated-version.
	upstreamMinCompatibilityInvalid = "minCompatibilityVersion"

	// upstreamLoggingChanged is part of logsapi's error for a logging
	// configuration applied again with other settings ("the logging
	// configuration should not be changed after setting it once (- old
	// setting, + new setting):\n%s"; k8s.io/component-base
	// logs/api/v1/options.go, apply). ApplyLoggingSettings wraps it with
	// ErrLoggingChanged.
	upstreamLoggingChanged = "should not be changed after setting it once"
)
