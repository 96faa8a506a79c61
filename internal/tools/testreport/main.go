// Command testreport reads the events of `go test -json` on its standard
// input and reports what CI needs from one pass over every package: each
// package's result as it comes, the failures with their output, the tests
// that were skipped and why, the results of chosen tests (the fixture
// checks, the cluster test), and the counts of passed, failed and skipped
// tests. It exits 1 when anything failed or was skipped (but for tests
// named as measurements, which run only by hand), or when a chosen test
// did not run: CI skips nothing.
//
//	go test -json ./... | testreport -show 'Fixture' -show '^TestClusterOfThreeInstances$'
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	var shows patterns
	flag.Var(&shows, "show", "a regular expression: report the result of every test whose name matches, and fail if none ran (repeatable)")
	measurements := flag.String("measurement", "", "a regular expression: tests that are measurements, run by hand, whose skip is reported but does not fail the run")
	flag.Parse()
	r := newReport(shows)
	if *measurements != "" {
		re, err := regexp.Compile(*measurements)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport: -measurement:", err)
			os.Exit(2)
		}
		r.measurements = re
	}
	if err := r.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !r.summary(os.Stdout) {
		os.Exit(1)
	}
}

// patterns is a repeatable flag of regular expressions.
type patterns []*regexp.Regexp

func (p *patterns) String() string { return fmt.Sprint(*p) }
func (p *patterns) Set(s string) error {
	re, err := regexp.Compile(s)
	if err != nil {
		return err
	}
	*p = append(*p, re)
	return nil
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// result is a finished test, or a package (Test empty).
type result struct {
	Package, Test, Action string
	Elapsed               float64
	Output                string
}

func (r result) name() string {
	if r.Test == "" {
		return r.Package
	}
	return r.Package + " " + r.Test
}

type key struct{ pkg, test string }

// report is what has been read so far.
type report struct {
	shows patterns
	// measurements are tests that skip unless asked to measure; their
	// skips are listed apart and pass.
	measurements *regexp.Regexp
	measured     []result
	output       map[key]*strings.Builder // of tests and packages not yet finished
	build        map[string]*strings.Builder
	failed       []result
	skipped      []result
	shown        [][]result // by pattern
	counts       map[string]int
	broken       int // events that were not JSON: go test's own errors
	stray        strings.Builder
}

func newReport(shows patterns) *report {
	return &report{shows: shows, output: map[key]*strings.Builder{}, build: map[string]*strings.Builder{},
		shown: make([][]result, len(shows)), counts: map[string]int{}}
}

// read takes events from in until it ends, writing each package's result
// to progress as the package finishes.
func (r *report) read(in io.Reader, progress io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test writes a few things outside the stream, such as a
			// package that does not build under -json on old versions.
			r.broken++
			r.stray.Write(line)
			r.stray.WriteByte('\n')
			continue
		}
		r.add(e, progress)
	}
	return sc.Err()
}

func (r *report) add(e event, progress io.Writer) {
	switch e.Action {
	case "build-output":
		r.buf(r.build, e.ImportPath).WriteString(e.Output)
		return
	case "build-fail":
		r.failed = append(r.failed, result{Package: e.ImportPath, Action: "build-fail", Output: r.build[e.ImportPath].String()})
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		b, ok := r.output[k]
		if !ok {
			b = &strings.Builder{}
			r.output[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		res := result{Package: e.Package, Test: e.Test, Action: e.Action, Elapsed: e.Elapsed}
		if b, ok := r.output[k]; ok {
			res.Output = b.String()
			delete(r.output, k)
		}
		if e.Test == "" {
			fmt.Fprintf(progress, "%-4s %s %.1fs\n", map[string]string{"pass": "ok", "fail": "FAIL", "skip": "?"}[e.Action], e.Package, e.Elapsed)
			// A package that fails outside any test (a build error, a
			// panic, TestMain's checks) has only its own output to show.
			if e.Action == "fail" {
				r.failed = append(r.failed, res)
			}
			return
		}
		r.counts[e.Action]++
		switch e.Action {
		case "fail":
			r.failed = append(r.failed, res)
		case "skip":
			if r.measurements != nil && r.measurements.MatchString(e.Test) {
				r.measured = append(r.measured, res)
			} else {
				r.skipped = append(r.skipped, res)
			}
		}
		for i, re := range r.shows {
			if re.MatchString(e.Test) {
				r.shown[i] = append(r.shown[i], res)
			}
		}
	}
}

func (r *report) buf(m map[string]*strings.Builder, k string) *strings.Builder {
	b, ok := m[k]
	if !ok {
		b = &strings.Builder{}
		m[k] = b
	}
	return b
}

// summary writes the report and says whether the run is a pass: nothing
// failed or skipped, every chosen pattern matched a test that ran.
func (r *report) summary(w io.Writer) bool {
	ok := true
	for i, re := range r.shows {
		fmt.Fprintf(w, "\n== tests matching %s\n", re)
		sort.SliceStable(r.shown[i], func(a, b int) bool { return r.shown[i][a].name() < r.shown[i][b].name() })
		for _, res := range r.shown[i] {
			fmt.Fprintf(w, "--- %s: %s (%.2fs)\n", strings.ToUpper(res.Action), res.name(), res.Elapsed)
			// A top-level test's last log lines say what it measured (the
			// cluster test's one line); subtests' logs are left to -v.
			if !strings.Contains(res.Test, "/") {
				lines := logLines(res.Output)
				for _, l := range lines[max(0, len(lines)-5):] {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
		}
		if len(r.shown[i]) == 0 {
			fmt.Fprintln(w, "none ran")
			ok = false
		}
	}
	for _, res := range r.measured {
		fmt.Fprintf(w, "\n(a measurement, not run: %s)\n", res.name())
	}
	if len(r.skipped) > 0 {
		fmt.Fprintf(w, "\n== skipped (CI skips nothing)\n")
		for _, res := range r.skipped {
			fmt.Fprintf(w, "--- SKIP: %s\n%s", res.name(), res.Output)
		}
		ok = false
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(w, "\n== failed\n")
		for _, res := range r.failed {
			fmt.Fprintf(w, "--- FAIL: %s (%.2fs)\n%s", res.name(), res.Elapsed, res.Output)
		}
		ok = false
	}
	if r.broken > 0 {
		fmt.Fprintf(w, "\n== output outside the test stream\n%s", r.stray.String())
	}
	// A test still open when the stream ended was cut short (a timeout or
	// a crash of its binary); its package's fail says so, but show it.
	var open []key
	for k := range r.output {
		if k.test != "" {
			open = append(open, k)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].pkg+" "+open[i].test < open[j].pkg+" "+open[j].test })
	for _, k := range open {
		fmt.Fprintf(w, "unfinished: %s %s\n%s", k.pkg, k.test, r.output[k].String())
		ok = false
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped (tests and subtests)\n", r.counts["pass"], r.counts["fail"], r.counts["skip"])
	return ok
}

// logLines are the lines a test logged (t.Log), without the framework's
// own "=== RUN" and "--- PASS" lines, which the report already says.
func logLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		lines = append(lines, t)
	}
	return lines
}
