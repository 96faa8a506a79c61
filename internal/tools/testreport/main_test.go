package main

import (
	"regexp"
	"strings"
	"testing"
)

// stream is go test -json's output for a run with a passing fixture test,
// the cluster test, a failing test with its output, a skipped test and a
// package that does not build.
const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestSharedFixtures"}
{"Action":"run","Package":"example.com/a","Test":"TestSharedFixtures/github/push.json"}
{"Action":"output","Package":"example.com/a","Test":"TestSharedFixtures/github/push.json","Output":"    fixtures_test.go:67: pushed\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestSharedFixtures/github/push.json","Elapsed":0.01}
{"Action":"pass","Package":"example.com/a","Test":"TestSharedFixtures","Elapsed":0.02}
{"Action":"run","Package":"example.com/a","Test":"TestBroken"}
{"Action":"output","Package":"example.com/a","Test":"TestBroken","Output":"    a_test.go:9: status 500, want 200\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestBroken","Elapsed":0.5}
{"Action":"run","Package":"example.com/a","Test":"TestNeedsRedis"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRedis","Output":"    a_test.go:20: no Redis\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestNeedsRedis"}
{"Action":"fail","Package":"example.com/a","Elapsed":1.5}
{"Action":"run","Package":"example.com/cmd","Test":"TestClusterOfThreeInstances"}
{"Action":"output","Package":"example.com/cmd","Test":"TestClusterOfThreeInstances","Output":"    cluster_test.go:271: cluster of 3 instances, no loss\n"}
{"Action":"pass","Package":"example.com/cmd","Test":"TestClusterOfThreeInstances","Elapsed":30}
{"Action":"pass","Package":"example.com/cmd","Elapsed":31}
{"ImportPath":"example.com/b [example.com/b.test]","Action":"build-output","Output":"b_test.go:3:1: syntax error\n"}
{"ImportPath":"example.com/b [example.com/b.test]","Action":"build-fail"}
FAIL	example.com/b [build failed]
`

func run(t *testing.T, in string, shows ...string) (string, bool) {
	t.Helper()
	var ps patterns
	for _, s := range shows {
		ps = append(ps, regexp.MustCompile(s))
	}
	r := newReport(ps)
	var out strings.Builder
	if err := r.read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	ok := r.summary(&out)
	return out.String(), ok
}

func TestReportsFailuresSkipsAndChosenTests(t *testing.T) {
	out, ok := run(t, stream, "Fixture", "^TestClusterOfThreeInstances$")
	if ok {
		t.Error("a run with a failure, a skip and a build failure passed")
	}
	for _, want := range []string{
		"FAIL example.com/a 1.5s\n",
		"ok   example.com/cmd 31.0s\n",
		"--- PASS: example.com/a TestSharedFixtures/github/push.json (0.01s)\n",
		"--- PASS: example.com/cmd TestClusterOfThreeInstances (30.00s)\n    cluster_test.go:271: cluster of 3 instances, no loss\n",
		"--- SKIP: example.com/a TestNeedsRedis\n    a_test.go:20: no Redis\n",
		"--- FAIL: example.com/a TestBroken (0.50s)\n    a_test.go:9: status 500, want 200\n",
		"--- FAIL: example.com/b [example.com/b.test] (0.00s)\nb_test.go:3:1: syntax error\n",
		"FAIL\texample.com/b [build failed]\n",
		"3 passed, 1 failed, 1 skipped (tests and subtests)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	// A subtest's log stays out of the summary; the failure is not
	// repeated for the package that holds it.
	if strings.Contains(out, "pushed") {
		t.Errorf("the report shows a subtest's log:\n%s", out)
	}
}

func TestPassesOnlyWhenEverythingRanAndPassed(t *testing.T) {
	clean := `{"Action":"run","Package":"example.com/a","Test":"TestA"}
{"Action":"pass","Package":"example.com/a","Test":"TestA","Elapsed":0.1}
{"Action":"pass","Package":"example.com/a","Elapsed":0.2}
`
	if out, ok := run(t, clean, "^TestA$"); !ok {
		t.Errorf("a clean run failed:\n%s", out)
	}
	// A chosen test that did not run is a failure of the run: the cluster
	// test filtered out by mistake must not pass unnoticed.
	out, ok := run(t, clean, "^TestClusterOfThreeInstances$")
	if ok || !strings.Contains(out, "none ran") {
		t.Errorf("a run without the chosen test passed:\n%s", out)
	}
	// A binary that dies mid-test leaves the test unfinished.
	cut := `{"Action":"run","Package":"example.com/a","Test":"TestHang"}
{"Action":"output","Package":"example.com/a","Test":"TestHang","Output":"panic: test timed out after 30m0s\n"}
{"Action":"fail","Package":"example.com/a","Elapsed":1800}
`
	out, ok = run(t, cut)
	if ok || !strings.Contains(out, "unfinished: example.com/a TestHang\npanic: test timed out") {
		t.Errorf("a run cut short passed:\n%s", out)
	}
}

func TestAMeasurementsSkipIsNoFailure(t *testing.T) {
	in := `{"Action":"run","Package":"example.com/cmd","Test":"TestClusterFanoutThroughput"}
{"Action":"skip","Package":"example.com/cmd","Test":"TestClusterFanoutThroughput"}
{"Action":"run","Package":"example.com/cmd","Test":"TestOther"}
{"Action":"skip","Package":"example.com/cmd","Test":"TestOther"}
{"Action":"pass","Package":"example.com/cmd","Elapsed":1}
`
	r := newReport(nil)
	r.measurements = regexp.MustCompile(`^TestClusterFanoutThroughput$`)
	var out strings.Builder
	if err := r.read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if r.summary(&out) {
		t.Errorf("a run with a skipped test passed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "(a measurement, not run: example.com/cmd TestClusterFanoutThroughput)") ||
		!strings.Contains(out.String(), "--- SKIP: example.com/cmd TestOther") {
		t.Errorf("the report does not tell the measurement from the skip:\n%s", out.String())
	}
}
