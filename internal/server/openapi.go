package server

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
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

//go:embed apidocs.html
var apiDocsHTML string

var apiDocsTemplate = template.Must(template.New("apidocs").Parse(apiDocsHTML))

// apiDocs renders the description for people: every operation with its
// parameters, request body and responses, and the shared schemas. The page
// is plain HTML with the dashboard's stylesheet; it needs no script.
func (s *Server) apiDocs(w http.ResponseWriter, r *http.Request) error {
	page, err := describeAPI(openAPIDocument)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := apiDocsTemplate.Execute(&b, page); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h["X-Content-Type-Options"] = noSniff
	w.Write(b.Bytes())
	return nil
}

// The page's model.
type (
	docsPage struct {
		Title, Version, Summary string
		Description             []docsText
		Tags                    []*docsTag
		Responses               []docsResponse // shared by many operations
		Schemas                 []docsNamedSchema
	}
	docsTag struct {
		Name, Anchor string
		Description  []docsText
		Ops          []*docsOp
	}
	docsOp struct {
		Anchor, Method, Path, Summary string
		Description                   []docsText
		Credentials                   string
		Params                        []docsParam
		Body                          []docsContent
		Responses                     []docsResponse
	}
	docsParam struct {
		Name, In    string
		Required    bool
		Description docsText
		Schema      *docsSchema
	}
	docsContent struct {
		MediaType string
		Schema    *docsSchema
	}
	docsResponse struct {
		Status      string
		Shared      string // the name of a response described once for many operations
		Description docsText
		Headers     []docsParam
		Content     []docsContent
	}
	docsNamedSchema struct {
		Name   string
		Schema *docsSchema
	}
	// docsSchema is a schema as the page shows it: a link to a named
	// schema, or a type with its constraints and members.
	docsSchema struct {
		Ref, Title, Type string
		Facts            []string
		Description      docsText
		Props            []docsProp
		Items, Values    *docsSchema
		Variants         []*docsSchema
	}
	docsProp struct {
		Name     string
		Required bool
		Schema   *docsSchema
	}
	// docsText is a paragraph whose `backticked` spans show as code.
	docsText []docsSpan
	docsSpan struct {
		Text string
		Code bool
	}
)

type jsonObject = map[string]any

// describer reads the description, generically, into the page's model.
type describer struct {
	components jsonObject
}

// describeAPI builds the page from the description.
func describeAPI(data []byte) (*docsPage, error) {
	var doc jsonObject
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	d := describer{components: object(doc["components"])}
	info := object(doc["info"])
	page := &docsPage{Title: str(info["title"]), Version: str(info["version"]), Summary: str(info["summary"]),
		Description: paragraphs(str(info["description"]))}
	tags := map[string]*docsTag{}
	for _, t := range list(doc["tags"]) {
		t := object(t)
		tag := &docsTag{Name: str(t["name"]), Anchor: tagAnchor(str(t["name"])), Description: paragraphs(str(t["description"]))}
		tags[tag.Name] = tag
		page.Tags = append(page.Tags, tag)
	}
	for path, item := range object(doc["paths"]) {
		item := object(item)
		for _, method := range httpMethods {
			op, ok := item[strings.ToLower(method)].(jsonObject)
			if !ok {
				continue
			}
			o := d.operation(method, path, op, list(item["parameters"]))
			name := "Other"
			if t := list(op["tags"]); len(t) > 0 {
				name = str(t[0])
			}
			if tags[name] == nil {
				tags[name] = &docsTag{Name: name, Anchor: tagAnchor(name)}
				page.Tags = append(page.Tags, tags[name])
			}
			tags[name].Ops = append(tags[name].Ops, o)
		}
	}
	for _, t := range page.Tags {
		slices.SortFunc(t.Ops, func(a, b *docsOp) int {
			if c := strings.Compare(a.Path, b.Path); c != 0 {
				return c
			}
			return slices.Index(httpMethods, a.Method) - slices.Index(httpMethods, b.Method)
		})
	}
	shared := object(d.components["responses"])
	for _, name := range sortedKeys(shared) {
		page.Responses = append(page.Responses, d.response(name, object(shared[name])))
	}
	schemas := object(d.components["schemas"])
	for _, name := range sortedKeys(schemas) {
		page.Schemas = append(page.Schemas, docsNamedSchema{Name: name, Schema: d.schema(schemas[name], true)})
	}
	return page, nil
}

// tagAnchor is the id of a tag's section: "tag-desktop-sign-in".
func tagAnchor(name string) string {
	return "tag-" + strings.ToLower(strings.ReplaceAll(name, " ", "-"))
}

var httpMethods = []string{"GET", "PUT", "POST", "PATCH", "DELETE"}

func (d describer) operation(method, path string, op jsonObject, pathParams []any) *docsOp {
	o := &docsOp{Anchor: str(op["operationId"]), Method: method, Path: path, Summary: str(op["summary"]),
		Description: paragraphs(str(op["description"])), Credentials: credentials(op["security"])}
	for _, p := range append(slices.Clone(pathParams), list(op["parameters"])...) {
		p := d.resolve("parameters", p)
		o.Params = append(o.Params, docsParam{Name: str(p["name"]), In: str(p["in"]), Required: p["required"] == true,
			Description: text(str(p["description"])), Schema: d.schema(p["schema"], false)})
	}
	if body := d.resolve("requestBodies", op["requestBody"]); body != nil {
		o.Body = d.content(body["content"])
	}
	responses := object(op["responses"])
	for _, status := range sortedKeys(responses) {
		if ref, ok := object(responses[status])["$ref"].(string); ok {
			res := d.resolve("responses", responses[status])
			o.Responses = append(o.Responses, docsResponse{Status: status, Description: text(str(res["description"])),
				Shared: strings.TrimPrefix(ref, "#/components/responses/")})
			continue
		}
		o.Responses = append(o.Responses, d.response(status, object(responses[status])))
	}
	return o
}

// response describes a response: its headers and content.
func (d describer) response(status string, res jsonObject) docsResponse {
	r := docsResponse{Status: status, Description: text(str(res["description"])), Content: d.content(res["content"])}
	headers := object(res["headers"])
	for _, name := range sortedKeys(headers) {
		h := d.resolve("headers", headers[name])
		r.Headers = append(r.Headers, docsParam{Name: name, Required: h["required"] == true,
			Description: text(str(h["description"])), Schema: d.schema(h["schema"], false)})
	}
	return r
}

// credentials says which credentials an operation takes.
func credentials(security any) string {
	reqs := list(security)
	if security == nil || len(reqs) == 0 {
		return "none"
	}
	var names []string
	optional := false
	for _, r := range reqs {
		keys := sortedKeys(object(r))
		if len(keys) == 0 {
			optional = true
		}
		names = append(names, strings.Join(keys, " and "))
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	s := strings.Join(names, " or ")
	if optional {
		s += " (optional)"
	}
	return s
}

func (d describer) content(c any) []docsContent {
	media := object(c)
	var out []docsContent
	for _, mt := range sortedKeys(media) {
		out = append(out, docsContent{MediaType: mt, Schema: d.schema(object(media[mt])["schema"], true)})
	}
	return out
}

// resolve follows a $ref to one of the components of kind.
func (d describer) resolve(kind string, v any) jsonObject {
	m := object(v)
	for range 5 { // refs to refs, not cycles
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		m = object(object(d.components[kind])[strings.TrimPrefix(ref, "#/components/"+kind+"/")])
	}
	return m
}

// schema describes a schema. A $ref shows as a link to the named schema
// (with what is written beside it), unless expand asks for its content: at
// the top of a body, and for the named schemas themselves.
func (d describer) schema(v any, expand bool) *docsSchema {
	m := object(v)
	ref, isRef := m["$ref"].(string)
	switch {
	case isRef && !expand:
		beside := jsonObject{}
		for k, v := range m {
			if k != "$ref" {
				beside[k] = v
			}
		}
		s := d.describe(beside)
		s.Ref, s.Type = strings.TrimPrefix(ref, "#/components/schemas/"), ""
		return s
	case isRef:
		named := d.deref(m)
		if desc, ok := m["description"]; ok {
			named["description"] = desc
		}
		m = named
	}
	if _, ok := m["allOf"]; ok {
		m = d.merged(m)
	}
	return d.describe(m)
}

// describe describes a schema with no $ref or allOf at its top.
func (d describer) describe(m jsonObject) *docsSchema {
	s := &docsSchema{Title: str(m["title"]), Description: text(str(m["description"]))}
	switch t := m["type"].(type) {
	case string:
		s.Type = t
	case []any:
		var names []string
		for _, n := range t {
			names = append(names, str(n))
		}
		s.Type = strings.Join(names, " or ")
	}
	if c, ok := m["const"]; ok {
		s.Facts = append(s.Facts, "always "+jsonText(c))
	} else if e := list(m["enum"]); len(e) > 0 {
		var vals []string
		for _, v := range e {
			vals = append(vals, jsonText(v))
		}
		s.Facts = append(s.Facts, "one of "+strings.Join(vals, ", "))
	}
	if f, ok := m["format"]; ok {
		s.Facts = append(s.Facts, "format "+jsonText(f))
	}
	if p, ok := m["pattern"]; ok {
		s.Facts = append(s.Facts, "matches "+jsonText(p))
	}
	s.Facts = appendRange(s.Facts, m, "minLength", "maxLength", " characters")
	s.Facts = appendRange(s.Facts, m, "minItems", "maxItems", " items")
	s.Facts = appendRange(s.Facts, m, "minimum", "maximum", "")
	if v, ok := m["default"]; ok {
		s.Facts = append(s.Facts, "default "+jsonText(v))
	}
	if names := object(m["propertyNames"]); names["pattern"] != nil {
		s.Facts = append(s.Facts, "member names match "+jsonText(names["pattern"]))
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, v := range list(m[key]) {
			s.Variants = append(s.Variants, d.schema(v, false))
		}
	}
	if items, ok := m["items"]; ok {
		s.Items = d.schema(items, false)
	}
	if ap, ok := m["additionalProperties"].(jsonObject); ok {
		s.Values = d.schema(ap, false)
	}
	props := object(m["properties"])
	required := list(m["required"])
	for _, r := range required { // in the order written, which is the members'
		if p, ok := props[str(r)]; ok {
			s.Props = append(s.Props, docsProp{Name: str(r), Required: true, Schema: d.schema(p, false)})
		}
	}
	for _, name := range sortedKeys(props) {
		if !slices.Contains(required, any(name)) {
			s.Props = append(s.Props, docsProp{Name: name, Schema: d.schema(props[name], false)})
		}
	}
	switch {
	case s.Type != "":
	case len(s.Variants) > 0:
		s.Type = "one of"
	case len(s.Props) > 0:
		s.Type = "object"
	case m["const"] == nil:
		s.Type = "any"
	}
	return s
}

// appendRange adds the bounds m gives under minKey and maxKey: "1 to 100
// characters", "at least 0", "at most 500 items".
func appendRange(facts []string, m jsonObject, minKey, maxKey, unit string) []string {
	lo, hasLo := m[minKey]
	hi, hasHi := m[maxKey]
	switch {
	case hasLo && hasHi:
		return append(facts, jsonText(lo)+" to "+jsonText(hi)+unit)
	case hasLo:
		return append(facts, "at least "+jsonText(lo)+unit)
	case hasHi:
		return append(facts, "at most "+jsonText(hi)+unit)
	}
	return facts
}

// merged flattens m's allOf, and what is written beside it, into one
// schema as a reader takes it: members are merged member by member, so that
// a narrowed member (an error response's code) shows with its base.
func (d describer) merged(m jsonObject) jsonObject {
	out := jsonObject{}
	for _, part := range list(m["allOf"]) {
		part := d.deref(part)
		delete(part, "description") // the part's, not the whole's
		mergeSchema(out, part)
	}
	for k, v := range m {
		if k != "allOf" && k != "$ref" {
			mergeSchema(out, jsonObject{k: v})
		}
	}
	return out
}

// deref returns a copy of v, or of the named schema v refers to, with its
// own allOf flattened.
func (d describer) deref(v any) jsonObject {
	m := d.resolve("schemas", v)
	if _, ok := m["allOf"]; ok {
		return d.merged(m)
	}
	out := jsonObject{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mergeSchema(dst, src jsonObject) {
	for k, v := range src {
		switch k {
		case "properties":
			props := jsonObject{}
			for name, p := range object(dst["properties"]) {
				props[name] = p
			}
			for name, p := range object(v) {
				props[name] = mergeMember(props[name], p)
			}
			dst[k] = props
		case "required":
			req := list(dst["required"])
			for _, r := range list(v) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			dst[k] = req
		default:
			dst[k] = v
		}
	}
}

// mergeMember merges two schemas of one member. An empty side (the
// envelope's data) gives way to the other as it is, links included.
func mergeMember(a, b any) any {
	am, bm := object(a), object(b)
	switch {
	case a == nil || len(am) == 0:
		return b
	case len(bm) == 0:
		return a
	}
	out := jsonObject{}
	mergeSchema(out, am)
	mergeSchema(out, bm)
	return out
}

// paragraphs splits text at blank lines.
func paragraphs(s string) []docsText {
	var out []docsText
	for p := range strings.SplitSeq(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, text(p))
		}
	}
	return out
}

// text marks the `backticked` spans of s as code.
func text(s string) docsText {
	var out docsText
	for i, part := range strings.Split(s, "`") {
		if part != "" {
			out = append(out, docsSpan{Text: part, Code: i%2 == 1})
		}
	}
	return out
}

func object(v any) jsonObject { m, _ := v.(jsonObject); return m }
func list(v any) []any        { l, _ := v.([]any); return l }
func str(v any) string        { s, _ := v.(string); return s }

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m jsonObject) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
