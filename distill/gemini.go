package distill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"
)

const defaultGeminiModel = "gemini-2.5-flash"

// gemini calls generateContent on the Gemini API through google.golang.org/genai.
type gemini struct {
	client *genai.Client
	model  string
	where  string
	policy callPolicy
}

var _ LLM = (*gemini)(nil)

func newGemini(cfg LLMConfig) (*gemini, error) {
	key := cfg.APIKey
	for _, env := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if key == "" {
			key = os.Getenv(env)
		}
	}
	if key == "" {
		return nil, fmt.Errorf("distill: gemini needs an API key: set llm.apiKey (e.g. \"${GEMINI_API_KEY}\") or GEMINI_API_KEY")
	}
	model := firstNonBlank(cfg.Model, defaultGeminiModel)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{},
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL},
	})
	if err != nil {
		return nil, fmt.Errorf("distill: gemini client: %w", err)
	}
	where := "gemini model " + model
	if cfg.BaseURL != "" {
		where += " at " + cfg.BaseURL
	}
	return &gemini{client: client, model: model, where: where, policy: newCallPolicy(cfg)}, nil
}

func (g *gemini) Model() string { return g.model }

// Generate asks for JSON (with req.Schema as responseSchema when set) at
// temperature 0.2.
func (g *gemini) Generate(ctx context.Context, req Request) (Response, error) {
	config := &genai.GenerateContentConfig{
		Temperature:           genai.Ptr[float32](temperature),
		ResponseMIMEType:      "application/json",
		ResponseSchema:        req.Schema.genai(),
		AutomaticContinuation: genai.Ptr(false),
		CandidateCount:        1,
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	contents := []*genai.Content{genai.NewContentFromText(req.Prompt, genai.RoleUser)}
	resp, err := g.policy.do(ctx, attempt{
		call: func(ctx context.Context) (Response, error) {
			out, err := g.client.Models.GenerateContent(ctx, g.model, contents, config)
			if err != nil {
				return Response{}, err
			}
			return geminiResponse(out)
		},
		status: geminiStatus,
	})
	if err != nil {
		return Response{}, fmt.Errorf("%s: generateContent %s: %w", g.where, describeStatus(geminiStatus(err)), err)
	}
	return resp, nil
}

// geminiResponse joins the first candidate's text parts (not its thoughts)
// and records the token usage; thinking tokens are billed as output.
func geminiResponse(out *genai.GenerateContentResponse) (Response, error) {
	var r Response
	if u := out.UsageMetadata; u != nil {
		r.InputTokens = int(u.PromptTokenCount)
		r.OutputTokens = int(u.CandidatesTokenCount + u.ThoughtsTokenCount)
	}
	if len(out.Candidates) == 0 || out.Candidates[0].Content == nil {
		reason := "no candidates"
		if pf := out.PromptFeedback; pf != nil && pf.BlockReason != "" {
			reason = "prompt blocked: " + string(pf.BlockReason)
		}
		return r, fmt.Errorf("%w: %s", ErrBadResponse, reason)
	}
	var parts []string
	for _, p := range out.Candidates[0].Content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			parts = append(parts, p.Text)
		}
	}
	r.Text = strings.Join(parts, "")
	if strings.TrimSpace(r.Text) == "" {
		return r, fmt.Errorf("%w: empty answer (finish reason %s)", ErrBadResponse, out.Candidates[0].FinishReason)
	}
	return r, nil
}

func geminiStatus(err error) int {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) {
		return apiErrPtr.Code
	}
	return 0
}

// firstNonBlank is the first non-blank of its arguments.
func firstNonBlank(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
