package portable

// Report sums up an import. Failures lists every failed row; Skips the
// skipped ones, except rows skipped because their id exists when those are
// expected (a resumed import), which are only counted.
type Report struct {
	Imported   int      `json:"imported"`
	Skipped    int      `json:"skipped"`
	Failed     int      `json:"failed"`
	Exists     int      `json:"exists"`
	Duplicates int      `json:"duplicates"`
	Failures   []Result `json:"failures"`
	Skips      []Result `json:"skips,omitempty"`
	// QuietExists leaves rows skipped as existing out of Skips.
	QuietExists bool `json:"-"`
}

// Add counts a batch's results.
func (r *Report) Add(results []Result) {
	for _, res := range results {
		switch res.Status {
		case Imported:
			r.Imported++
		case Failed:
			r.Failed++
			r.Failures = append(r.Failures, res)
		case Skipped:
			r.Skipped++
			if res.Reason == ReasonExists {
				r.Exists++
				if r.QuietExists {
					continue
				}
			} else {
				r.Duplicates++
			}
			r.Skips = append(r.Skips, res)
		}
	}
}

// Total is how many rows the report covers.
func (r *Report) Total() int { return r.Imported + r.Skipped + r.Failed }
