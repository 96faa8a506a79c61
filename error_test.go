package perch

import (
	"reflect"
	"testing"
)

func TestHTTPStatusOfEveryCode(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{
		EBADREQUEST: 400, EUNAUTHORIZED: 401, EFORBIDDEN: 403, ENOTFOUND: 404, EMETHOD: 405, ECONFLICT: 409,
		ETOOLARGE: 413, EUPGRADE: 426, EVALIDATION: 422, ERATELIMITED: 429, EINTERNAL: 500, EUNAVAILABLE: 503, "made_up": 500,
		EFEATUREDISABLED: 403, EBADGATEWAY: 502,
	} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%q) = %d, want %d", code, got, want)
		}
	}
}

func TestJSONKind(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]string{
		"": "a string", true: "true or false", 1: "a whole number", 1.5: "a number",
		&struct{}{}: "an object", struct{}{}: "an object",
	} {
		if got := JSONKind(reflect.TypeOf(v)); got != want {
			t.Errorf("JSONKind(%T) = %q, want %q", v, got, want)
		}
	}
	if got := JSONKind(reflect.TypeOf([]string{})); got != "an array" {
		t.Errorf("JSONKind([]string) = %q", got)
	}
}
