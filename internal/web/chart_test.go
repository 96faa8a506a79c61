package web

import (
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// svgNode is an element of a drawn chart, as encoding/xml reads it.
type svgNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all are the elements named name under n, in document order.
func (n svgNode) all(name string) []svgNode {
	var out []svgNode
	for _, c := range n.Children {
		if c.XMLName.Local == name {
			out = append(out, c)
		}
		out = append(out, c.all(name)...)
	}
	return out
}

// parseChart reads a chart's SVG, failing the test unless it is well-formed
// XML whose root is <svg>.
func parseChart(t *testing.T, c chart) svgNode {
	t.Helper()
	var root svgNode
	if err := xml.Unmarshal([]byte(c.SVG()), &root); err != nil {
		t.Fatalf("the chart is not well-formed: %v\n%s", err, c.SVG())
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("the root is <%s>", root.XMLName.Local)
	}
	return root
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is no number", s)
	}
	return f
}

func days(values ...int64) []perch.MetricPoint {
	start := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	points := make([]perch.MetricPoint, len(values))
	for i, v := range values {
		points[i] = perch.MetricPoint{T: start.AddDate(0, 0, i), Value: v}
	}
	return points
}

func TestChartDrawsABarPerBucketToScale(t *testing.T) {
	t.Parallel()
	c := chart{ID: "chart-signups", Title: "Sign-ups per day", Interval: perch.IntervalDay, Points: days(3, 0, 10, 5, 1200, 7, 2)}
	root := parseChart(t, c)

	// An image named by its title and described in words.
	if root.attr("role") != "img" || root.attr("aria-labelledby") != "chart-signups-title chart-signups-desc" {
		t.Errorf("the svg is role %q labelled by %q", root.attr("role"), root.attr("aria-labelledby"))
	}
	titles, descs := root.all("title"), root.all("desc")
	if len(descs) != 1 || descs[0].attr("id") != "chart-signups-desc" {
		t.Fatalf("descriptions: %+v", descs)
	}
	if titles[0].attr("id") != "chart-signups-title" || titles[0].Text != "Sign-ups per day" {
		t.Errorf("the first title is %+v", titles[0])
	}
	want := "From 16 Nov to 22 Nov (UTC): 1,227 in all; the most, 1,200, in the day of 20 Nov."
	if descs[0].Text != want {
		t.Errorf("description %q, want %q", descs[0].Text, want)
	}

	// A bar per bucket, left to right, each with its value as a tooltip,
	// its height in proportion: 1,200 is under the axis's top, 2,000.
	bars := root.all("rect")
	if len(bars) != len(c.Points) {
		t.Fatalf("%d bars for %d points", len(bars), len(c.Points))
	}
	full := float64(plotBottom - plotTop)
	for i, bar := range bars {
		v := c.Points[i].Value
		h, y := float(t, bar.attr("height")), float(t, bar.attr("y"))
		if want := float64(v) / 2000 * full; h < want-0.01 || h > want+0.01 {
			t.Errorf("bar %d (%d) is %v high, want %v", i, v, h, want)
		}
		if y+h < plotBottom-0.01 || y+h > plotBottom+0.01 {
			t.Errorf("bar %d does not stand on the axis: y %v + height %v", i, y, h)
		}
		if i > 0 && float(t, bar.attr("x")) <= float(t, bars[i-1].attr("x")) {
			t.Errorf("bar %d is not right of bar %d", i, i-1)
		}
		tip := bar.all("title")
		if len(tip) != 1 || tip[0].Text != c.label(c.Points[i].T)+": "+thousands(v) {
			t.Errorf("bar %d's tooltip is %+v", i, tip)
		}
	}

	// The value axis is labelled at 0, half and the top; the times below.
	var labels []string
	for _, text := range root.all("text") {
		labels = append(labels, text.Text)
	}
	got := strings.Join(labels, "|")
	if !strings.HasPrefix(got, "0|1k|2k|") || !strings.Contains(got, "16 Nov") || !strings.Contains(got, "22 Nov") {
		t.Errorf("labels %s", got)
	}
}

func TestChartOfNothing(t *testing.T) {
	t.Parallel()
	c := chart{ID: "c", Title: "Notifications per hour", Interval: perch.IntervalHour}
	if root := parseChart(t, c); len(root.all("rect")) != 0 {
		t.Error("bars without points")
	}
	if c.Description() != "No data." {
		t.Errorf("description %q", c.Description())
	}
	// All zero: flat bars under an axis of 0 to 1, said as none.
	c.Points = days(0, 0, 0)
	for _, bar := range parseChart(t, c).all("rect") {
		if bar.attr("height") != "0" {
			t.Errorf("a bar of 0 is %s high", bar.attr("height"))
		}
	}
	if d := c.Description(); !strings.HasSuffix(d, ": none.") {
		t.Errorf("description %q", d)
	}
}

func TestChartLabelsHoursAndEscapesText(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	var points []perch.MetricPoint
	for i := range 25 {
		points = append(points, perch.MetricPoint{T: start.Add(time.Duration(i) * time.Hour), Value: int64(i)})
	}
	c := chart{ID: `x"><script>`, Title: `Runs <per> hour & more`, Interval: perch.IntervalHour, Points: points}
	svg := string(c.SVG())
	if strings.Contains(svg, "<script>") || strings.Contains(svg, "<per>") {
		t.Fatalf("text is not escaped: %s", svg)
	}
	root := parseChart(t, c)
	if got := root.all("title")[0].Text; got != c.Title {
		t.Errorf("title %q", got)
	}
	// 25 hours from 20:00: labels every 6 hours, on the hours of the day
	// that are multiples of 6, the day under the first and under midnight.
	var times, days []string
	for _, text := range root.all("text") {
		switch {
		case strings.Contains(text.Text, ":"):
			times = append(times, text.Text)
		case text.attr("class") == "axis day":
			days = append(days, text.Text)
		}
	}
	if got := strings.Join(times, " "); got != "00:00 06:00 12:00 18:00" {
		t.Errorf("time labels %s", got)
	}
	if got := strings.Join(days, " "); got != "22 Nov" {
		t.Errorf("day labels %s", got)
	}

	// 12 hours from 08:00: every 2 hours, the day under the first.
	c = chart{ID: "c", Title: "t", Interval: perch.IntervalHour, Points: points[12:24]}
	times, days = nil, nil
	for _, text := range parseChart(t, c).all("text") {
		switch {
		case strings.Contains(text.Text, ":"):
			times = append(times, text.Text)
		case text.attr("class") == "axis day":
			days = append(days, text.Text)
		}
	}
	if got := strings.Join(times, " "); got != "08:00 10:00 12:00 14:00 16:00 18:00" {
		t.Errorf("time labels %s", got)
	}
	if got := strings.Join(days, " "); got != "22 Nov" {
		t.Errorf("day labels %s", got)
	}
}

func TestNiceCeilingAndNumbers(t *testing.T) {
	t.Parallel()
	for v, want := range map[int64]int64{0: 1, 1: 1, 2: 2, 3: 5, 7: 10, 10: 10, 11: 20, 45: 50, 99: 100, 1200: 2000, 5001: 10000} {
		if got := niceCeiling(v); got != want {
			t.Errorf("niceCeiling(%d) = %d, want %d", v, got, want)
		}
	}
	for v, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%d) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[int64]string{950: "950", 1500: "1.5k", 2000000: "2M"} {
		if got := short(v); got != want {
			t.Errorf("short(%d) = %q, want %q", v, got, want)
		}
	}
}
