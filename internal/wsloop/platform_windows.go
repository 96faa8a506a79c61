package wsloop

import (
	"net"
	"syscall"
)

// barrierPair returns an in-memory pipe. The library has no event loop on
// Windows (it reads each connection in a goroutine of its own), so the
// descriptor reuse the barrier guards against cannot happen there; the
// pipe keeps settle working the same way.
func barrierPair() (inside, knock net.Conn, err error) {
	inside, knock = net.Pipe()
	return inside, knock, nil
}

// shutdownWrite is shutdown SD_SEND of a socket (closeWrite).
func shutdownWrite(fd uintptr) {
	syscall.Shutdown(syscall.Handle(fd), syscall.SHUT_WR)
}
