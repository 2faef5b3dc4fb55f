package bootstrap

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"golang.org/x/crypto/argon2"
)

// The record in the datastore (JSON): the key derivation and its
// parameters, so they can be raised later without breaking the records
// already written, a fresh salt and nonce, and the AES-256-GCM ciphertext
// of the files, with Key as additional data.
type sealed struct {
	// KDF is "argon2id"; a record without it was written before the KDF
	// was recorded, with PBKDF2-SHA256 at 100,000 iterations, and is still
	// read (and re-sealed with argon2id by the server that reads it: see
	// stale).
	KDF     string `json:"kdf,omitempty"`
	Time    uint32 `json:"time,omitempty"`    // argon2id passes
	Memory  uint32 `json:"memory,omitempty"`  // argon2id memory, KiB
	Threads uint8  `json:"threads,omitempty"` // argon2id lanes
	Salt    []byte `json:"salt"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

// The parameters seal writes: RFC 9106's second recommended option for
// argon2id (t=3, 64 MiB, p=4), the one for machines that cannot give 2 GiB
// to a key derivation. open accepts any within the bounds below.
const (
	kdfArgon2id    = "argon2id"
	argonTime      = 3
	argonMemoryKiB = 64 * 1024
	argonThreads   = 4
	keyLen         = 32
	saltLen        = 16
)

// Bounds open checks before it derives anything: a record that asks for
// more (a corrupted one, or one written to make every server exhaust its
// memory) is refused, and so is one weaker than OWASP's floor for argon2id.
// The memory ceiling, 256 MiB (four times what seal writes, room to raise
// it), is what one derivation allocates at most: a 2 GiB host survives it
// at start, when the components are not running yet.
const (
	minTime, maxTime           = 1, 16
	minMemoryKiB, maxMemoryKiB = 19 * 1024, 256 * 1024
	minThreads, maxThreads     = 1, 64
	minSalt, maxSalt           = 16, 64
	legacyIterations           = 100_000
)

// RecordError says which part of the datastore's PKI record is malformed:
// a field of the record, or (once decrypted) one of Files.
//
//	the cluster's PKI record in the datastore is malformed: nonce: 5 bytes, want 12
type RecordError struct {
	Field, Problem string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("the cluster's PKI record in the datastore is malformed: %s: %s", e.Field, e.Problem)
}

// check validates every field of s that a derivation or decryption would
// trust, for an AEAD whose nonce is nonceSize bytes and whose tag is
// overhead bytes.
func (s *sealed) check(nonceSize, overhead int) error {
	bad := func(field, format string, a ...any) error {
		return &RecordError{Field: field, Problem: fmt.Sprintf(format, a...)}
	}
	switch s.KDF {
	case kdfArgon2id:
		if s.Time < minTime || s.Time > maxTime {
			return bad("time", "%d, want %d to %d", s.Time, minTime, maxTime)
		}
		if s.Memory < minMemoryKiB || s.Memory > maxMemoryKiB {
			return bad("memory", "%d KiB, want %d to %d", s.Memory, minMemoryKiB, maxMemoryKiB)
		}
		if s.Threads < minThreads || s.Threads > maxThreads {
			return bad("threads", "%d, want %d to %d", s.Threads, minThreads, maxThreads)
		}
	case "":
		if s.Time != 0 || s.Memory != 0 || s.Threads != 0 {
			return bad("kdf", "missing, but argon2id parameters are set")
		}
	default:
		return bad("kdf", "%q, want %q", s.KDF, kdfArgon2id)
	}
	if len(s.Salt) < minSalt || len(s.Salt) > maxSalt {
		return bad("salt", "%d bytes, want %d to %d", len(s.Salt), minSalt, maxSalt)
	}
	if len(s.Nonce) != nonceSize {
		return bad("nonce", "%d bytes, want %d", len(s.Nonce), nonceSize)
	}
	if len(s.Data) < overhead {
		return bad("data", "%d bytes, shorter than the %d-byte tag", len(s.Data), overhead)
	}
	return nil
}

// stale reports whether s is weaker than what seal writes now: PBKDF2 (a
// record from before the KDF was recorded), or argon2id with fewer passes
// or less memory. Fewer lanes is not weaker: an attacker's cost is memory
// times passes. A server that opens a stale record re-seals it.
func (s *sealed) stale() bool {
	return s.KDF != kdfArgon2id || s.Time < argonTime || s.Memory < argonMemoryKiB
}

// String names the KDF and its parameters, for the log.
func (s *sealed) String() string {
	if s.KDF == kdfArgon2id {
		return fmt.Sprintf("argon2id t=%d m=%dKiB p=%d", s.Time, s.Memory, s.Threads)
	}
	return fmt.Sprintf("PBKDF2-SHA256 %d iterations", legacyIterations)
}

// key derives the AES-256 key from the token with s's KDF.
func (s *sealed) key(token string) ([]byte, error) {
	if s.KDF == kdfArgon2id {
		return argon2.IDKey([]byte(token), s.Salt, s.Time, s.Memory, s.Threads, keyLen), nil
	}
	return pbkdf2.Key(sha256.New, token, s.Salt, legacyIterations, keyLen)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// gcmSizes are AES-GCM's nonce and tag sizes, for check before a key exists.
const gcmNonceSize, gcmTagSize = 12, 16

// seal encrypts files (name → content) with a key derived from the token
// by argon2id, with a fresh salt and nonce.
func seal(token string, files map[string][]byte) ([]byte, error) {
	plain, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	s := sealed{KDF: kdfArgon2id, Time: argonTime, Memory: argonMemoryKiB, Threads: argonThreads,
		Salt: make([]byte, saltLen), Nonce: make([]byte, gcmNonceSize)}
	if _, err := rand.Read(s.Salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(s.Nonce); err != nil {
		return nil, err
	}
	key, err := s.key(token)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	s.Data = gcm.Seal(nil, s.Nonce, plain, []byte(Key))
	return json.Marshal(s)
}

// open decrypts what seal made (or a record from before the KDF was
// recorded) and returns the files and the record's header (its KDF and
// parameters). A malformed record is a *RecordError, before any
// derivation; a record the token does not open is ErrWrongToken.
func open(token string, data []byte) (map[string][]byte, sealed, error) {
	var s sealed
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, sealed{}, &RecordError{Field: "record", Problem: err.Error()}
	}
	if err := s.check(gcmNonceSize, gcmTagSize); err != nil {
		return nil, sealed{}, err
	}
	key, err := s.key(token)
	if err != nil {
		return nil, sealed{}, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, sealed{}, err
	}
	plain, err := gcm.Open(nil, s.Nonce, s.Data, []byte(Key))
	if err != nil {
		return nil, sealed{}, ErrWrongToken
	}
	var files map[string][]byte
	if err := json.Unmarshal(plain, &files); err != nil || files == nil {
		problem := "decrypted, but not the PKI files"
		if err != nil {
			problem += ": " + err.Error()
		}
		return nil, sealed{}, &RecordError{Field: "data", Problem: problem}
	}
	s.Data = nil
	return files, s, nil
}
