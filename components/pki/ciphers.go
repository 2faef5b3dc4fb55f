package pki

// StrongCipherSuites are the TLS 1.2 cipher suites the CIS Kubernetes
// Benchmark accepts (1.2.29 for kube-apiserver, 4.2.12 for the kubelet),
// as k3s sets them: ECDHE key exchange with AES-GCM or ChaCha20-Poly1305
// only, the names the components' --tls-cipher-suites take (TLS 1.3's
// suites are not configurable, and all strong).
func StrongCipherSuites() []string {
	return []string{
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
	}
}
