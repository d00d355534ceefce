package manager

import (
	"github.com/mcplife/mcplife/events"
)

// validateConfig checks cfg under name with [events.ServerConfig.Validate]
// and wraps a failure as a [*ServerError] (Op [OpValidate]) that matches
// [ErrInvalidConfig]; its message is the validation's, every problem
// joined with "; ".
func validateConfig(name string, cfg events.ServerConfig) error {
	cfg.Name = name
	err := cfg.Validate()
	if err == nil {
		return nil
	}
	return &ServerError{Server: name, Op: OpValidate, Err: &scrubbedError{msg: err.Error(), cause: ErrInvalidConfig}}
}
