package components

// For the external tests (package components_test): the upstream messages
// they look for, from upstream_strings.go.
const (
	UpstreamInformerNameTaken     = upstreamInformerNameTaken
	UpstreamKCMInformerNameFailed = upstreamKCMInformerNameFailed
	UpstreamKCMAPIServerUnhealthy = upstreamKCMAPIServerUnhealthy
	UpstreamConfigzTwice          = upstreamConfigzTwice
	UpstreamDuplicateMetrics      = upstreamDuplicateMetrics
)
