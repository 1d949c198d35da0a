package eval

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/clawmem/clawmem/internal/textutil"
)

// WriteText prints the report for a person: the figures table, the
// auto-recall and latency lines, and the misses with their score sources.
func (rep Report) WriteText(w io.Writer, mode, rerank, model string) error {
	fmt.Fprintf(w, "%d conversations, %d memories, %d questions with evidence (retrieval %s, rerank %s, embedding %s)\n\n",
		rep.Conversations, rep.Memories, rep.Overall.Questions, mode, rerank, model)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tquestions\trecall@1\trecall@5\trecall@10\thit@10\tMRR\t")
	row := func(name string, f Figures) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, f.Questions, f.Recall["@1"], f.Recall["@5"], f.Recall["@10"], f.Hit["@10"], f.MRR)
	}
	row("overall", rep.Overall)
	for _, c := range Categories {
		if f, ok := rep.ByCategory[c]; ok {
			row(c, f)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nauto-recall: %d memories injected, %.1f%% evidence or next to it; evidence shown for %.1f%% of questions; "+
		"empty for %.1f%% of %d questions about things never said\n",
		rep.Context.Injected, 100*rep.Context.Precision, 100*rep.Context.EvidenceShown, 100*rep.Context.NoneEmpty, rep.Context.NoneQuestions)
	fmt.Fprintf(w, "query latency: p50 %.2f ms, p99 %.2f ms\n", rep.LatencyP50, rep.LatencyP99)
	for i, m := range rep.Misses {
		fmt.Fprintf(w, "\nmiss %d: [%s %s %s] %q (recall %.2f)\n", i+1, m.Conversation, m.Question.ID, m.Question.Category, m.Question.Text, m.Recall)
		for _, e := range m.Evidence {
			fmt.Fprintf(w, "  evidence %s %s\n", rankText(e.Rank), textutil.OneLine(e.Text, 110))
			if e.Sources != nil {
				fmt.Fprintf(w, "           %s\n", e.Sources)
			}
		}
		for _, r := range m.Recalled {
			fmt.Fprintf(w, "  got #%d  %s %s\n", r.Rank, r.Turn, textutil.OneLine(r.Text, 100))
			fmt.Fprintf(w, "           %s\n", r.Sources)
		}
	}
	return nil
}

func rankText(r int) string {
	if r == 0 {
		return "(not recalled)"
	}
	return fmt.Sprintf("(#%d)", r)
}
