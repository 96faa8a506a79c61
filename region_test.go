package perch

import (
	"reflect"
	"testing"
)

func TestParseRegions(t *testing.T) {
	t.Parallel()
	got, err := ParseRegions(" us=https://perch.example.com/, eu=https://eu.perch.example.com ", "eu")
	want := []Region{{Name: "us", URL: "https://perch.example.com"}, {Name: "eu", URL: "https://eu.perch.example.com", Current: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRegions = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseRegions("", ""); err != nil || len(got) != 0 {
		t.Fatalf("no regions = %+v, %v", got, err)
	}
	for _, bad := range []struct{ list, current string }{
		{"us", ""},
		{"US=https://x.example", ""},
		{"us=ftp://x.example", ""},
		{"us=https://x.example/path", ""},
		{"us=https://a.example,us=https://b.example", ""},
		{"us=https://a.example", "eu"},
	} {
		if _, err := ParseRegions(bad.list, bad.current); err == nil {
			t.Errorf("ParseRegions(%q, %q) accepted", bad.list, bad.current)
		}
	}
}
