package stage

import "errors"

// permanentError marks a failure no retry can fix (a malformed message);
// the stage dead-letters it at once.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Permanent wraps err so the stage sends the message to the DLQ without
// retrying.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports a Permanent error.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ErrNotWriter, from a handler (the store worker's memory log), says this
// process may no longer write: the batch is left to the next writer, and
// the delivery is not counted against its messages.
var ErrNotWriter = errors.New("this process is no longer the writer")
