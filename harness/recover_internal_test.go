package harness

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRecoverPolicyDelay: the backoff after each failure, by how many
// earlier ones are within Period: none for the first, Backoff doubling,
// never more than Period, even where doubling would overflow.
func TestRecoverPolicyDelay(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		p    RecoverPolicy
		want []time.Duration
	}{
		{RecoverPolicy{}, []time.Duration{0, s, 2 * s, 4 * s, 8 * s, 16 * s}},
		{RecoverPolicy{Backoff: 10 * s, Period: 25 * s}, []time.Duration{0, 10 * s, 20 * s, 25 * s, 25 * s}},
		{RecoverPolicy{Backoff: time.Hour, Period: time.Minute}, []time.Duration{0, time.Minute, time.Minute}},
		{RecoverPolicy{Backoff: -1}, []time.Duration{0, 0, 0}},
		{RecoverPolicy{Backoff: time.Hour, Period: math.MaxInt64}, []time.Duration{0, time.Hour, 2 * time.Hour}},
	} {
		var got []time.Duration
		for earlier := range c.want {
			got = append(got, c.p.delay(earlier))
		}
		assert.Equal(t, c.want, got, "%+v", c.p)
	}
	huge := RecoverPolicy{Backoff: time.Hour, Period: math.MaxInt64}
	assert.Equal(t, time.Duration(math.MaxInt64), huge.delay(100), "doubled up to Period, not past it")
}
