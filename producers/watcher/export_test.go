package watcher

// OnListed sets a function run each time a scan has listed the agents.
func OnListed(w *Watcher, f func()) { w.listed = f }
