package schemas

// ErrorCode is one code an error reply of the query service carries in
// its details (ErrorDetails.Code), with what it tells the caller. Callers
// branch on the code, never on the text, which is written for a model.
type ErrorCode struct {
	Code    string `json:"code"`
	Meaning string `json:"meaning"`
}

// The error codes of the query service. Codes says what each means.
const (
	CodeInvalid     = "invalid"
	CodeNotFound    = "not_found"
	CodeAmbiguous   = "ambiguous"
	CodeDenied      = "denied"
	CodeRejected    = "rejected"
	CodeNoIdentity  = "no_identity"
	CodeTimeout     = "timeout"
	CodeStale       = "stale"
	CodeUnavailable = "unavailable"
	CodeInternal    = "internal"
)

// Codes is every error code with its meaning: the one table of them, so
// a client in another language, the docs and the console read the same.
// A test fails when a Code constant is missing here.
func Codes() []ErrorCode {
	return []ErrorCode{
		{CodeInvalid, "The request is malformed or out of bounds: not a JSON object of the operation's fields, " +
			"a value of the wrong type or range, an unknown scope or category, a request over MaxRequestBytes, " +
			"or a reply that would exceed the NATS payload limit. Asking again unchanged fails again."},
		{CodeNotFound, "No such memory (or export cursor) for this caller. Another agent's memory is not_found " +
			"too, so a caller cannot learn that it exists."},
		{CodeAmbiguous, "A memory id prefix matches more than one memory; details.matches lists their ids."},
		{CodeDenied, "The caller may not use the scope it named, or the operation is for operators (admin) only."},
		{CodeRejected, "The text was refused as a memory: noise, or it looks like prompt injection."},
		{CodeNoIdentity, "The call names no agent (an in-process or bridged caller without one), and every " +
			"operation but an operator's acts for an agent."},
		{CodeTimeout, "The request took longer than the service's request timeout and was abandoned."},
		{CodeStale, "On a replicated deployment: the replica that answered had not applied the memory log up to " +
			"the request's afterSeq in time. Retry, or ask without afterSeq."},
		{CodeUnavailable, "On a replicated deployment: no writer answered a forwarded write (a failover takes up to " +
			"a few seconds), or the write reached a writer of another partition. Retry."},
		{CodeInternal, "Anything else, including a service that is shutting down; the text says no more, " +
			"the query service's log does."},
	}
}
