// Package scopes decides which memories an agent may see and where its new
// memories go: the seed plugin's ScopeManager. Scopes are `global`,
// `agent:<id>`, `custom:<name>`, `project:<id>` and `user:<id>`, plus any
// scope defined in config. Without explicit agentAccess an agent reads
// `global` and its own `agent:<id>`.
package scopes

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Built-in scope types.
const (
	TypeGlobal  = "global"
	TypeAgent   = "agent"
	TypeCustom  = "custom"
	TypeProject = "project"
	TypeUser    = "user"
)

var builtinTypes = []string{TypeAgent, TypeCustom, TypeProject, TypeUser}

// Definition describes a scope.
type Definition struct {
	Description string `json:"description,omitempty"`
}

// Config is the seed's scopes.* block.
type Config struct {
	Default     string                `json:"default,omitempty"`
	Definitions map[string]Definition `json:"definitions,omitempty"`
	AgentAccess map[string][]string   `json:"agentAccess,omitempty"`
}

// Stats summarises the configuration.
type Stats struct {
	TotalScopes            int            `json:"totalScopes"`
	AgentsWithCustomAccess int            `json:"agentsWithCustomAccess"`
	ScopesByType           map[string]int `json:"scopesByType"`
}

// ErrUnknownScope is returned for a scope that is neither defined nor of a
// built-in type.
var ErrUnknownScope = errors.New("unknown scope")

// Manager implements the scope rules. It is safe for concurrent use.
type Manager struct {
	mu       sync.RWMutex
	def      string
	defs     map[string]Definition
	access   map[string][]string
	warnings []string
}

// AgentScope returns "agent:<id>".
func AgentScope(id string) string { return TypeAgent + ":" + id }

// CustomScope returns "custom:<name>".
func CustomScope(name string) string { return TypeCustom + ":" + name }

// ProjectScope returns "project:<id>".
func ProjectScope(id string) string { return TypeProject + ":" + id }

// UserScope returns "user:<id>".
func UserScope(id string) string { return TypeUser + ":" + id }

// Parse splits a scope into its type and id: "agent:main" → ("agent",
// "main"); "global" → ("global", ""); anything else → ("", scope).
func Parse(scope string) (typ, id string) {
	if scope == schemas.GlobalScope {
		return TypeGlobal, ""
	}
	if t, rest, ok := strings.Cut(scope, ":"); ok && rest != "" && slices.Contains(builtinTypes, t) {
		return t, rest
	}
	return "", scope
}

// New builds a manager from config, applying defaults: default scope
// global, and global always defined. A default scope that is not defined
// is an error; agentAccess naming undefined scopes only warns (Warnings).
func New(c Config) (*Manager, error) {
	m := &Manager{}
	if err := m.load(c); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) load(c Config) error {
	def := c.Default
	if def == "" {
		def = schemas.GlobalScope
	}
	defs := map[string]Definition{schemas.GlobalScope: {Description: "Shared knowledge"}}
	for s, d := range c.Definitions {
		if err := schemas.ValidateScope(s); err != nil {
			return fmt.Errorf("scopes.definitions: %w", err)
		}
		defs[s] = d
	}
	if _, ok := defs[def]; !ok && !isBuiltin(def) {
		return fmt.Errorf("scopes.default %q is not defined in scopes.definitions", def)
	}
	if err := schemas.ValidateScope(def); err != nil {
		return fmt.Errorf("scopes.default: %w", err)
	}
	access := map[string][]string{}
	var warnings []string
	for agent, list := range c.AgentAccess {
		if err := schemas.ValidateAgentID(agent); err != nil {
			return fmt.Errorf("scopes.agentAccess: %w", err)
		}
		clean := make([]string, 0, len(list))
		for _, s := range list {
			if err := schemas.ValidateScope(s); err != nil {
				return fmt.Errorf("scopes.agentAccess.%s: %w", agent, err)
			}
			if _, ok := defs[s]; !ok && !isBuiltin(s) {
				warnings = append(warnings, fmt.Sprintf("scopes.agentAccess.%s names undefined scope %q", agent, s))
			}
			clean = append(clean, s)
		}
		slices.Sort(clean)
		access[agent] = slices.Compact(clean)
	}
	slices.Sort(warnings)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.def, m.defs, m.access, m.warnings = def, defs, access, warnings
	return nil
}

func isBuiltin(scope string) bool {
	typ, _ := Parse(scope)
	return typ != ""
}

// Warnings lists configuration problems that do not stop clawmem.
func (m *Manager) Warnings() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.warnings)
}

// Accessible returns the scopes agentID may read and write, sorted: its
// explicit agentAccess list, else global and agent:<id>. An invalid agent id
// gets nothing.
func (m *Manager) Accessible(agentID string) []string {
	if schemas.ValidateAgentID(agentID) != nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if list, ok := m.access[agentID]; ok {
		return slices.Clone(list)
	}
	return []string{AgentScope(agentID), schemas.GlobalScope}
}

// Filter is the store filter for agentID (nothing for an invalid id).
func (m *Manager) Filter(agentID string) engine.ScopeFilter {
	return engine.InScopes(m.Accessible(agentID)...)
}

// IsAccessible reports whether agentID may use scope.
func (m *Manager) IsAccessible(scope, agentID string) bool {
	return slices.Contains(m.Accessible(agentID), scope)
}

// Default returns where agentID's new memories go: its own agent scope if
// it may use it, else the configured default.
func (m *Manager) Default(agentID string) string {
	own := AgentScope(agentID)
	if m.IsAccessible(own, agentID) {
		return own
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.def
}

// Validate checks a scope's format and that it is defined or of a built-in type.
func (m *Manager) Validate(scope string) error {
	if err := schemas.ValidateScope(scope); err != nil {
		return err
	}
	if isBuiltin(scope) || scope == schemas.GlobalScope {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, ok := m.defs[scope]; ok {
		return nil
	}
	return fmt.Errorf("%w %q: define it in scopes.definitions or use global, agent:<id>, custom:<name>, project:<id> or user:<id>", ErrUnknownScope, scope)
}

// Resolve picks the scope for a write by agentID: the requested one (which
// must be valid and accessible) or the agent's default.
func (m *Manager) Resolve(agentID, requested string) (string, error) {
	if err := schemas.ValidateAgentID(agentID); err != nil {
		return "", err
	}
	if requested == "" {
		return m.Default(agentID), nil
	}
	if err := m.Validate(requested); err != nil {
		return "", err
	}
	if !m.IsAccessible(requested, agentID) {
		return "", fmt.Errorf("%w: agent %q may not use scope %q", engine.ErrScopeDenied, agentID, requested)
	}
	return requested, nil
}

// All lists every defined scope, sorted.
func (m *Manager) All() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.defs))
}

// Definition returns a scope's definition.
func (m *Manager) Definition(scope string) (Definition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.defs[scope]
	return d, ok
}

// AddDefinition defines (or redefines) a scope.
func (m *Manager) AddDefinition(scope string, d Definition) error {
	if err := schemas.ValidateScope(scope); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.defs[scope] = d
	return nil
}

// RemoveDefinition removes a scope's definition; global and the default
// scope cannot be removed.
func (m *Manager) RemoveDefinition(scope string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if scope == schemas.GlobalScope {
		return false, errors.New("the global scope cannot be removed")
	}
	if scope == m.def {
		return false, fmt.Errorf("scope %q is the default scope; change scopes.default first", scope)
	}
	_, ok := m.defs[scope]
	delete(m.defs, scope)
	return ok, nil
}

// SetAgentAccess gives agentID exactly these scopes.
func (m *Manager) SetAgentAccess(agentID string, scopes []string) error {
	c := m.Export()
	if c.AgentAccess == nil {
		c.AgentAccess = map[string][]string{}
	}
	c.AgentAccess[agentID] = slices.Clone(scopes)
	return m.load(c)
}

// RemoveAgentAccess returns agentID to the default access.
func (m *Manager) RemoveAgentAccess(agentID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.access[agentID]
	delete(m.access, agentID)
	return ok
}

// Export returns the configuration as it stands.
func (m *Manager) Export() Config {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := Config{Default: m.def, Definitions: maps.Clone(m.defs), AgentAccess: map[string][]string{}}
	for a, l := range m.access {
		c.AgentAccess[a] = slices.Clone(l)
	}
	return c
}

// Import replaces the configuration; on error nothing changes.
func (m *Manager) Import(c Config) error { return m.load(c) }

// MarshalJSON exports the configuration.
func (m *Manager) MarshalJSON() ([]byte, error) { return json.Marshal(m.Export()) }

// Stats summarises the configuration.
func (m *Manager) Stats() Stats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st := Stats{TotalScopes: len(m.defs), AgentsWithCustomAccess: len(m.access), ScopesByType: map[string]int{}}
	for s := range m.defs {
		typ, _ := Parse(s)
		if typ == "" {
			typ = "other"
		}
		st.ScopesByType[typ]++
	}
	return st
}
