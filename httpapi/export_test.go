package httpapi

// SetStatusHook lets a test see the status of every answer, by route.
func SetStatusHook(a *API, f func(pattern string, code int)) { a.status = f }
