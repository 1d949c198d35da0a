package httpapi

// mem0's ids (user_id, agent_id, app_id, run_id) as clawmem keeps them, in
// each memory's metadata, and the filters that select memories by them.

import (
	"encoding/json"
	"slices"
)

// Labels are mem0's ids of a memory, kept in its metadata under "mem0".
type Labels struct {
	UserID  string `json:"user_id,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	AppID   string `json:"app_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

func (l Labels) check() error {
	for name, v := range map[string]string{"user_id": l.UserID, "agent_id": l.AgentID, "app_id": l.AppID, "run_id": l.RunID} {
		if len(v) > mem0MaxLabel {
			return invalid("%s is %d bytes (max %d)", name, len(v), mem0MaxLabel)
		}
	}
	return nil
}

// mem0Meta is the metadata of a memory stored through mem0's API.
type mem0Meta struct {
	Source     string `json:"source,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	Mem0       struct {
		Labels
		Metadata json.RawMessage `json:"metadata,omitempty"`
	} `json:"mem0"`
}

// labelsOf reads a memory's mem0 labels and metadata; a memory stored
// otherwise has none.
func labelsOf(md json.RawMessage) (Labels, json.RawMessage) {
	var m mem0Meta
	if len(md) == 0 || json.Unmarshal(md, &m) != nil {
		return Labels{}, nil
	}
	return m.Mem0.Labels, m.Mem0.Metadata
}

// Filter selects memories by label: every label set must match, "*"
// matching any memory that has that label.
type Filter Labels

func (f Filter) matches(l Labels) bool {
	eq := func(want, got string) bool { return want == "" || (want == "*" && got != "") || want == got }
	return eq(f.UserID, l.UserID) && eq(f.AgentID, l.AgentID) && eq(f.AppID, l.AppID) && eq(f.RunID, l.RunID)
}

func (f Filter) empty() bool { return f == Filter{} }

// ParseFilters reads mem0's filters: {"user_id": "u", …} or
// {"AND": [{"user_id": "u"}, {"run_id": "r"}, …]} (mem0's v2 filter
// language), restricted to equality on the four labels, which is what
// clawmem can answer exactly. Anything else is refused rather than
// ignored, so a filter never silently widens a result.
func ParseFilters(raw json.RawMessage) (Filter, error) {
	var f Filter
	if len(raw) == 0 || string(raw) == "null" {
		return f, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return f, invalid("filters: want a JSON object")
	}
	if err := f.add(obj, 0); err != nil {
		return Filter{}, err
	}
	return f, nil
}

func (f *Filter) add(obj map[string]json.RawMessage, depth int) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := obj[k]
		if k == "AND" {
			var parts []map[string]json.RawMessage
			if depth > 0 || json.Unmarshal(v, &parts) != nil {
				return invalid("filters: AND takes a list of objects, at the top level only")
			}
			for _, p := range parts {
				if err := f.add(p, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		var dst *string
		switch k {
		case "user_id":
			dst = &f.UserID
		case "agent_id":
			dst = &f.AgentID
		case "app_id":
			dst = &f.AppID
		case "run_id":
			dst = &f.RunID
		default:
			return invalid("filters: %q is not supported: clawmem filters by user_id, agent_id, app_id and run_id (equality or \"*\"), joined by AND", k)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil || s == "" {
			return invalid("filters: %s takes a non-empty string", k)
		}
		if len(s) > mem0MaxLabel {
			return invalid("filters: %s is %d bytes (max %d)", k, len(s), mem0MaxLabel)
		}
		if *dst != "" && *dst != s {
			return invalid("filters: %s given twice with different values", k)
		}
		*dst = s
	}
	return nil
}

// filterWith is the filters joined with the labels given at the top level.
func filterWith(raw json.RawMessage, top Labels) (Filter, error) {
	if err := top.check(); err != nil {
		return Filter{}, err
	}
	f, err := ParseFilters(raw)
	if err != nil {
		return f, err
	}
	for _, p := range []struct {
		dst     *string
		v, name string
	}{
		{&f.UserID, top.UserID, "user_id"}, {&f.AgentID, top.AgentID, "agent_id"},
		{&f.AppID, top.AppID, "app_id"}, {&f.RunID, top.RunID, "run_id"},
	} {
		if p.v == "" {
			continue
		}
		if *p.dst != "" && *p.dst != p.v {
			return Filter{}, invalid("%s disagrees with filters.%s", p.name, p.name)
		}
		*p.dst = p.v
	}
	return f, nil
}
