package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// A chart is a series drawn as an SVG bar chart, on the server: no script,
// and nothing for the page's Content-Security-Policy to allow (the colours
// come from the stylesheet's classes).
type chart struct {
	ID       string // unique on the page: the ids of its title and description start with it
	Title    string // what is counted, per bucket: "Notifications per day"
	Points   []perch.MetricPoint
	Interval string // perch.IntervalHour or perch.IntervalDay: how the buckets are labelled
}

// The chart's drawing area, in the units of its viewBox: the plot, with
// room on the left for the values and below for the times.
const (
	chartWidth, chartHeight = 400, 200
	plotLeft, plotTop       = 40, 10
	plotRight, plotBottom   = 392, 176
	chartXLabels            = 6  // at most this many times under the bars
	dayLine                 = 13 // hourly charts name the day in a second line of labels, this much lower
)

// hourSteps are the hours between an hourly chart's labels: a divisor of
// the day, so that labels fall on the same hours every day.
var hourSteps = []int{1, 2, 3, 4, 6, 12, 24}

// Total is the sum of the series.
func (c chart) Total() int64 {
	var n int64
	for _, p := range c.Points {
		n += p.Value
	}
	return n
}

// label names a bucket as a person reads it: "22 Nov" for a day, "22 Nov
// 15:00" for an hour (in UTC, as the buckets are).
func (c chart) label(t time.Time) string {
	t = t.UTC()
	if c.Interval != perch.IntervalHour {
		return t.Format("2 Jan")
	}
	return t.Format("2 Jan 15:04")
}

// labelled reports whether the i-th bucket is labelled under the axis: every
// so many days from the first, or, by hour, the hours of the day that are a
// multiple of so many.
func (c chart) labelled(i int) bool {
	n := len(c.Points)
	if c.Interval != perch.IntervalHour {
		return i%((n+chartXLabels-1)/chartXLabels) == 0
	}
	step := hourSteps[len(hourSteps)-1]
	for _, h := range hourSteps {
		if (n+h-1)/h <= chartXLabels {
			step = h
			break
		}
	}
	return c.Points[i].T.UTC().Hour()%step == 0
}

// Description says in words what the chart shows, for those who do not see
// it: the range, the total and the highest bucket.
func (c chart) Description() string {
	if len(c.Points) == 0 {
		return "No data."
	}
	first, last := c.Points[0], c.Points[len(c.Points)-1]
	s := "From " + c.label(first.T) + " to " + c.label(last.T) + " (UTC): "
	total := c.Total()
	if total == 0 {
		return s + "none."
	}
	peak := first
	for _, p := range c.Points {
		if p.Value > peak.Value {
			peak = p
		}
	}
	return s + thousands(total) + " in all; the most, " + thousands(peak.Value) + ", in the " + c.Interval + " of " + c.label(peak.T) + "."
}

// niceCeiling is the axis's top: the least 1, 2 or 5 times a power of ten
// that is at least v (and at least 1).
func niceCeiling(v int64) int64 {
	if v <= 1 {
		return 1
	}
	step := int64(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*step >= v {
			return m * step
		}
	}
	return 10 * step
}

// SVG draws the chart: a bar per bucket, each with its value as a tooltip,
// the axis's values at 0, half and top, and up to chartXLabels times (by
// hour, the time, with the day under the first and under midnight). The
// <svg> is an image whose name is the title and whose description says what
// it shows.
func (c chart) SVG() template.HTML {
	esc := template.HTMLEscapeString
	var top int64
	for _, p := range c.Points {
		top = max(top, p.Value)
	}
	top = niceCeiling(top)
	plotW, plotH := float64(plotRight-plotLeft), float64(plotBottom-plotTop)
	y := func(v int64) float64 { return plotBottom - float64(v)/float64(top)*plotH }

	hourly := c.Interval == perch.IntervalHour
	height := chartHeight
	if hourly {
		height += dayLine
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" xmlns="http://www.w3.org/2000/svg">`,
		chartWidth, height, esc(c.ID), esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, esc(c.ID), esc(c.Title), esc(c.ID), esc(c.Description()))

	// The value axis: lines at 0, half and the top, labelled. Half of a
	// top of 1 is no whole number, so it is left out.
	ticks := []int64{0, top}
	if top%2 == 0 {
		ticks = []int64{0, top / 2, top}
	}
	for _, v := range ticks {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, plotLeft, plotRight, num(y(v)), num(y(v)))
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, plotLeft-6, num(y(v)), short(v))
	}

	// The bars, each a band of the plot's width with a gap around it.
	n := len(c.Points)
	if n > 0 {
		band := plotW / float64(n)
		gap := min(band*0.2, 4)
		dayNamed := false
		for i, p := range c.Points {
			x := plotLeft + float64(i)*band
			h := plotBottom - y(p.Value)
			fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s"><title>%s: %s</title></rect>`,
				num(x+gap/2), num(y(p.Value)), num(max(band-gap, 0.5)), num(h), esc(c.label(p.T)), thousands(p.Value))
			if !c.labelled(i) {
				continue
			}
			if !hourly {
				fmt.Fprintf(&b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>`, num(x+band/2), plotBottom+16, esc(c.label(p.T)))
				continue
			}
			fmt.Fprintf(&b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>`, num(x+band/2), plotBottom+16, p.T.UTC().Format("15:04"))
			if !dayNamed || p.T.UTC().Hour() == 0 {
				fmt.Fprintf(&b, `<text class="axis day" x="%s" y="%d" text-anchor="middle">%s</text>`, num(x+band/2), plotBottom+16+dayLine, p.T.UTC().Format("2 Jan"))
				dayNamed = true
			}
		}
	}
	b.WriteString(`</svg>`)
	// Every piece of text above is escaped; the rest is numbers.
	return template.HTML(b.String())
}

// num writes a coordinate with at most two decimals.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

// short writes an axis value: 950, 1.5k, 2M.
func short(v int64) string {
	switch {
	case v >= 1_000_000:
		return strconv.FormatFloat(float64(v)/1e6, 'f', -1, 64) + "M"
	case v >= 1000:
		return strconv.FormatFloat(float64(v)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatInt(v, 10)
}

// thousands writes a count with commas between thousands: 12,345.
func thousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
