package authn

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxIdleLimiters is how many identities' buckets are kept before full ones (idle
// long enough to have refilled) are dropped.
const maxIdleLimiters = 10_000

// limiter is a token bucket per identity.
type limiter struct {
	every rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// newLimiter makes buckets of perSecond refilling up to burst (0: twice perSecond,
// at least 1); nil for perSecond 0 (no limit).
func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(2*perSecond)))
	}
	return &limiter{every: rate.Limit(perSecond), burst: burst, buckets: map[string]*bucket{}}
}

// allow takes a token from id's bucket, or says how long until one is there.
func (l *limiter) allow(id string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[id]
	if !ok {
		if len(l.buckets) >= maxIdleLimiters {
			l.prune(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.every, l.burst)}
		l.buckets[id] = b
	}
	b.last = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// prune drops the buckets that have refilled: their identities were idle for as
// long as a full bucket takes.
func (l *limiter) prune(now time.Time) {
	full := time.Duration(float64(l.burst) / float64(l.every) * float64(time.Second))
	for id, b := range l.buckets {
		if now.Sub(b.last) >= full {
			delete(l.buckets, id)
		}
	}
}
