package perch

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Region is one deployment of Perch with its own database (docs/DESIGN.md,
// Regions): data stays in its region, and nothing is looked up across
// regions.
type Region struct {
	Name    string `json:"name"`    // e.g. "us", "eu"
	URL     string `json:"url"`     // its public address
	Current bool   `json:"current"` // the region that answered
}

var regionName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// ParseRegions reads a region list written "us=https://perch.example.com,
// eu=https://eu.perch.example.com" and marks current ("" when unset). A
// current region that the list does not name is an error, as are a bad
// name, a URL that is not http(s) with a host, and a name given twice.
func ParseRegions(list, current string) ([]Region, error) {
	var out []Region
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, raw, ok := strings.Cut(item, "=")
		name, raw = strings.TrimSpace(name), strings.TrimRight(strings.TrimSpace(raw), "/")
		if !ok || !regionName.MatchString(name) {
			return nil, fmt.Errorf("%q: want name=URL, with a name of lower-case letters, digits and dashes (e.g. eu=https://eu.perch.example.com)", item)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%q: the region's URL must be http(s)://host with no path", item)
		}
		for _, r := range out {
			if r.Name == name {
				return nil, fmt.Errorf("region %q is listed twice", name)
			}
		}
		out = append(out, Region{Name: name, URL: raw, Current: name == current})
	}
	if current != "" && len(out) > 0 && !containsRegion(out, current) {
		return nil, fmt.Errorf("the current region %q is not in the list", current)
	}
	return out, nil
}

func containsRegion(rs []Region, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}
