package wsloop

import (
	"crypto/rand"
	"encoding/binary"
	"testing"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch/internal/hub"
)

// unmaskedTextFrame is a text frame as only a server may send it: FIN,
// opcode 1, no mask. From a client it is a protocol error.
func unmaskedTextFrame(payload string) []byte {
	return append([]byte{0x81, byte(len(payload))}, payload...)
}

// TestMaskedFramesPassTheCheckWhereverReadsSplitThem: the check follows
// frames of every length form (7-bit, 16-bit, 64-bit) however the reads cut
// them, headers included, and refuses the first unmasked one after them.
func TestMaskedFramesPassTheCheckWhereverReadsSplitThem(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 5, 125, 126, 300, 65535, 70_000} {
		stream = append(stream, maskedFrameOf(n)...)
	}
	for _, cut := range []int{1, 2, 3, 7, 64, 4096, len(stream)} {
		f := &clientFrames{}
		for rest := stream; len(rest) > 0; {
			n := min(cut, len(rest))
			if !f.masked(rest[:n]) {
				t.Fatalf("reads of %d bytes: masked frames refused", cut)
			}
			rest = rest[n:]
		}
		if f.have != 0 || f.payload != 0 {
			t.Fatalf("reads of %d bytes: the check ends inside a frame (header %d, payload %d)", cut, f.have, f.payload)
		}
		unmasked := unmaskedTextFrame("x")
		if f.masked(unmasked[:1]) != true || f.masked(unmasked[1:]) {
			t.Fatalf("reads of %d bytes: an unmasked frame after them passes", cut)
		}
		if f.masked(maskedFrameOf(1)) {
			t.Fatalf("reads of %d bytes: frames after an unmasked one pass", cut)
		}
	}
}

// maskedFrameOf is a masked binary frame of n random bytes, with the
// shortest length form that holds n.
func maskedFrameOf(n int) []byte {
	f := []byte{0x82}
	switch {
	case n <= 125:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = binary.BigEndian.AppendUint16(append(f, 0x80|126), uint16(n))
	default:
		f = binary.BigEndian.AppendUint64(append(f, 0x80|127), uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	f = append(f, mask[:]...)
	payload := make([]byte, n)
	rand.Read(payload) // bytes that look like headers, among others
	return append(f, payload...)
}

// TestStopEndsTheLoopAndItsWriters: a loop that is started and stopped
// leaves no goroutine behind, and a second Stop does nothing.
func TestStopEndsTheLoopAndItsWriters(t *testing.T) {
	// nbio starts a task pool of its own when the package loads.
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("github.com/lesismal/nbio/taskpool.New.func3"))
	l, err := Start(hub.New(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(t.Context()); err != nil {
		t.Fatalf("Wait with no connections: %v", err)
	}
	l.Stop()
	l.Stop()
}
