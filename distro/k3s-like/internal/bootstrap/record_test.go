package bootstrap

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"
)

// TestRecordFormat: seal writes argon2id with its parameters, a fresh
// 16-byte salt and 12-byte nonce every time, and the token nowhere.
func TestRecordFormat(t *testing.T) {
	files := map[string][]byte{"server-ca.key": []byte("secret")}
	a, err := seal("token-1", files)
	require.NoError(t, err)
	b, err := seal("token-1", files)
	require.NoError(t, err)
	var ra, rb sealed
	require.NoError(t, json.Unmarshal(a, &ra))
	require.NoError(t, json.Unmarshal(b, &rb))
	assert.Equal(t, "argon2id", ra.KDF)
	assert.Equal(t, []any{uint32(3), uint32(64 * 1024), uint8(4)}, []any{ra.Time, ra.Memory, ra.Threads})
	assert.Len(t, ra.Salt, 16)
	assert.Len(t, ra.Nonce, 12)
	assert.NotEqual(t, ra.Salt, rb.Salt, "a fresh salt")
	assert.NotEqual(t, ra.Nonce, rb.Nonce, "a fresh nonce")
	assert.NotContains(t, string(a), "token-1")
	assert.NotContains(t, string(a), "secret")
}

// legacyRecord is a record as the binary wrote it before the KDF was
// recorded: PBKDF2-SHA256, 100,000 iterations.
func legacyRecord(t testing.TB, token string, files map[string][]byte) []byte {
	t.Helper()
	plain, err := json.Marshal(files)
	require.NoError(t, err)
	s := sealed{Salt: make([]byte, 16), Nonce: make([]byte, 12)}
	_, _ = rand.Read(s.Salt)
	_, _ = rand.Read(s.Nonce)
	key, err := pbkdf2.Key(sha256.New, token, s.Salt, 100_000, 32)
	require.NoError(t, err)
	gcm, err := newGCM(key)
	require.NoError(t, err)
	s.Data = gcm.Seal(nil, s.Nonce, plain, []byte(Key))
	out, err := json.Marshal(s)
	require.NoError(t, err)
	return out
}

// A record written before the KDF was recorded still opens.
func TestLegacyRecordOpens(t *testing.T) {
	files := map[string][]byte{"server-ca.key": []byte("secret")}
	got, s, err := open("token-1", legacyRecord(t, "token-1", files))
	require.NoError(t, err)
	assert.Equal(t, files, got)
	assert.True(t, s.stale(), "a PBKDF2 record is re-sealed by the server that opens it")
	assert.Equal(t, "PBKDF2-SHA256 100000 iterations", s.String())
	_, _, err = open("token-2", legacyRecord(t, "token-1", files))
	assert.ErrorIs(t, err, ErrWrongToken)
}

// TestMalformedRecords: every malformed field is a *RecordError naming it,
// before any key is derived; none panics (a nonce of the wrong length made
// gcm.Open panic before).
func TestMalformedRecords(t *testing.T) {
	good := func() sealed {
		return sealed{KDF: "argon2id", Time: 3, Memory: 64 * 1024, Threads: 4,
			Salt: make([]byte, 16), Nonce: make([]byte, 12), Data: make([]byte, 40)}
	}
	for _, tc := range []struct {
		name, field string
		mutate      func(*sealed)
	}{
		{"nonce too short", "nonce", func(s *sealed) { s.Nonce = s.Nonce[:5] }},
		{"nonce too long", "nonce", func(s *sealed) { s.Nonce = make([]byte, 13) }},
		{"no nonce", "nonce", func(s *sealed) { s.Nonce = nil }},
		{"data shorter than the tag", "data", func(s *sealed) { s.Data = s.Data[:15] }},
		{"short salt", "salt", func(s *sealed) { s.Salt = s.Salt[:8] }},
		{"huge salt", "salt", func(s *sealed) { s.Salt = make([]byte, 65) }},
		{"unknown kdf", "kdf", func(s *sealed) { s.KDF = "md5" }},
		{"parameters without a kdf", "kdf", func(s *sealed) { s.KDF = "" }},
		{"zero passes", "time", func(s *sealed) { s.Time = 0 }},
		{"too many passes", "time", func(s *sealed) { s.Time = 1000 }},
		{"memory below the floor", "memory", func(s *sealed) { s.Memory = 1024 }},
		{"memory that would exhaust the server", "memory", func(s *sealed) { s.Memory = 4 << 30 / 1024 * 1023 }},
		{"memory 1 KiB above the 256 MiB ceiling", "memory", func(s *sealed) { s.Memory = 256*1024 + 1 }},
		{"memory at the former 1 GiB ceiling", "memory", func(s *sealed) { s.Memory = 1024 * 1024 }},
		{"zero threads", "threads", func(s *sealed) { s.Threads = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.mutate(&s)
			data, err := json.Marshal(s)
			require.NoError(t, err)
			_, _, err = open("token", data)
			var re *RecordError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.field, re.Field, err.Error())
		})
	}
	for _, data := range []string{"", "null", "[]", `{"salt": 5}`, "not json"} {
		_, _, err := open("token", []byte(data))
		var re *RecordError
		if assert.ErrorAs(t, err, &re, "%q", data) {
			assert.Contains(t, []string{"record", "salt", "nonce", "data"}, re.Field, "%q: %v", data, err)
		}
	}
	// Decrypts, but is not the PKI files.
	s := good()
	s.Salt = []byte("0123456789abcdef")
	key := argon2.IDKey([]byte("token"), s.Salt, s.Time, s.Memory, s.Threads, 32)
	gcm, err := newGCM(key)
	require.NoError(t, err)
	s.Data = gcm.Seal(nil, s.Nonce, []byte("not json"), []byte(Key))
	data, _ := json.Marshal(s)
	_, _, err = open("token", data)
	var re *RecordError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "data", re.Field)
}

// TestKDFMemoryCeiling: a record that asks argon2id for 1 KiB more than
// the 256 MiB ceiling is refused before any derivation — open allocates
// less than 1 MiB for it, where the derivation would take 256 MiB — and
// the ceiling itself passes the check, so a 2 GiB host is asked for at
// most 256 MiB by any record.
func TestKDFMemoryCeiling(t *testing.T) {
	s := sealed{KDF: "argon2id", Time: 1, Memory: 256*1024 + 1, Threads: 4,
		Salt: make([]byte, 16), Nonce: make([]byte, 12), Data: make([]byte, 40)}
	data, err := json.Marshal(s)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err = open("token", data)
	runtime.ReadMemStats(&after)
	var re *RecordError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "memory", re.Field)
	assert.Equal(t, "the cluster's PKI record in the datastore is malformed: memory: 262145 KiB, want 19456 to 262144", err.Error())
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "refused before the derivation allocated anything")
	s.Memory = 256 * 1024
	assert.NoError(t, s.check(gcmNonceSize, gcmTagSize), "the ceiling itself is accepted")
}

// FuzzOpen: no input makes open panic; it either fails or returns files.
// `make fuzz` runs it; go test runs the seeds (a good record, a legacy one,
// and malformed ones).
func FuzzOpen(f *testing.F) {
	files := map[string][]byte{"server-ca.key": []byte("secret")}
	good, err := seal("token", files)
	require.NoError(f, err)
	f.Add(good)
	f.Add(legacyRecord(f, "token", files))
	f.Add([]byte(`{"kdf":"argon2id","time":3,"memory":65536,"threads":4,"salt":"AAAAAAAAAAAAAAAAAAAAAA==","nonce":"AAAA","data":"AAAA"}`))
	f.Add([]byte(`{"salt":"AAAAAAAAAAAAAAAAAAAAAA==","nonce":"AAAAAAAAAAAAAAAA","data":""}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := open("token", data)
		if err == nil && got == nil {
			t.Fatalf("open returned neither files nor an error for %q", data)
		}
		var re *RecordError
		if err != nil && !errors.As(err, &re) && !errors.Is(err, ErrWrongToken) {
			t.Fatalf("open: an error that is neither a RecordError nor ErrWrongToken: %v", err)
		}
	})
}

// BenchmarkGuess is what one offline guess of the token costs an attacker
// who holds the record: the argon2id derivation seal uses, beside the
// PBKDF2-SHA256 (100,000 iterations) it replaces, in one run (-benchmem
// shows the memory each needs).
func BenchmarkGuess(b *testing.B) {
	salt := make([]byte, 16)
	b.Run("argon2id-t3-64MiB-p4", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			argon2.IDKey([]byte("guess"), salt, argonTime, argonMemoryKiB, argonThreads, keyLen)
		}
	})
	b.Run("pbkdf2-sha256-100k", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = pbkdf2.Key(sha256.New, "guess", salt, legacyIterations, keyLen)
		}
	})
}
