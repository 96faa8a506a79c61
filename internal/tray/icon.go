package tray

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
	"sync"

	"github.com/perch-dev/perch"
)

// IconSize is the side of the tray icon, in pixels. Panels scale it to
// their height.
const IconSize = 32

// The tints of the icon, by the highest unread severity.
var (
	tintNone    = color.NRGBA{0x64, 0x74, 0x8b, 0xff} // slate: nothing unread
	tintInfo    = color.NRGBA{0x2f, 0x80, 0xed, 0xff} // blue
	tintWarning = color.NRGBA{0xf0, 0xa2, 0x02, 0xff} // amber
	tintError   = color.NRGBA{0xe5, 0x48, 0x4d, 0xff} // red
	white       = color.NRGBA{0xff, 0xff, 0xff, 0xff}
	badgeFill   = color.NRGBA{0x1f, 0x29, 0x37, 0xff} // near black, readable on every tint
	readGrey    = color.NRGBA{0x9c, 0xa3, 0xaf, 0xff}
	tintAway    = color.NRGBA{0xa3, 0xaa, 0xb5, 0xff} // light grey: offline or signed out
	strike      = color.NRGBA{0x37, 0x41, 0x51, 0xff} // the line across an Away icon
)

func tint(severity string) color.NRGBA {
	switch severity {
	case perch.SeverityError:
		return tintError
	case perch.SeverityWarning:
		return tintWarning
	case perch.SeverityInfo:
		return tintInfo
	}
	return tintNone
}

var icons = struct {
	sync.Mutex
	png map[IconState][]byte
	dot map[string][]byte
}{png: map[IconState][]byte{}, dot: map[string][]byte{}}

// Icon returns the tray icon for st as PNG: a bird on a perch in a rounded
// square tinted by the severity, with the unread count as a badge ("9+"
// above nine); Away, the square is light grey and struck through corner to
// corner. Icons are made once per state and kept.
func Icon(st IconState) []byte {
	st.Unread = min(max(st.Unread, 0), 10) // 10 draws "9+"
	icons.Lock()
	defer icons.Unlock()
	if b, ok := icons.png[st]; ok {
		return b
	}
	b := encode(drawIcon(st))
	icons.png[st] = b
	return b
}

// ItemIcon returns the 16-pixel mark of a menu item: a dot of the severity's
// colour when unread, a grey ring when read.
func ItemIcon(severity string, read bool) []byte {
	key := severity
	if read {
		key = "read"
	}
	icons.Lock()
	defer icons.Unlock()
	if b, ok := icons.dot[key]; ok {
		return b
	}
	c := tint(severity)
	b := encode(rasterize(16, func(x, y float64) (color.NRGBA, bool) {
		d := math.Hypot(x-8, y-8)
		if read {
			return readGrey, d <= 5 && d >= 3.5
		}
		return c, d <= 5
	}))
	icons.dot[key] = b
	return b
}

func encode(img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // cannot happen: an in-memory image into a buffer
	}
	return buf.Bytes()
}

// drawIcon paints the icon in 32 units, front layer first.
func drawIcon(st IconState) *image.NRGBA {
	bg := tint(st.Severity)
	if st.Unread == 0 {
		bg = tintNone
	}
	if st.Away {
		bg = tintAway
	}
	var text string
	if st.Unread > 9 {
		text = "9+"
	} else if st.Unread > 0 {
		text = strconv.Itoa(st.Unread)
	}
	b := newBadge(text)
	return rasterize(IconSize, func(x, y float64) (color.NRGBA, bool) {
		if text != "" {
			if c, ok := b.at(x, y); ok {
				return c, true
			}
		}
		if st.Away {
			// The strike, with a margin of the background around it so
			// that it reads across the white bird.
			switch d := distToSegment(x, y, 5.5, 5.5, 26.5, 26.5); {
			case d <= 1.6:
				return strike, true
			case d <= 3 && inRoundRect(x, y, 1, 1, 31, 31, 7):
				return bg, true
			}
		}
		if inCircle(x, y, 22.2, 10.6, 1.1) { // the eye
			return bg, true
		}
		if inBird(x, y) {
			return white, true
		}
		if inRoundRect(x, y, 1, 1, 31, 31, 7) {
			return bg, true
		}
		return color.NRGBA{}, false
	})
}

func inBird(x, y float64) bool {
	body := math.Pow((x-14.5)/8.5, 2)+math.Pow((y-17)/6.2, 2) <= 1
	head := inCircle(x, y, 21, 11.5, 4.6)
	beak := inTriangle(x, y, 24.6, 9.9, 29, 12, 24.6, 14)
	tail := inTriangle(x, y, 8.5, 14.5, 2.5, 21.8, 9.5, 20.5)
	branch := inRoundRect(x, y, 3, 24.6, 29, 26.8, 1.1)
	legs := (x >= 12.3 && x <= 13.7 || x >= 16.3 && x <= 17.7) && y >= 22 && y <= 25
	return body || head || beak || tail || branch || legs
}

// badge is the unread count in the icon's lower right corner: a dark pill
// with a white ring and white digits.
type badge struct {
	text                   string
	x0, y0, x1, y1, radius float64 // the pill, ring included
	tx, ty                 float64 // where the text starts
}

// The digits are drawn from a 3×5 bitmap font at twice its size.
const (
	glyphW, glyphH, glyphScale, glyphGap = 3, 5, 2, 1
	badgePad                             = 3
)

func newBadge(text string) badge {
	n := float64(len(text))
	tw := n*glyphW*glyphScale + (n-1)*glyphGap*glyphScale
	th := float64(glyphH * glyphScale)
	h := th + 2*badgePad
	w := max(tw+2*badgePad, h)
	x1, y1 := float64(IconSize), float64(IconSize)
	return badge{
		text: text,
		x0:   x1 - w, y0: y1 - h, x1: x1, y1: y1, radius: h / 2,
		tx: x1 - w + (w-tw)/2, ty: y1 - h + badgePad,
	}
}

func (b badge) at(x, y float64) (color.NRGBA, bool) {
	if !inRoundRect(x, y, b.x0, b.y0, b.x1, b.y1, b.radius) {
		return color.NRGBA{}, false
	}
	if !inRoundRect(x, y, b.x0+1.5, b.y0+1.5, b.x1-1.5, b.y1-1.5, b.radius-1.5) {
		return white, true
	}
	gx := int(math.Floor((x - b.tx) / glyphScale))
	gy := int(math.Floor((y - b.ty) / glyphScale))
	step := glyphW + glyphGap
	if x >= b.tx && y >= b.ty && gy < glyphH && gx >= 0 && gx/step < len(b.text) && gx%step < glyphW {
		if font[b.text[gx/step]][gy]&(1<<(glyphW-1-gx%step)) != 0 {
			return white, true
		}
	}
	return badgeFill, true
}

// font is a 3×5 bitmap of the characters a badge needs: each row's three
// bits, left to right.
var font = map[byte][glyphH]uint8{
	'0': {0b111, 0b101, 0b101, 0b101, 0b111},
	'1': {0b010, 0b110, 0b010, 0b010, 0b111},
	'2': {0b111, 0b001, 0b111, 0b100, 0b111},
	'3': {0b111, 0b001, 0b111, 0b001, 0b111},
	'4': {0b101, 0b101, 0b111, 0b001, 0b001},
	'5': {0b111, 0b100, 0b111, 0b001, 0b111},
	'6': {0b111, 0b100, 0b111, 0b101, 0b111},
	'7': {0b111, 0b001, 0b010, 0b010, 0b010},
	'8': {0b111, 0b101, 0b111, 0b101, 0b111},
	'9': {0b111, 0b101, 0b111, 0b001, 0b111},
	'+': {0b000, 0b010, 0b111, 0b010, 0b000},
}

// rasterize paints a size×size image from paint, which says the colour of a
// point (false: transparent), sampling each pixel 4×4 times for smooth
// edges.
func rasterize(size int, paint func(x, y float64) (color.NRGBA, bool)) *image.NRGBA {
	const n = 4
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := range size {
		for px := range size {
			var r, g, b, a float64
			for i := range n {
				for j := range n {
					c, ok := paint(float64(px)+(float64(i)+0.5)/n, float64(py)+(float64(j)+0.5)/n)
					if !ok {
						continue
					}
					ca := float64(c.A) / 255
					r += float64(c.R) * ca
					g += float64(c.G) * ca
					b += float64(c.B) * ca
					a += ca
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{
				R: uint8(math.Round(r / a)), G: uint8(math.Round(g / a)), B: uint8(math.Round(b / a)),
				A: uint8(math.Round(a / (n * n) * 255)),
			})
		}
	}
	return img
}

func inCircle(x, y, cx, cy, r float64) bool { return math.Hypot(x-cx, y-cy) <= r }

// distToSegment is the distance from (x, y) to the segment from (ax, ay) to
// (bx, by).
func distToSegment(x, y, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	t := ((x-ax)*dx + (y-ay)*dy) / (dx*dx + dy*dy)
	t = min(max(t, 0), 1)
	return math.Hypot(x-(ax+t*dx), y-(ay+t*dy))
}

func inRoundRect(x, y, x0, y0, x1, y1, r float64) bool {
	if x < x0 || x > x1 || y < y0 || y > y1 {
		return false
	}
	cx := min(max(x, x0+r), x1-r)
	cy := min(max(y, y0+r), y1-r)
	return math.Hypot(x-cx, y-cy) <= r
}

func inTriangle(x, y, ax, ay, bx, by, cx, cy float64) bool {
	side := func(px, py, qx, qy float64) float64 { return (x-qx)*(py-qy) - (px-qx)*(y-qy) }
	d1, d2, d3 := side(ax, ay, bx, by), side(bx, by, cx, cy), side(cx, cy, ax, ay)
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}
