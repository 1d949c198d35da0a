package distill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

const (
	defaultOpenAIModel   = "gpt-4o-mini"
	defaultOpenAIBaseURL = "https://api.openai.com/v1"
)

// openAIChat calls an OpenAI-compatible /chat/completions endpoint
// (OpenAI, Ollama, vLLM, LM Studio, ...) through go-openai.
type openAIChat struct {
	client     *openai.Client
	model      string
	where      string
	jsonSchema bool
	policy     callPolicy
}

var _ LLM = (*openAIChat)(nil)

func newOpenAI(cfg LLMConfig) (*openAIChat, error) {
	baseURL := firstNonBlank(cfg.BaseURL, defaultOpenAIBaseURL)
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	if key == "" && baseURL == defaultOpenAIBaseURL {
		return nil, fmt.Errorf("distill: openai needs an API key: set llm.apiKey (e.g. \"${OPENAI_API_KEY}\") or OPENAI_API_KEY, or set llm.baseURL to a local server")
	}
	cc := openai.DefaultConfig(key)
	cc.BaseURL = strings.TrimSuffix(baseURL, "/")
	model := firstNonBlank(cfg.Model, defaultOpenAIModel)
	return &openAIChat{
		client:     openai.NewClientWithConfig(cc),
		model:      model,
		where:      fmt.Sprintf("openai-compatible model %s at %s", model, cc.BaseURL),
		jsonSchema: cfg.JSONSchema,
		policy:     newCallPolicy(cfg),
	}, nil
}

func (o *openAIChat) Model() string { return o.model }

// Generate asks for a JSON object (or, with JSONSchema, for req.Schema
// strictly) at temperature 0.2.
func (o *openAIChat) Generate(ctx context.Context, req Request) (Response, error) {
	chat := openai.ChatCompletionRequest{
		Model:          o.model,
		Temperature:    temperature,
		ResponseFormat: o.responseFormat(req.Schema),
	}
	if req.System != "" {
		chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: req.Prompt})
	resp, err := o.policy.do(ctx, attempt{
		call: func(ctx context.Context) (Response, error) {
			out, err := o.client.CreateChatCompletion(ctx, chat)
			if err != nil {
				return Response{}, err
			}
			return openAIResponse(out)
		},
		status: openAIStatus,
	})
	if err != nil {
		return Response{}, fmt.Errorf("%s: chat completion %s: %w", o.where, describeStatus(openAIStatus(err)), err)
	}
	return resp, nil
}

func (o *openAIChat) responseFormat(s *Schema) *openai.ChatCompletionResponseFormat {
	if o.jsonSchema && s != nil {
		return &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "lessons", Schema: s, Strict: true},
		}
	}
	return &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
}

func openAIResponse(out openai.ChatCompletionResponse) (Response, error) {
	r := Response{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens}
	if len(out.Choices) == 0 {
		return r, fmt.Errorf("%w: no choices", ErrBadResponse)
	}
	r.Text = out.Choices[0].Message.Content
	if strings.TrimSpace(r.Text) == "" {
		return r, fmt.Errorf("%w: empty message (finish reason %s)", ErrBadResponse, out.Choices[0].FinishReason)
	}
	return r, nil
}

func openAIStatus(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}
