package journal_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// collect reads sub until it ends and returns what it delivered and why it
// ended.
func collect(sub *journal.Subscription) ([]uint64, error) {
	var seqs []uint64
	for env := range sub.C() {
		seqs = append(seqs, env.Seq)
	}
	return seqs, sub.Err()
}

// A subscription that ends before its subscriber closes it, or its
// subscriber's context ends, says why in Err. Each case appends ten events,
// lets the subscriber read the first, then breaks something.
func TestSubscriptionEndsWithError(t *testing.T) {
	tests := []struct {
		name string
		// keep selects the messages the bus carries (counted from 1).
		keep func(n int) bool
		// fault breaks the journal after the subscriber read seq 1.
		fault func(t *testing.T, j *journal.Journal, st *faultyStore, bus *gochannel.GoChannel)
		// want is what the subscriber receives after seq 1.
		want []uint64
		// errs must all be in the chain of Err.
		errs []error
	}{{
		// The bus lost the later messages, so the subscription must read
		// them from the store, which fails: the case once observed as
		// "delivered 1 of 10, Err() = nil".
		name: "bus closed and store read failed",
		keep: func(n int) bool { return n == 1 },
		fault: func(_ *testing.T, _ *journal.Journal, st *faultyStore, bus *gochannel.GoChannel) {
			st.failReads(errInjected)
			bus.Close()
		},
		errs: []error{journal.ErrBusClosed, errInjected},
	}, {
		name: "bus closed",
		keep: func(n int) bool { return n == 1 },
		fault: func(_ *testing.T, _ *journal.Journal, _ *faultyStore, bus *gochannel.GoChannel) {
			bus.Close()
		},
		want: []uint64{2, 3, 4, 5, 6, 7, 8, 9, 10},
		errs: []error{journal.ErrBusClosed},
	}, {
		name: "journal closed",
		keep: func(n int) bool { return n == 1 },
		fault: func(_ *testing.T, j *journal.Journal, _ *faultyStore, bus *gochannel.GoChannel) {
			j.Close()
			bus.Close()
		},
		want: []uint64{2, 3, 4, 5, 6, 7, 8, 9, 10},
		errs: []error{journal.ErrClosed},
	}, {
		name: "journal closed and store read failed",
		keep: func(n int) bool { return n == 1 },
		fault: func(_ *testing.T, j *journal.Journal, st *faultyStore, bus *gochannel.GoChannel) {
			st.failReads(errInjected)
			j.Close()
			bus.Close()
		},
		errs: []error{journal.ErrClosed, errInjected},
	}, {
		// The bus stays open but lost messages 2 to 10: the next one shows
		// the gap, and filling it fails.
		name: "store read failed",
		keep: func(n int) bool { return n == 1 || n == 11 },
		fault: func(t *testing.T, j *journal.Journal, st *faultyStore, _ *gochannel.GoChannel) {
			st.failReads(errInjected)
			if _, err := j.Append(t.Context(), "s", ev(11)); err != nil {
				t.Fatal(err)
			}
		},
		errs: []error{errInjected},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				st := &faultyStore{snapshotStore: memory.New()}
				bus := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
				defer bus.Close()
				j, err := journal.New(st, &journal.Options{
					Publisher:  &selectivePublisher{Publisher: bus, keep: tt.keep},
					Subscriber: bus,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Close()
				synctest.Wait() // the subscription waits for the bus
				for i := range 10 {
					if _, err := j.Append(ctx, "s", ev(i)); err != nil {
						t.Fatal(err)
					}
				}
				if env := <-sub.C(); env.Seq != 1 {
					t.Fatalf("first envelope has seq %d", env.Seq)
				}
				// Everything the bus carried is taken in; the subscription
				// waits for more.
				synctest.Wait()
				tt.fault(t, j, st, bus)
				got, err := collect(sub)
				if !slices.Equal(got, tt.want) {
					t.Errorf("after seq 1 the subscription delivered %v, want %v", got, tt.want)
				}
				if err == nil {
					t.Fatalf("delivered %d of 10, Err() = nil", 1+len(got))
				}
				for _, want := range tt.errs {
					if !errors.Is(err, want) {
						t.Errorf("Err() = %v, want it to wrap %v", err, want)
					}
				}
			})
		})
	}
}

// Only the subscriber ends a subscription without an error of the
// journal's: Close leaves Err nil, and its context's end is reported as
// ctx.Err(), whether or not envelopes were still to come.
func TestSubscriptionEndedBySubscriber(t *testing.T) {
	tests := []struct {
		name string
		// end ends the subscription after the subscriber read seq 1.
		end     func(sub *journal.Subscription, cancel context.CancelFunc)
		timeout time.Duration // of the subscriber's context, when set
		want    error
	}{{
		name: "Close",
		end:  func(sub *journal.Subscription, _ context.CancelFunc) { sub.Close() },
	}, {
		name: "context cancelled",
		end:  func(_ *journal.Subscription, cancel context.CancelFunc) { cancel() },
		want: context.Canceled,
	}, {
		name: "cancelled, then Close",
		end: func(sub *journal.Subscription, cancel context.CancelFunc) {
			cancel()
			sub.Close()
		},
		want: context.Canceled,
	}, {
		// Nothing is done: the deadline passes while the subscriber waits.
		name:    "context deadline",
		end:     func(*journal.Subscription, context.CancelFunc) {},
		timeout: time.Minute,
		want:    context.DeadlineExceeded,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j, err := journal.New(memory.New(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				for i := range 3 {
					if _, err := j.Append(ctx, "s", ev(i)); err != nil {
						t.Fatal(err)
					}
				}
				sub, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Buffer: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Close()
				if env := <-sub.C(); env.Seq != 1 {
					t.Fatalf("first envelope has seq %d", env.Seq)
				}
				tt.end(sub, cancel)
				if tt.timeout > 0 {
					// Read on: the deadline passes once nothing else can
					// happen.
					collect(sub)
				}
				synctest.Wait()
				for range sub.C() {
				}
				if err := sub.Err(); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
					t.Errorf("Err() = %v, want %v", err, tt.want)
				}
			})
		})
	}
}
