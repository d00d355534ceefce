package sharedhost

import "github.com/mcplife/mcplife/manager"

// SetTestHooks sets the hooks of the shared host's work (nil: nothing)
// until the returned function restores them, which must be after every
// shared host that may call them ended.
func SetTestHooks(built func(id string), followed func(manager.Update)) (restore func()) {
	old := testHooks
	if built != nil {
		testHooks.built = built
	}
	if followed != nil {
		testHooks.followed = followed
	}
	return func() { testHooks = old }
}
