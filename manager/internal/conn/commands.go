package conn

// Kick is a coalesced command to a server's owner: reconnect now (cut a
// backoff delay short), check now (a health check at once). A send never
// blocks, and the sends made before the owner took one are one: the
// owner selects on the channel.
type Kick chan struct{}

// NewKick returns a Kick with nothing pending.
func NewKick() Kick { return make(Kick, 1) }

// Send asks the owner; it reports false when a request was pending
// already.
func (k Kick) Send() bool {
	select {
	case k <- struct{}{}:
		return true
	default:
		return false
	}
}
