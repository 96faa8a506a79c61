package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// kin-openapi checks a body against an OpenAPI 3.1 schema by compiling a
// JSON Schema 2020-12 validator for it on every call: a quarter of this
// package's test time went to compiling the same few dozen schemas again
// and again. bodySchemas compiles each response schema of openapi.json
// once, at its place in the document (so that its references resolve
// there), with the same JSON Schema library and the same formats asserted
// as kin-openapi's (the formats it knows, SchemaStringFormats).

// documentURL is the name openapi.json is compiled under.
const documentURL = "https://perch.test/openapi.json"

// bodySchemas are the compiled response schemas of one document.
type bodySchemas struct {
	mu       sync.Mutex // the compiler is not safe for concurrent use
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema // by JSON pointer
}

func newBodySchemas(document []byte) (*bodySchemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for name, f := range openapi3.SchemaStringFormats {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(v any) error {
			if s, ok := v.(string); ok {
				return f.Validate(s)
			}
			return nil
		}})
	}
	c.AssertFormat()
	if err := c.AddResource(documentURL, doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	return &bodySchemas{compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

// schema is the compiled schema at pointer, a JSON pointer into the
// document.
func (b *bodySchemas) schema(pointer string) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sch, ok := b.compiled[pointer]; ok {
		return sch, nil
	}
	sch, err := b.compiler.Compile(documentURL + "#" + pointer)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: compile %s: %w", pointer, err)
	}
	b.compiled[pointer] = sch
	return sch, nil
}

// checkBody checks a's body against the schema openapi.json gives the
// operation (method, path as described) for a's status and content type,
// as kin-openapi's ValidateResponse would: a content type not described is
// refused, a body decoded as its media type's registered decoder decodes
// it (JSON, NDJSON as the list of its lines, text) and validated.
func (sp *apiSpec) checkBody(method, path string, op *openapi3.Operation, a answer) error {
	if method == http.MethodHead || a.status == http.StatusNotModified || a.status == http.StatusPermanentRedirect ||
		a.status == http.StatusTemporaryRedirect || a.status == http.StatusMovedPermanently {
		return nil // as ValidateResponse, which checks none of these
	}
	key, ref := responseKey(op.Responses, a.status)
	if ref == nil || ref.Value == nil || len(ref.Value.Content) == 0 {
		return nil
	}
	mime := a.header.Get("Content-Type")
	media := ref.Value.Content.Get(mime)
	if media == nil {
		return fmt.Errorf("response header Content-Type has unexpected value: %q", mime)
	}
	if media.Schema == nil {
		return nil
	}
	var mediaKey string
	for k, v := range ref.Value.Content {
		if v == media {
			mediaKey = k
		}
	}
	// The response's place in the document: under the operation, or under
	// components when the operation refers to a shared response.
	pointer := "/paths/" + escapePointer(path) + "/" + strings.ToLower(method) + "/responses/" + escapePointer(key)
	if name, ok := strings.CutPrefix(ref.Ref, "#/components/responses/"); ok {
		pointer = "/components/responses/" + escapePointer(name)
	}
	pointer += "/content/" + escapePointer(mediaKey) + "/schema"
	sch, err := sp.bodies.schema(pointer)
	if err != nil {
		return err
	}
	value, err := decodeBody(mime, media, a)
	if err != nil {
		return fmt.Errorf("failed to decode response body: %w", err)
	}
	if err := sch.Validate(value); err != nil {
		return fmt.Errorf("response body doesn't match schema: %w", err)
	}
	return nil
}

// responseKey is the key of op's responses that describes status (the
// code, its class such as 2XX, or default) and the response there.
func responseKey(rs *openapi3.Responses, status int) (string, *openapi3.ResponseRef) {
	for _, k := range []string{strconv.Itoa(status), strconv.Itoa(status/100) + "XX", "default"} {
		if r := rs.Value(k); r != nil {
			return k, r
		}
	}
	return "", nil
}

// decodeBody decodes a's body as the decoder registered for its media
// type does; JSON (any +json type) as JSON.
func decodeBody(mime string, media *openapi3.MediaType, a answer) (any, error) {
	base, _, _ := strings.Cut(mime, ";")
	base = strings.ToLower(strings.TrimSpace(base))
	if base == "application/json" || strings.HasSuffix(base, "+json") {
		var v any
		dec := json.NewDecoder(bytes.NewReader(a.body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, fmt.Errorf("more than one JSON value")
		}
		return v, nil
	}
	decode := openapi3filter.RegisteredBodyDecoder(base)
	if decode == nil {
		return nil, fmt.Errorf("no decoder for %q", base)
	}
	return decode(bytes.NewReader(a.body), a.header, media.Schema, func(string) *openapi3.Encoding { return nil })
}

// escapePointer escapes s as one token of a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
