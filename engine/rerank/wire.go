package rerank

import (
	"encoding/json"
	"net/http"
)

// wire is one provider's request shape, auth headers and reply shape.
type wire struct {
	endpoint    string
	model       string
	keyOptional bool
	headers     func(h http.Header, key string)
	request     func(model, query string, documents []string, topN int) any
	parse       func(data []byte) ([]item, error)
}

// item is one reply entry before validation. Both fields are pointers so a
// missing index is not mistaken for document 0; the index is a float so one
// odd entry (2.0, 1e9) is dropped instead of failing the whole decode.
type item struct {
	Index *float64
	Score *float64
}

type relevanceItem struct {
	Index *float64 `json:"index"`
	Score *float64 `json:"relevance_score"`
}

type scoreItem struct {
	Index *float64 `json:"index"`
	Score *float64 `json:"score"`
}

func items[T relevanceItem | scoreItem](in []T) []item {
	out := make([]item, len(in))
	for i, v := range in {
		out[i] = item(v)
	}
	return out
}

// bearer leaves the header out without a key: a keyless TEI behind no proxy
// needs none, and "Bearer " alone is rejected by some proxies.
func bearer(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// Every provider that echoes documents by default is told not to: the reply
// would otherwise grow with the candidate texts for nothing.

type stringDocsTopN struct {
	Model           string   `json:"model"`
	Query           string   `json:"query"`
	Documents       []string `json:"documents"`
	TopN            int      `json:"top_n"`
	ReturnDocuments bool     `json:"return_documents"`
}

func requestTopN(model, query string, documents []string, topN int) any {
	return stringDocsTopN{Model: model, Query: query, Documents: documents, TopN: topN}
}

func parseResults(data []byte) ([]item, error) {
	var r struct {
		Results []relevanceItem `json:"results"`
	}
	err := json.Unmarshal(data, &r)
	return items(r.Results), err
}

type voyageRequest struct {
	Model           string   `json:"model"`
	Query           string   `json:"query"`
	Documents       []string `json:"documents"`
	TopK            int      `json:"top_k"`
	ReturnDocuments bool     `json:"return_documents"`
}

func parseVoyage(data []byte) ([]item, error) {
	var r struct {
		Data []relevanceItem `json:"data"`
	}
	err := json.Unmarshal(data, &r)
	return items(r.Data), err
}

type pineconeDoc struct {
	Text string `json:"text"`
}

type pineconeRequest struct {
	Model           string        `json:"model"`
	Query           string        `json:"query"`
	Documents       []pineconeDoc `json:"documents"`
	TopN            int           `json:"top_n"`
	RankFields      []string      `json:"rank_fields"`
	ReturnDocuments bool          `json:"return_documents"`
}

func parsePinecone(data []byte) ([]item, error) {
	var r struct {
		Data []scoreItem `json:"data"`
	}
	err := json.Unmarshal(data, &r)
	return items(r.Data), err
}

type dashscopeRequest struct {
	Model string `json:"model"`
	Input struct {
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
	} `json:"input"`
	Parameters struct {
		TopN            int  `json:"top_n"`
		ReturnDocuments bool `json:"return_documents"`
	} `json:"parameters"`
}

func parseDashScope(data []byte) ([]item, error) {
	var r struct {
		Output struct {
			Results []relevanceItem `json:"results"`
		} `json:"output"`
	}
	err := json.Unmarshal(data, &r)
	return items(r.Output.Results), err
}

// teiRequest asks TEI to truncate: without it an over-long memory makes the
// whole call fail with 413 instead of being scored on its beginning.
type teiRequest struct {
	Query    string   `json:"query"`
	Texts    []string `json:"texts"`
	Truncate bool     `json:"truncate"`
}

func parseTEI(data []byte) ([]item, error) {
	var r []scoreItem
	err := json.Unmarshal(data, &r)
	return items(r), err
}

var wires = map[Provider]wire{
	Jina: {
		endpoint: "https://api.jina.ai/v1/rerank",
		model:    "jina-reranker-v3",
		headers:  bearer,
		request:  requestTopN,
		parse:    parseResults,
	},
	SiliconFlow: {
		endpoint: "https://api.siliconflow.cn/v1/rerank",
		model:    "BAAI/bge-reranker-v2-m3",
		headers:  bearer,
		request:  requestTopN,
		parse:    parseResults,
	},
	Voyage: {
		endpoint: "https://api.voyageai.com/v1/rerank",
		model:    "rerank-2.5",
		headers:  bearer,
		request: func(model, query string, documents []string, topN int) any {
			return voyageRequest{Model: model, Query: query, Documents: documents, TopK: topN}
		},
		parse: parseVoyage,
	},
	Pinecone: {
		endpoint: "https://api.pinecone.io/rerank",
		model:    "bge-reranker-v2-m3",
		headers: func(h http.Header, key string) {
			h.Set("Api-Key", key)
			h.Set("X-Pinecone-API-Version", "2024-10")
		},
		request: func(model, query string, documents []string, topN int) any {
			docs := make([]pineconeDoc, len(documents))
			for i, d := range documents {
				docs[i] = pineconeDoc{Text: d}
			}
			return pineconeRequest{Model: model, Query: query, Documents: docs, TopN: topN, RankFields: []string{"text"}}
		},
		parse: parsePinecone,
	},
	DashScope: {
		endpoint: "https://dashscope.aliyuncs.com/api/v1/services/rerank/text-rerank/text-rerank",
		model:    "gte-rerank-v2",
		headers:  bearer,
		request: func(model, query string, documents []string, topN int) any {
			var r dashscopeRequest
			r.Model = model
			r.Input.Query = query
			r.Input.Documents = documents
			r.Parameters.TopN = topN
			return r
		},
		parse: parseDashScope,
	},
	TEI: {
		keyOptional: true,
		headers:     bearer,
		request: func(_, query string, documents []string, _ int) any {
			return teiRequest{Query: query, Texts: documents, Truncate: true}
		},
		parse: parseTEI,
	},
}
