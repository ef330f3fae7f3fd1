package perf

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ScrapeSum fetches a Prometheus text endpoint and returns, for each name, the sum of its
// samples over all label sets (0 when absent). perf uses it to read the bookie's journal
// grouping histogram (_sum / _count = entries per fsync) before and after a run.
func ScrapeSum(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("perf: metrics url: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("perf: scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("perf: scraping %s: %s", url, resp.Status)
	}
	want := map[string]bool{}
	out := map[string]float64{}
	for _, n := range names {
		want[n] = true
		out[n] = 0
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if i := strings.IndexByte(line, '{'); i >= 0 && i < len(name) {
			name = line[:i]
			if j := strings.LastIndexByte(line, '}'); j > i {
				rest = strings.TrimSpace(line[j+1:])
				ok = true
			}
		}
		if !ok || !want[name] {
			continue
		}
		val, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perf: reading %s: %w", url, err)
	}
	return out, nil
}
