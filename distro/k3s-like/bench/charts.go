package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The charts' colours: A blue, B orange.
var (
	colourA = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colourB = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// series is one line of a chart: a figure of A's or B's runs, by scale.
type series struct {
	label  string
	kind   string // A or B
	get    func(result) float64
	dashed bool
}

// drawCharts writes rss.svg (RSS after the workload, total and anonymous)
// and cpu.svg (CPU seconds, exec → every Pod bound) into dir, A and B by
// Pods: the medians joined, whiskers from the lowest to the highest run.
// It returns their file names.
func drawCharts(dir string, rs []result) ([]string, error) {
	scales := byScale(rs)
	rssTotal := func(r result) float64 { return float64(r.rssLoaded) / 1024 }
	rssAnon := func(r result) float64 { return float64(r.anonLoaded) / 1024 }
	cpuTotal := func(r result) float64 { return r.cpuLoaded.Seconds() }
	charts := []struct {
		file, title, y string
		series         []series
	}{
		{"rss.svg", "RSS after the workload vs Pods", "RSS (MiB)", []series{
			{"A (k3s-like), total", "A", rssTotal, false},
			{"B (4 processes), total", "B", rssTotal, false},
			{"A, anonymous", "A", rssAnon, true},
			{"B, anonymous", "B", rssAnon, true},
		}},
		{"cpu.svg", "CPU seconds (exec → all Pods bound) vs Pods", "CPU (s, utime+stime)", []series{
			{"A (k3s-like)", "A", cpuTotal, false},
			{"B (4 processes)", "B", cpuTotal, false},
		}},
	}
	var files []string
	for _, ch := range charts {
		p := podsPlot(ch.title, ch.y, scales)
		for _, se := range ch.series {
			if err := addSeries(p, se, scales); err != nil {
				return nil, err
			}
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, ch.file)); err != nil {
			return nil, fmt.Errorf("%s: %w", ch.file, err)
		}
		files = append(files, ch.file)
	}
	return files, nil
}

// podsPlot is a chart of a figure y against the scales' Pods (a log scale
// for more than one).
func podsPlot(title, y string, scales []scaleRuns) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "Pods (log scale)"
	p.Y.Label.Text = y
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for _, s := range scales {
		ticks = append(ticks, plot.Tick{Value: float64(s.scale.pods()), Label: strconv.Itoa(s.scale.pods())})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if len(scales) > 1 {
		p.X.Scale = plot.LogScale{}
	}
	lo, hi := float64(scales[0].scale.pods()), float64(scales[0].scale.pods())
	for _, s := range scales {
		lo, hi = min(lo, float64(s.scale.pods())), max(hi, float64(s.scale.pods()))
	}
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	return p
}

// addSeries adds one side's medians to p, joined, with whiskers from the
// lowest to the highest run, and its legend.
func addSeries(p *plot.Plot, se series, scales []scaleRuns) error {
	// A a little left of the scale, B a little right, so that the
	// whiskers do not overlap.
	shift := map[string]float64{"A": 1 / 1.03, "B": 1.03}[se.kind]
	col := map[string]color.Color{"A": colourA, "B": colourB}[se.kind]
	var pts errPoints
	for _, s := range scales {
		runs := s.a
		if se.kind == "B" {
			runs = s.b
		}
		vs := values(runs, se.get)
		if len(vs) == 0 {
			continue
		}
		m := med(vs)
		pts.xys = append(pts.xys, plotter.XY{X: float64(s.scale.pods()) * shift, Y: m})
		pts.errs = append(pts.errs, struct{ Low, High float64 }{m - slices.Min(vs), slices.Max(vs) - m})
		p.Y.Max = max(p.Y.Max, slices.Max(vs)*1.1)
	}
	line, err := plotter.NewLine(pts.xys)
	if err != nil {
		return err
	}
	line.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1.5)}
	dots, err := plotter.NewScatter(pts.xys)
	if err != nil {
		return err
	}
	dots.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	whiskers, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	whiskers.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1)}
	if se.dashed {
		line.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		dots.GlyphStyle.Shape = draw.BoxGlyph{}
	}
	p.Add(line, dots, whiskers)
	p.Legend.Add(se.label, line, dots)
	return nil
}

// errPoints are a series' medians with their min–max as Y errors
// (plotter.NewYErrorBars takes both from one value).
type errPoints struct {
	xys  plotter.XYs
	errs plotter.YErrors
}

func (e errPoints) Len() int                        { return len(e.xys) }
func (e errPoints) XY(i int) (float64, float64)     { return e.xys.XY(i) }
func (e errPoints) YError(i int) (float64, float64) { return e.errs.YError(i) }
