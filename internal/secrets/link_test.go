package secrets

import "testing"

func TestLinkTokenNamesItsIDForItsPurposeOnly(t *testing.T) {
	t.Parallel()
	box, other := mustBox(t, NewKey()), mustBox(t, NewKey())
	tok := box.LinkToken("leave", "user1")
	if id, ok := box.LinkTokenID("leave", tok); !ok || id != "user1" {
		t.Fatalf("LinkTokenID = %q, %v", id, ok)
	}
	for name, bad := range map[string]func() (string, bool){
		"another purpose": func() (string, bool) { return box.LinkTokenID("join", tok) },
		"another key":     func() (string, bool) { return other.LinkTokenID("leave", tok) },
		"another id":      func() (string, bool) { return box.LinkTokenID("leave", "user2"+tok[len("user1"):]) },
		"no mac":          func() (string, bool) { return box.LinkTokenID("leave", "user1") },
		"no id":           func() (string, bool) { return box.LinkTokenID("leave", tok[len("user1"):]) },
		"not base64":      func() (string, bool) { return box.LinkTokenID("leave", "user1.!!!") },
		"short mac":       func() (string, bool) { return box.LinkTokenID("leave", tok[:len(tok)-2]) },
	} {
		if _, ok := bad(); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}
