package workflow

import (
	"slices"
	"testing"

	"github.com/perch-dev/perch"
)

func TestReadsNamesThePayloadPathsOfEveryExpression(t *testing.T) {
	t.Parallel()
	p, err := Compile(mustWorkflow(`has(payload.alert) && payload.alert.priority == "P1" && payload["labels"]["env"] == "prod" && payload.items[0] == "x"`,
		perch.Step{Set: map[string]string{"title": `payload.data.object.status + event.title`}},
		perch.Step{Throttle: &perch.ThrottleStep{Key: `string(payload.host)`, Max: 1, Per: minute}},
		perch.Step{Set: map[string]string{"message": `payload[event.title] + "!"`}}, // a computed index names no path
	))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"payload.alert.priority", "payload.data.object.status", "payload.host", "payload.items", "payload.labels.env"}
	if got := p.Reads(); !slices.Equal(got, want) {
		t.Errorf("Reads() = %q, want %q", got, want)
	}
}

func TestMissingListsWhatTheSampleLacks(t *testing.T) {
	t.Parallel()
	p, err := Compile(mustWorkflow(`payload.alert.priority == "P1" && payload.monitor.name != "" && payload.items.size() > 0`, perch.Step{Drop: &perch.DropStep{}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		payload map[string]any
		want    []string
	}{
		{"no payload at all", nil, []string{"payload.alert.priority", "payload.items", "payload.monitor.name"}},
		{"a parent lacking its child", map[string]any{"alert": map[string]any{}, "monitor": map[string]any{"name": "db"}, "items": []any{}},
			[]string{"payload.alert.priority"}},
		{"a value that is not an object stops the walk", map[string]any{"alert": "P1", "monitor": map[string]any{"name": "db"}, "items": []any{1}}, nil},
		{"everything there", map[string]any{"alert": map[string]any{"priority": "P2"}, "monitor": map[string]any{"name": "db"}, "items": []any{1}}, nil},
	} {
		if got := p.Missing(tt.payload); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Missing() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReadsNothingWhenNoExpressionReadsThePayload(t *testing.T) {
	t.Parallel()
	p, err := Compile(mustWorkflow(`event.severity == "error"`, perch.Step{Set: map[string]string{"title": `"[" + event.source + "] " + event.title`}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Reads(); len(got) != 0 {
		t.Errorf("Reads() = %q, want none", got)
	}
	if got := p.Missing(nil); len(got) != 0 {
		t.Errorf("Missing(nil) = %q, want none", got)
	}
}
