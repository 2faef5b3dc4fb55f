package leaktest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestFindLeaks: a goroutine that ends within the wait is waited for and
// the time it took returned; one that outlives the wait is reported, after
// the wait and not much later.
func TestFindLeaks(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	go time.Sleep(300 * time.Millisecond)
	settled, err := FindLeaks(5*time.Second, 20*time.Millisecond, baseline)
	if err != nil || settled < 250*time.Millisecond || settled > 3*time.Second {
		t.Errorf("a goroutine ending after 300 ms: settled %s, err %v; want 250 ms – 3 s, nil", settled, err)
	}

	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	settled, err = FindLeaks(200*time.Millisecond, 20*time.Millisecond, baseline)
	if err == nil || settled < 200*time.Millisecond || settled > 2*time.Second {
		t.Errorf("a goroutine outliving the wait: settled %s, err %v; want 200 ms – 2 s, an error", settled, err)
	}
}
