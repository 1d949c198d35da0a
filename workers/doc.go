// Package workers holds the pipeline's long-running stages — capture, store,
// query service, distill runner and scheduled jobs — each a Run(ctx) error.
package workers
