package testkit

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The wire formats of the chat models clawmem calls, for fake model
// servers in tests: the prompt a request carries, and the reply a model
// sends with a given text (token counts ~ characters / 4).

// OpenAIPrompt is the user message of an OpenAI chat completions request body.
func OpenAIPrompt(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

// GeminiPrompt is the text of a Gemini generateContent request body.
func GeminiPrompt(body map[string]any) string {
	var b strings.Builder
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		parts, _ := c.(map[string]any)["parts"].([]any)
		for _, p := range parts {
			s, _ := p.(map[string]any)["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// WriteOpenAIReply answers a chat completions request with text.
func WriteOpenAIReply(w http.ResponseWriter, model any, prompt, text string) {
	WriteJSON(w, map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": len(prompt) / 4, "completion_tokens": len(text) / 4, "total_tokens": (len(prompt) + len(text)) / 4},
	})
}

// WriteGeminiReply answers a generateContent request with text.
func WriteGeminiReply(w http.ResponseWriter, prompt, text string) {
	WriteJSON(w, map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"parts": []any{map[string]any{"text": text}}, "role": "model"},
			"finishReason": "STOP",
		}},
		"usageMetadata": map[string]any{"promptTokenCount": len(prompt) / 4, "candidatesTokenCount": len(text) / 4, "totalTokenCount": (len(prompt) + len(text)) / 4},
		"modelVersion":  "gemini-2.5-flash",
	})
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// WriteOpenAIEmbeddings answers an embeddings request with vectors, one
// per input in its order, as the OpenAI embeddings API does.
func WriteOpenAIEmbeddings(w http.ResponseWriter, model string, vectors [][]float32) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: model}
	for i, v := range vectors {
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
	}
	WriteJSON(w, out)
}
