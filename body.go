package perch

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Decoding a sender's JSON body: what the notification senders and the
// payment webhooks share.

// DecodeObject unmarshals a JSON object into v and turns every failure into a
// bad request that tells the sender what is wrong with the body.
func DecodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return Errorf(EBADREQUEST, "The body is empty; a JSON object is required.")
	}
	if b[0] != '{' {
		if !json.Valid(b) {
			return notJSON()
		}
		return Errorf(EBADREQUEST, "The body must be a JSON object.")
	}
	// Unmarshal checks that the whole body is valid JSON before it decodes
	// any of it: a scan of our own would only repeat that.
	if err := json.Unmarshal(b, v); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok {
			return notJSON()
		}
		return ShapeError(err, "")
	}
	return nil
}

func notJSON() error { return Errorf(EBADREQUEST, "The body is not valid JSON.") }

// ShapeError explains a failure to decode valid JSON into the member at path
// ("" for the body): a member of the wrong type, named by its full path.
func ShapeError(err error, path string) error {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return Errorf(EBADREQUEST, "The body does not have the expected shape.")
	}
	field := strings.Trim(path+"."+te.Field, ".")
	if field == "" {
		field = "The body"
	}
	return Errorf(EBADREQUEST, "%s must be %s, not %s.", field, JSONKind(te.Type), article(te.Value))
}

// article turns the JSON value kinds reported by encoding/json ("string",
// "number 1.5", "object", ...) into words for a sentence.
func article(value string) string {
	kind, literal, _ := strings.Cut(value, " ")
	if kind == "number" && literal != "" {
		return Clip(literal, 30) // "not 1.5" says more than "not a number"
	}
	switch kind {
	case "object", "array":
		return "an " + kind
	case "bool":
		return "true or false"
	case "":
		return "this value"
	}
	return "a " + kind
}
