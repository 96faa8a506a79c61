package perch

import "testing"

func TestAudienceEqualIgnoresTeamOrder(t *testing.T) {
	t.Parallel()
	a := Audience{UserID: "u", OrgID: "o", TeamIDs: []string{"t1", "t2"}}
	for _, c := range []struct {
		b    Audience
		want bool
	}{
		{Audience{UserID: "u", OrgID: "o", TeamIDs: []string{"t2", "t1"}}, true},
		{Audience{UserID: "u", OrgID: "o", TeamIDs: []string{"t1"}}, false},
		{Audience{UserID: "u", OrgID: "o", TeamIDs: []string{"t1", "t3"}}, false},
		{Audience{UserID: "u", OrgID: "p", TeamIDs: []string{"t1", "t2"}}, false},
		{Audience{UserID: "v", OrgID: "o", TeamIDs: []string{"t1", "t2"}}, false},
	} {
		if got := a.Equal(c.b); got != c.want {
			t.Errorf("%+v.Equal(%+v) = %v, want %v", a, c.b, got, c.want)
		}
	}
}
