package lessons

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
	"github.com/clawmem/clawmem/workers/work"
)

// lessonItems turns a distillation into store-worker items for agent: dedup
// at dedup, metadata naming the session, the cited messages, tags,
// keywords, distiller and model. Source ids are derived from the agent,
// session and lesson text, so a repeated distillation stores nothing new.
func lessonItems(agent, session string, res distill.Result, msgs []distill.Message, dedup float64) []schemas.CaptureItem {
	entryIDs := map[int]string{}
	for _, m := range msgs {
		if m.EntryID != "" {
			entryIDs[m.N] = m.EntryID
		}
	}
	items := make([]schemas.CaptureItem, 0, len(res.Lessons))
	for _, l := range res.Lessons {
		var ids []int
		var entries []string
		for _, ev := range l.Evidence {
			for _, n := range ev.MessageIDs {
				ids = append(ids, n)
				if e, ok := entryIDs[n]; ok {
					entries = append(entries, e)
				}
			}
		}
		meta, _ := json.Marshal(map[string]any{
			"source": "distill", "sessionId": session, "messageIds": ids, "entryIds": entries,
			"evidence": l.Evidence, "tags": l.Tags, "keywords": l.Keywords, "keywordsZh": l.KeywordsZh,
			"distiller": res.Distiller, "model": res.Model,
		})
		items = append(items, schemas.CaptureItem{
			SourceID:   purge.SourceID(agent, session, purge.KindLesson+l.Text),
			Text:       l.Text,
			Category:   l.Category,
			Importance: l.Importance,
			Dedup:      dedup,
			Metadata:   meta,
		})
	}
	return items
}

// publishLessons hands lessons to their writers on the lessons subjects.
func publishLessons(ctx context.Context, js jetstream.JetStream, route work.Route, agent, source, msgID string, items []schemas.CaptureItem) error {
	if len(items) == 0 {
		return nil
	}
	if err := route.Publish(ctx, js, schemas.WorkLessons, agent, source, msgID, items); err != nil {
		return fmt.Errorf("publish lessons: %w", err)
	}
	return nil
}
