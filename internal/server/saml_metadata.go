package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch/internal/netguard"
)

// Limits of fetching an identity provider's metadata from its URL (and
// netguard's: at most 3 redirects, http and https only).
const (
	metadataFetchTimeout = 10 * time.Second
	maxMetadataSize      = 1 << 20
)

// fetchMetadata gets an identity provider's metadata from its URL, within
// a time and size limit, through netguard, the guard of every outbound
// call: never from a loopback, private, link-local (the cloud metadata
// services live there), shared, multicast or other special address, nor
// from an IPv6 form that carries one (NAT64, 6to4, IPv4-compatible),
// however the name resolves and whatever a redirect says, so that the URL
// cannot reach into the server's own network.
// Options.SAMLMetadataLoopback lets tests reach loopback.
func (s *Server) fetchMetadata(ctx context.Context, rawURL string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataFetchTimeout)
	defer cancel()
	guard := &netguard.Guard{AllowLoopback: s.opts.SSO.SAMLMetadataLoopback, Resolver: s.forwardResolver}
	client := guard.Client(metadataFetchTimeout)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, errors.New("is not a URL the server can fetch")
	}
	req.Header.Set("Accept", "application/samlmetadata+xml, application/xml, text/xml")
	res, err := client.Do(req)
	if errors.Is(err, netguard.ErrRefused) {
		why := err.Error()
		if _, after, ok := strings.Cut(why, netguard.ErrRefused.Error()+": "); ok {
			why = after
		}
		return nil, fmt.Errorf("could not be fetched: %s, not a public address", why)
	}
	if err != nil {
		return nil, fmt.Errorf("could not be fetched: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxMetadataSize+1))
	if err != nil {
		return nil, fmt.Errorf("could not be read: %v", err)
	}
	if len(body) > maxMetadataSize {
		return nil, fmt.Errorf("answered more than %d KiB", maxMetadataSize>>10)
	}
	return body, nil
}
