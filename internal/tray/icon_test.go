package tray

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the icon is not a PNG: %v", err)
	}
	return img
}

// count returns how many pixels of img are exactly c.
func count(img image.Image, c color.NRGBA) int {
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if color.NRGBAModel.Convert(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}

func TestIconStatesDiffer(t *testing.T) {
	t.Parallel()
	states := []IconState{
		{Severity: "", Unread: 0},
		{Severity: "info", Unread: 1}, {Severity: "warning", Unread: 1}, {Severity: "error", Unread: 1},
		{Severity: "error", Unread: 2}, {Severity: "error", Unread: 9}, {Severity: "error", Unread: 10},
		{Away: true}, {Severity: "error", Unread: 2, Away: true},
	}
	seen := map[string]IconState{}
	for _, st := range states {
		b := Icon(st)
		img := decode(t, b)
		if img.Bounds().Dx() != IconSize || img.Bounds().Dy() != IconSize {
			t.Errorf("%+v: %v, want %d×%d", st, img.Bounds(), IconSize, IconSize)
		}
		if other, dup := seen[string(b)]; dup {
			t.Errorf("%+v draws the same icon as %+v", st, other)
		}
		seen[string(b)] = st
	}
}

func TestIconTint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state IconState
		tint  color.NRGBA
	}{
		{IconState{Severity: "", Unread: 0}, tintNone},
		{IconState{Severity: "info", Unread: 3}, tintInfo},
		{IconState{Severity: "warning", Unread: 3}, tintWarning},
		{IconState{Severity: "error", Unread: 3}, tintError},
	}
	for _, tt := range tests {
		img := decode(t, Icon(tt.state))
		if got := color.NRGBAModel.Convert(img.At(4, 8)); got != tt.tint { // inside the square, clear of the bird
			t.Errorf("%+v: background %v, want %v", tt.state, got, tt.tint)
		}
	}
}

func TestBadgeOnlyWithACount(t *testing.T) {
	t.Parallel()
	if n := count(decode(t, Icon(IconState{Severity: "", Unread: 0})), badgeFill); n != 0 {
		t.Errorf("with nothing unread, %d badge pixels", n)
	}
	for _, unread := range []int{1, 5, 42} {
		img := decode(t, Icon(IconState{Severity: "info", Unread: unread}))
		if n := count(img, badgeFill); n < 20 {
			t.Errorf("%d unread: %d badge pixels", unread, n)
		}
		// The badge sits in the lower right quarter.
		if c := color.NRGBAModel.Convert(img.At(IconSize-4, IconSize/2-2)); c == badgeFill {
			t.Errorf("%d unread: the badge reaches above the lower right corner", unread)
		}
	}
}

func TestManyUnreadShareOneIcon(t *testing.T) {
	t.Parallel()
	if !bytes.Equal(Icon(IconState{Severity: "error", Unread: 10}), Icon(IconState{Severity: "error", Unread: 250})) {
		t.Error("10 and 250 unread should both draw 9+")
	}
	if &Icon(IconState{Severity: "warning", Unread: 4})[0] != &Icon(IconState{Severity: "warning", Unread: 4})[0] {
		t.Error("the icon was drawn twice: not cached")
	}
}

func TestItemIcons(t *testing.T) {
	t.Parallel()
	unread := decode(t, ItemIcon("error", false))
	read := decode(t, ItemIcon("error", true))
	if color.NRGBAModel.Convert(unread.At(8, 8)) != tintError {
		t.Error("an unread error's dot is not red in the middle")
	}
	if _, _, _, a := read.At(8, 8).RGBA(); a != 0 {
		t.Error("a read item's ring is filled")
	}
}

// TestAwayIconIsGreyAndStruck: offline or signed out, the bird is on grey
// and struck through, whatever is unread, so that it cannot be taken for
// the live icon; the count stays.
func TestAwayIconIsGreyAndStruck(t *testing.T) {
	t.Parallel()
	for _, st := range []IconState{{}, {Severity: "error", Unread: 3}} {
		live := decode(t, Icon(st))
		st.Away = true
		away := decode(t, Icon(st))
		if got := color.NRGBAModel.Convert(away.At(4, 8)); got != tintAway {
			t.Errorf("%+v: background %v, want the grey %v", st, got, tintAway)
		}
		if n := count(away, strike); n < 30 {
			t.Errorf("%+v: %d pixels of the strike, want a line across", st, n)
		}
		if n := count(live, strike); n != 0 {
			t.Errorf("%+v without Away: %d pixels of the strike", st, n)
		}
		if (count(away, badgeFill) > 0) != (st.Unread > 0) {
			t.Errorf("%+v: the badge shows %v, want %v", st, count(away, badgeFill) > 0, st.Unread > 0)
		}
	}
}
