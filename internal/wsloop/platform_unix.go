//go:build unix

package wsloop

import (
	"net"
	"os"
	"syscall"
)

// barrierPair returns the two ends of a Unix socket pair: inside goes into
// the loop, knock is written to by settle.
func barrierPair() (inside, knock net.Conn, err error) {
	fds, err := socketpair()
	if err != nil {
		return nil, nil, err
	}
	if inside, err = fileConn(fds[0]); err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	if knock, err = fileConn(fds[1]); err != nil {
		inside.Close()
		return nil, nil, err
	}
	return inside, knock, nil
}

// socketpair makes a close-on-exec socket pair. SOCK_CLOEXEC is Linux's
// (and the BSDs'), not macOS's, so the flag is set after, under the lock
// that os/exec forks under, as the standard library does there.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}

// fileConn takes fd into a net.Conn (closing fd: the conn has a copy).
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "perch-ws-barrier")
	defer f.Close()
	return net.FileConn(f)
}

// shutdownWrite is shutdown(2) SHUT_WR of a socket (closeWrite).
func shutdownWrite(fd uintptr) {
	syscall.Shutdown(int(fd), syscall.SHUT_WR)
}
