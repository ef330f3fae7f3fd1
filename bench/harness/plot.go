package harness

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// curvePoint is one variant's median throughput and latency for one system.
type curvePoint struct{ x, pub, e2e float64 }

// curves groups the 1 KiB single-partition latency points (W3 rates and W2 max) by
// "system durability".
func curves(res *Results) (map[string][]curvePoint, []string) {
	out := map[string][]curvePoint{}
	var keys []string
	for _, s := range res.Specs {
		if s.MsgSize != 1024 || s.Partitions != 1 || s.BacklogBytes > 0 || (s.Workload != "W2" && s.Workload != "W3") {
			continue
		}
		for _, sys := range systemsOf(res.Blocks, s.Name) {
			bs := blocksOf(res.Blocks, s.Name, sys)
			if len(bs) == 0 {
				continue
			}
			pt := curvePoint{
				x:   medianOf(bs, func(b Block) float64 { return b.MsgPerS }),
				pub: medianOf(bs, func(b Block) float64 { return b.PubP99 }) / 1000,
				e2e: medianOf(bs, func(b Block) float64 { return b.E2EP99 }) / 1000,
			}
			if pt.x <= 0 || pt.pub <= 0 {
				continue
			}
			k := fmt.Sprintf("%s %s", sys, s.Durability)
			if _, ok := out[k]; !ok {
				keys = append(keys, k)
			}
			out[k] = append(out[k], pt)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		slices.SortFunc(out[k], func(a, b curvePoint) int {
			switch {
			case a.x < b.x:
				return -1
			case a.x > b.x:
				return 1
			}
			return 0
		})
	}
	return out, keys
}

var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// Plot writes publish p99 (solid) and e2e p99 (dashed) against achieved msg/s, log-log.
func Plot(res *Results, path string) error {
	cs, keys := curves(res)
	p := plot.New()
	p.Title.Text = "p99 latency vs throughput, 1 KiB, 1 partition (solid: publish, dashed: end-to-end)"
	p.X.Label.Text = "acknowledged msg/s"
	p.Y.Label.Text = "p99 latency (ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	if len(keys) == 0 {
		// Keep the axes valid so an empty run still renders.
		pts := plotter.XYs{{X: 1, Y: 1}, {X: 10, Y: 10}}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Radius = 0
		p.Add(s)
		p.Title.Text += " - no data"
	}
	for i, k := range keys {
		col := palette[i%len(palette)]
		var pub, e2e plotter.XYs
		for _, pt := range cs[k] {
			pub = append(pub, plotter.XY{X: pt.x, Y: pt.pub})
			if pt.e2e > 0 {
				e2e = append(e2e, plotter.XY{X: pt.x, Y: pt.e2e})
			}
		}
		l, sc, err := plotter.NewLinePoints(pub)
		if err != nil {
			return err
		}
		l.Color, sc.Color = col, col
		sc.Shape = draw.CircleGlyph{}
		p.Add(l, sc)
		p.Legend.Add(k+" publish", l, sc)
		if len(e2e) > 0 {
			l2, sc2, err := plotter.NewLinePoints(e2e)
			if err != nil {
				return err
			}
			l2.Color, sc2.Color = col, col
			l2.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			sc2.Shape = draw.TriangleGlyph{}
			p.Add(l2, sc2)
			p.Legend.Add(k+" e2e", l2, sc2)
		}
	}
	return p.Save(9*vg.Inch, 6*vg.Inch, path)
}
