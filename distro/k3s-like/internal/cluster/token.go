package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// Token is a join token in k3s's forms: a bare secret, or the full
// K10<sha256 of the cluster's server CA certificate, hex>::<credentials>,
// whose credentials are server:<secret> (the server token), node:<secret>
// (an agent token, --agent-token) or a bootstrap token ID.SECRET (k3s-like
// token create). The server token's secret encrypts the PKI records
// (internal/bootstrap); the hash, when present, pins the CA a joining
// server or agent accepts.
type Token struct {
	Secret string
	CAHash string    // "" for a bare secret
	Kind   TokenKind // "" for a bare secret that is no bootstrap token
}

// TokenKind is what a full token's credentials say it is.
type TokenKind string

// The kinds of token, named as k3s's credentials name them.
const (
	ServerToken    TokenKind = "server"    // K10…::server:SECRET
	AgentToken     TokenKind = "node"      // K10…::node:SECRET: joins agents, never servers
	BootstrapToken TokenKind = "bootstrap" // K10…::ID.SECRET or ID.SECRET: joins agents until it expires
)

// The full token's parts.
const (
	tokenPrefix    = "K10"
	tokenSeparator = "::"
)

// bootstrapTokenPattern is a bootstrap token, ID.SECRET as upstream's.
var bootstrapTokenPattern = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// ParseToken parses a token; its errors never include the token.
func ParseToken(s string) (Token, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, tokenPrefix); ok && strings.Contains(rest, tokenSeparator) {
		hash, creds, _ := strings.Cut(rest, tokenSeparator)
		if len(hash) != sha256.Size*2 || strings.ToLower(hash) != hash {
			return Token{}, errors.New("the token starts like a full token (K10…::…) but its CA hash is not 64 lower-case hex digits")
		}
		if _, err := hex.DecodeString(hash); err != nil {
			return Token{}, errors.New("the token's CA hash is not hex")
		}
		tok := Token{CAHash: hash}
		switch {
		case strings.HasPrefix(creds, string(ServerToken)+":"):
			tok.Kind, tok.Secret = ServerToken, strings.TrimPrefix(creds, string(ServerToken)+":")
		case strings.HasPrefix(creds, string(AgentToken)+":"):
			tok.Kind, tok.Secret = AgentToken, strings.TrimPrefix(creds, string(AgentToken)+":")
		case bootstrapTokenPattern.MatchString(creds):
			tok.Kind, tok.Secret = BootstrapToken, creds
		case creds == "":
			return Token{}, errors.New("the token has no credentials after its CA hash")
		default:
			return Token{}, errors.New("the token's credentials after its CA hash are neither server:SECRET, node:SECRET nor a bootstrap token ID.SECRET ([a-z0-9]{6}.[a-z0-9]{16})")
		}
		if tok.Secret == "" {
			return Token{}, fmt.Errorf("the token has no secret after ::%s:", tok.Kind)
		}
		return tok, nil
	}
	if s == "" {
		return Token{}, errors.New("the token is empty")
	}
	if bootstrapTokenPattern.MatchString(s) {
		return Token{Secret: s, Kind: BootstrapToken}, nil
	}
	return Token{Secret: s}, nil
}

// CAHashOf is the hash a full token pins: sha256 of the server CA
// certificate file's bytes, as k3s hashes its CA bundle.
func CAHashOf(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}

// Full is the token in its full form for the cluster whose server CA is
// caPEM: K10<hash>::server:SECRET for a server token or a bare secret,
// ::node:SECRET for an agent token, ::ID.SECRET for a bootstrap token.
func (t Token) Full(caPEM []byte) string {
	switch t.Kind {
	case BootstrapToken:
		return tokenPrefix + CAHashOf(caPEM) + tokenSeparator + t.Secret
	case AgentToken:
		return tokenPrefix + CAHashOf(caPEM) + tokenSeparator + string(AgentToken) + ":" + t.Secret
	}
	return tokenPrefix + CAHashOf(caPEM) + tokenSeparator + string(ServerToken) + ":" + t.Secret
}

// CheckCA refuses a server CA that does not match the token's hash; a bare
// secret pins nothing.
func (t Token) CheckCA(caPEM []byte) error {
	if t.CAHash == "" {
		return nil
	}
	if got := CAHashOf(caPEM); got != t.CAHash {
		return fmt.Errorf("the cluster CA in the datastore has sha256 %s, not the %s the token pins: refusing to trust it (another cluster's datastore, or a tampered record); nothing was written", got, t.CAHash)
	}
	return nil
}

// NewSecret is a fresh secret: 32 bytes from crypto/rand, hex.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// TokenFile is DATA_DIR/token: the full token a server writes once it has
// the cluster's PKI, 0600, for the operator to give to the other servers.
func TokenFile(dataDir string) string { return filepath.Join(dataDir, "token") }

// ResolveToken finds a token, first of: token (--token), file
// (--token-file), $K3S_LIKE_TOKEN, $K3S_LIKE_TOKEN_FILE, DATA_DIR/token
// (not for dataDir ""). source names where it came from (never the value).
func ResolveToken(token, file, dataDir string, getenv func(string) string) (tok Token, source string, found bool, err error) {
	value, path, what := TokenSource(token, file, dataDir, getenv)
	return readToken(value, path, what)
}

// ResolveAgentToken finds a server's agent token, first of: token
// (--agent-token), file (--agent-token-file), $K3S_LIKE_AGENT_TOKEN,
// $K3S_LIKE_AGENT_TOKEN_FILE; as k3s, nothing else: without one, the
// server token joins agents. A server token or a bootstrap token there is
// an error.
func ResolveAgentToken(token, file string, getenv func(string) string) (tok Token, source string, found bool, err error) {
	value, path, what := sourceOf(token, file, "--agent-token", "K3S_LIKE_AGENT_TOKEN", getenv)
	tok, source, found, err = readToken(value, path, what)
	if err == nil && found && tok.Kind != "" && tok.Kind != AgentToken {
		return Token{}, source, false, fmt.Errorf("%s: a %s token, not an agent token (a bare secret or K10…::node:SECRET)", source, tok.Kind)
	}
	if found {
		tok.Kind = AgentToken
	}
	return tok, source, found, err
}

// readToken reads and parses the token of a source sourceOf found.
func readToken(value, path, what string) (Token, string, bool, error) {
	switch {
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return Token{}, what, false, fmt.Errorf("%s %s: %w", what, path, err)
		}
		t, err := ParseToken(string(b))
		if err != nil {
			return Token{}, what, false, fmt.Errorf("%s %s: %w", what, path, err)
		}
		return t, what + " " + path, true, nil
	case what != "":
		t, err := ParseToken(value)
		if err != nil {
			return Token{}, what, false, fmt.Errorf("%s: %w", what, err)
		}
		return t, what, true, nil
	}
	return Token{}, "", false, nil
}

// TokenSource is where ResolveToken takes the token from: a value (--token,
// $K3S_LIKE_TOKEN) or a file's path (--token-file, $K3S_LIKE_TOKEN_FILE,
// DATA_DIR/token), and what names that source; all "" for none.
func TokenSource(token, file, dataDir string, getenv func(string) string) (value, path, what string) {
	if value, path, what = sourceOf(token, file, "--token", "K3S_LIKE_TOKEN", getenv); what != "" {
		return value, path, what
	}
	if dataDir != "" {
		if _, err := os.Stat(TokenFile(dataDir)); err == nil {
			return "", TokenFile(dataDir), DataDirTokenSource
		}
	}
	return "", "", ""
}

// sourceOf is the first of the flag flag (value token), flag-file (file),
// $env and $env_FILE that is set.
func sourceOf(token, file, flag, env string, getenv func(string) string) (value, path, what string) {
	switch {
	case token != "":
		return token, "", flag
	case file != "":
		return "", file, flag + "-file"
	case getenv(env) != "":
		return getenv(env), "", "$" + env
	case getenv(env+"_FILE") != "":
		return "", getenv(env + "_FILE"), "$" + env + "_FILE"
	}
	return "", "", ""
}

// DataDirTokenSource names DATA_DIR/token as TokenSource's source.
const DataDirTokenSource = "the token file"

// AgentTokenFile is DATA_DIR/agent-token: the full agent token a server
// given one writes (0600), as k3s's server/agent-token.
func AgentTokenFile(dataDir string) string { return filepath.Join(dataDir, "agent-token") }

// WriteAgentTokenFile writes the full agent token to AgentTokenFile as
// WriteTokenFile writes DATA_DIR/token; with full "" it removes the file
// (a server without an agent token).
func WriteAgentTokenFile(dataDir, full string) (changed bool, err error) {
	if full == "" {
		err := os.Remove(AgentTokenFile(dataDir))
		if os.IsNotExist(err) {
			return false, nil
		}
		return err == nil, err
	}
	return writeSecretFile(AgentTokenFile(dataDir), full)
}

// WriteTokenFile writes the full token to DATA_DIR/token (0600), unless it
// already holds it in a regular file of mode 0600; changed is false when a
// regular file there held the token already. Anything else there, a
// symbolic link among them, is replaced (atomicfile.Write), never written
// through or chmodded.
func WriteTokenFile(dataDir, full string) (changed bool, err error) {
	return writeSecretFile(TokenFile(dataDir), full)
}

// writeSecretFile is WriteTokenFile's, for the file at path.
func writeSecretFile(path, full string) (changed bool, err error) {
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
		if have, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(have)) == full {
			if st.Mode().Perm() == 0o600 {
				return false, nil
			}
			return false, atomicfile.Write(path, []byte(full+"\n"), 0o600)
		}
	}
	return true, atomicfile.Write(path, []byte(full+"\n"), 0o600)
}

// JoinCredential is what an agent authenticates with to read the
// server's agent settings and current bootstrap token: an HMAC-SHA256 of
// a fixed label keyed by the secret, sent only over a connection to the
// CA the full token pins. A server keeps it in JoinAuthFile (0600, beside
// DATA_DIR/token, which holds the secret in the clear); it is never
// stored in the datastore nor written by an agent.
func (t Token) JoinCredential() string { return t.credential("k3s-like agent join", "k3s-like-join.") }

// ServerJoinCredential is JoinCredential's counterpart for a joining
// server, with another label: it authenticates as ServerJoinUser, which
// may read only the cluster's sealed PKI.
func (t Token) ServerJoinCredential() string {
	return t.credential("k3s-like server join", "k3s-like-server-join.")
}

func (t Token) credential(label, prefix string) string {
	m := hmac.New(sha256.New, []byte(t.Secret))
	m.Write([]byte(label))
	return prefix + hex.EncodeToString(m.Sum(nil))
}

// JoinAuthFile is the server's apiserver --token-auth-file: the join
// credentials alone, authenticating as JoinUser (the server token's and
// the agent token's) and ServerJoinUser (the server token's only).
func JoinAuthFile(dataDir string) string {
	return filepath.Join(datadir.PKI(dataDir).Dir, "join.csv")
}

// The users the join credentials authenticate as.
const (
	JoinUser       = "k3s-like:agent-join"
	ServerJoinUser = "k3s-like:server-join"
)

// WriteJoinAuthFile writes JoinAuthFile (0600, never through a link) for
// the server token tok and the agent token agent (zero for none): agents
// join with either, as k3s's; servers with tok only.
func WriteJoinAuthFile(dataDir string, tok, agent Token) error {
	lines := tok.JoinCredential() + "," + JoinUser + "," + JoinUser + "\n" +
		tok.ServerJoinCredential() + "," + ServerJoinUser + "," + ServerJoinUser + "\n"
	if agent.Secret != "" && agent.Secret != tok.Secret {
		lines += agent.JoinCredential() + "," + JoinUser + "," + JoinUser + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(JoinAuthFile(dataDir)), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(JoinAuthFile(dataDir), []byte(lines), 0o600)
}

// bootstrapAlphabet is what a bootstrap token's ID and secret are made of.
const bootstrapAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newBootstrapToken is a random bootstrap token, ID.SECRET as upstream's
// ([a-z0-9]{6}.[a-z0-9]{16}, 82 bits of secret): it has nothing to do
// with the cluster token.
func newBootstrapToken() (id, secret string, err error) {
	s, err := randomText(6 + 16)
	if err != nil {
		return "", "", err
	}
	return s[:6], s[6:], nil
}

// randomText is n characters of bootstrapAlphabet from crypto/rand,
// uniformly (bytes of 252 and above are drawn again).
func randomText(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < 252 && len(out) < n {
				out = append(out, bootstrapAlphabet[int(b)%len(bootstrapAlphabet)])
			}
		}
	}
	return string(out), nil
}
