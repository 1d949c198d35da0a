// Package distill turns whole session transcripts into atomic,
// evidence-backed lessons with an LLM map-reduce. It works without NATS.
package distill
