package harness

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The scaling curves (workloads S1-S3, issue 25): per sweep, resident memory and publish
// p99 of every system at each point, a table, a plot, and a note where a curve bends.

// sweepOrder is the report's order of the sweeps, with the slug of their plot files.
var sweepOrder = []struct{ name, slug string }{
	{sweepTopics.String(), "topics"}, {sweepSubs.String(), "subscriptions"}, {sweepProducers.String(), "producers"},
}

// scalePoint is one system's medians at one point of a sweep; ok is false when every
// block there failed.
type scalePoint struct {
	x        int
	rss, p99 float64 // MiB, ms
	rate     float64 // acknowledged msg/s
	ok       bool
}

// scaleSeries gathers a sweep's points per system, in reportSystems order.
func scaleSeries(res *Results, sweep string) (map[string][]scalePoint, []string) {
	out := map[string][]scalePoint{}
	var systems []string
	for _, s := range res.Specs {
		if s.Sweep != sweep {
			continue
		}
		for _, sys := range systemsOf(res.Blocks, s.Name) {
			bs := blocksOf(res.Blocks, s.Name, sys)
			pt := scalePoint{x: s.Point, ok: len(bs) > 0}
			if pt.ok {
				pt.rss = medianOf(bs, func(b Block) float64 { return float64(b.ServerHWMBytes) / (1 << 20) })
				pt.p99 = medianOf(bs, func(b Block) float64 { return b.PubP99 }) / 1000
				pt.rate = medianOf(bs, func(b Block) float64 { return b.MsgPerS })
			}
			out[sys] = append(out[sys], pt)
		}
	}
	for _, sys := range reportSystems {
		if pts, ok := out[sys]; ok {
			slices.SortFunc(pts, func(a, b scalePoint) int { return a.x - b.x })
			systems = append(systems, sys)
		}
	}
	return out, systems
}

// bendNote says where a log-log curve changes slope by half a decade per decade or more,
// with the growth of each segment, or where the system stopped working.
func bendNote(pts []scalePoint, val func(scalePoint) float64) string {
	var notes []string
	for i, p := range pts {
		if !p.ok {
			notes = append(notes, fmt.Sprintf("fails at %d", p.x))
			return strings.Join(notes, "; ")
		}
		if i < 2 || !pts[i-1].ok || !pts[i-2].ok {
			continue
		}
		a, b, c := pts[i-2], pts[i-1], p
		s1, s2 := slope(a.x, b.x, val(a), val(b)), slope(b.x, c.x, val(b), val(c))
		if math.IsNaN(s1) || math.IsNaN(s2) || math.Abs(s2-s1) < 0.5 {
			continue
		}
		notes = append(notes, fmt.Sprintf("bends at %d: %.2fx for %dx before, %.2fx for %dx after (log-log slope %.2f then %.2f)",
			b.x, val(b)/val(a), b.x/a.x, val(c)/val(b), c.x/b.x, s1, s2))
	}
	return strings.Join(notes, "; ")
}

func slope(x0, x1 int, y0, y1 float64) float64 {
	if y0 <= 0 || y1 <= 0 || x0 <= 0 || x1 <= x0 {
		return math.NaN()
	}
	return math.Log(y1/y0) / math.Log(float64(x1)/float64(x0))
}

// scalingMarkdown writes the scaling section: one table and one plot per sweep run.
func scalingMarkdown(w *strings.Builder, res *Results, pngPath string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	first := true
	for _, sw := range sweepOrder {
		series, systems := scaleSeries(res, sw.name)
		if len(systems) == 0 {
			continue
		}
		if first {
			p("\n## Scaling curves\n\nResident memory (VmHWM, MiB) and publish p99 (ms) as one dimension grows, fsync before ack, medians over blocks; `acked/s` shows whether the system kept up with the offered rate. A note marks where a curve's log-log slope changes by 0.5 or more, or where a system stopped working; why it bends is discussed in docs/bench-compare.md's notes.\n\n")
			first = false
		}
		var xs []int
		for _, s := range res.Specs {
			if s.Sweep == sw.name && !slices.Contains(xs, s.Point) {
				xs = append(xs, s.Point)
			}
		}
		slices.Sort(xs)
		p("### %s\n\n", sw.name)
		p("| system | metric |")
		for _, x := range xs {
			p(" %d |", x)
		}
		p(" note |\n|---|---|")
		for range xs {
			p("---|")
		}
		p("---|\n")
		for _, sys := range systems {
			pts := series[sys]
			row := func(metric string, val func(scalePoint) float64, format func(float64) string, note string) {
				p("| %s | %s |", sys, metric)
				for _, x := range xs {
					i := slices.IndexFunc(pts, func(pt scalePoint) bool { return pt.x == x })
					switch {
					case i < 0:
						p(" |")
					case !pts[i].ok:
						p(" failed |")
					default:
						p(" %s |", format(val(pts[i])))
					}
				}
				p(" %s |\n", note)
			}
			row("peak RSS MiB", func(pt scalePoint) float64 { return pt.rss }, num, bendNote(pts, func(pt scalePoint) float64 { return pt.rss }))
			row("pub p99 ms", func(pt scalePoint) float64 { return pt.p99 }, num, bendNote(pts, func(pt scalePoint) float64 { return pt.p99 }))
			row("acked/s", func(pt scalePoint) float64 { return pt.rate }, num, "")
		}
		p("\n![%s: memory and publish p99](%s)\n\n", sw.name, filepath.Base(scalingPNG(pngPath, sw.slug)))
	}
}

// scalingPNG is the plot file of one sweep next to the main plot.
func scalingPNG(pngPath, slug string) string {
	return strings.TrimSuffix(pngPath, ".png") + "-" + slug + ".png"
}

// PlotScaling writes one PNG per sweep run: memory and publish p99 against the sweep's
// dimension, log-log, one line per system.
func PlotScaling(res *Results, pngPath string) error {
	for _, sw := range sweepOrder {
		series, systems := scaleSeries(res, sw.name)
		if len(systems) == 0 {
			continue
		}
		mem := scalePlot("peak resident memory (MiB)", sw.name)
		lat := scalePlot("publish p99 (ms)", sw.name)
		for i, sys := range systems {
			col := palette[i%len(palette)]
			var m, l plotter.XYs
			for _, pt := range series[sys] {
				if pt.ok && pt.rss > 0 {
					m = append(m, plotter.XY{X: float64(pt.x), Y: pt.rss})
				}
				if pt.ok && pt.p99 > 0 {
					l = append(l, plotter.XY{X: float64(pt.x), Y: pt.p99})
				}
			}
			for _, c := range []struct {
				p   *plot.Plot
				pts plotter.XYs
			}{{mem, m}, {lat, l}} {
				if len(c.pts) == 0 {
					continue
				}
				line, sc, err := plotter.NewLinePoints(c.pts)
				if err != nil {
					return err
				}
				line.Color, sc.Color = col, col
				sc.Shape = draw.CircleGlyph{}
				c.p.Add(line, sc)
				c.p.Legend.Add(sys, line, sc)
			}
		}
		img := vgimg.New(13*vg.Inch, 5*vg.Inch)
		dc := draw.New(img)
		plots := [][]*plot.Plot{{mem, lat}}
		canvases := plot.Align(plots, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadY: vg.Points(8)}, dc)
		for j, pl := range plots[0] {
			ensureAxes(pl)
			pl.Draw(canvases[0][j])
		}
		f, err := os.Create(scalingPNG(pngPath, sw.slug))
		if err != nil {
			return err
		}
		if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func scalePlot(y, x string) *plot.Plot {
	p := plot.New()
	p.Title.Text = y + " vs " + x
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// ensureAxes keeps a log plot with nothing on it drawable (a sweep where every block failed).
func ensureAxes(p *plot.Plot) {
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		switch {
		case math.IsInf(ax.Min, 0) || math.IsInf(ax.Max, 0) || ax.Min <= 0:
			ax.Min, ax.Max = 1, 10
			if !strings.HasSuffix(p.Title.Text, " - no data") {
				p.Title.Text += " - no data"
			}
		case ax.Max <= ax.Min: // one point
			ax.Min, ax.Max = ax.Min/2, ax.Max*2
		}
	}
}
