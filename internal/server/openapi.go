package server

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the API's OpenAPI 3.1 description, written by hand.
// The tests check every response they receive against it, so it cannot
// drift from the handlers (openapi_check_test.go).
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves the description as is, not in the data envelope, so that
// tools can read it directly.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = noSniff
	w.Write(openAPIDocument)
	return nil
}
