package query

// The engine's results as the wire's details: package schemas cannot
// import the engine, so where a reply carries the engine's figures it has
// a shape of its own, the same JSON, filled here.

import (
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/schemas"
)

// statsDetails is memory_stats' details: the engine's figures and the
// caller's dead letters. The parts are converted, not copied field by
// field, so a field added to the engine's and not the wire's fails to
// compile.
func statsDetails(st memory.Stats, deadLetters *int) schemas.StatsDetails {
	d := schemas.StatsDetails{
		History: st.History, Total: st.Total, ByScope: st.ByScope, ByCategory: st.ByCategory,
		Scopes: st.Scopes, FullText: st.FullText, Retrieval: schemas.RetrievalConfig(st.Retrieval),
		Rerank: st.Rerank, Embedding: st.Embedding, Dimensions: st.Dimensions,
		ScopeConfig: schemas.ScopeStats(st.ScopeConfig), ByDay: st.ByDay,
		EmbedderOK: st.EmbedderOK, EmbedderError: st.EmbedderError, LastMemoryAt: st.LastMemoryAt,
		IndexKind: st.IndexKind, IndexTrained: st.IndexTrained, DeadLetters: deadLetters,
	}
	if st.EmbedderInfo != nil {
		c := schemas.EmbeddingCacheStats(*st.EmbedderInfo)
		d.EmbedderInfo = &c
	}
	if st.RecallCache != nil {
		c := schemas.RecallCacheStats(*st.RecallCache)
		d.RecallCache = &c
	}
	if st.Index != nil {
		is := schemas.IndexState(*st.Index)
		d.Index = &is
	}
	return d
}

// importResults are an import's row outcomes as its reply lists them;
// nil stays nil.
func importResults(rs []portable.Result) []schemas.ImportResult {
	if rs == nil {
		return nil
	}
	out := make([]schemas.ImportResult, len(rs))
	for i, r := range rs {
		out[i] = schemas.ImportResult{Line: r.Line, ID: r.ID, Status: string(r.Status), Reason: r.Reason,
			DuplicateOf: r.DuplicateOf, Similarity: r.Similarity}
	}
	return out
}

// consolidateDetails is a consolidation run's report as its reply
// carries it; nil lists stay nil (null on the wire, as the report says).
func consolidateDetails(rep memory.ConsolidateReport) schemas.ConsolidateDetails {
	d := schemas.ConsolidateDetails{Scanned: rep.Scanned, Archived: rep.Archived, DryRun: rep.DryRun}
	if rep.Merges != nil {
		d.Merges = make([]schemas.ConsolidateMerge, len(rep.Merges))
		for i, m := range rep.Merges {
			d.Merges[i] = schemas.ConsolidateMerge(m)
		}
	}
	return d
}
