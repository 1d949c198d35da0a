// Package distill turns whole session transcripts into atomic,
// evidence-backed lessons with an LLM map-reduce. It works without NATS.
//
// The path of a session:
//
//   - Messages: from an inline hook payload (FromHook), the transcript
//     stream (FromEntries) or an OpenClaw JSONL file (ResolveSessionFile,
//     ReadFile), numbered 1..n, user text stripped of OpenClaw's envelope.
//   - Chunks: rendered "[U12] text" / "[A13] text", cut into overlapping
//     chunks of at most 12000 characters (SplitChunks).
//   - Map: one LLM call per chunk, in parallel, answering strict JSON
//     (ParseLessons); every quote is checked against the messages it cites
//     (ValidateEvidence), and lessons without real evidence are dropped.
//   - Reduce: de-duplication by text and by embedding, removal of generic
//     advice, secrets and injections, ranking (Score), the best 20 kept; an
//     optional LLM pass merges near-duplicates and is checked again.
//
// Without an LLM the Distiller falls back to the auto-capture rules
// (extractive distillation) and says so in Result.Distiller.
package distill
