package testenv

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestStripeMockAnswersStripesAPI(t *testing.T) {
	t.Parallel()
	base := StripeMock(t)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %q is not on the loopback interface", base)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/customers", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := probeClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || list.Object != "list" {
		t.Fatalf("GET /v1/customers: %d, object %q; want 200 and a list", resp.StatusCode, list.Object)
	}
}

func TestTwoStripeMocksRunSideBySide(t *testing.T) {
	t.Parallel()
	a, b := StripeMock(t), StripeMock(t)
	if a == b {
		t.Fatalf("both stripe-mocks answer at %s", a)
	}
}
