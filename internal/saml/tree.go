package saml

import (
	"strings"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch"
)

// Reading an etree document by namespace and local name: a prefix is the
// sender's choice, so every check here names the namespace, never the
// prefix.

// cleanText returns el's text, trimmed, when it is one plain run: no
// comment, child element or processing instruction, and not two runs (a
// CDATA section beside text); ok is false otherwise, or when it is empty or
// holds control characters. A comment splits a value for some readers and
// not for others ("alice@example.com<!---->.evil.test"); such a value is
// refused whole.
func cleanText(el *etree.Element) (string, bool) {
	if el == nil {
		return "", false
	}
	text, runs := "", 0
	for _, tok := range el.Child {
		cd, ok := tok.(*etree.CharData)
		if !ok {
			return "", false
		}
		runs++
		text = cd.Data
	}
	text = strings.TrimSpace(text)
	return text, runs == 1 && text != "" && perch.TextProblem(text, perch.SingleLine) == ""
}

// attr is el's attribute name without a namespace prefix ("" when absent).
func attr(el *etree.Element, name string) string {
	if el == nil {
		return ""
	}
	for _, a := range el.Attr {
		if a.Space == "" && a.Key == name {
			return a.Value
		}
	}
	return ""
}

// is reports whether el is the element tag of namespace ns.
func is(el *etree.Element, ns, tag string) bool {
	return el != nil && el.Tag == tag && el.NamespaceURI() == ns
}

// childrenOf are el's child elements tag of namespace ns.
func childrenOf(el *etree.Element, ns, tag string) []*etree.Element {
	if el == nil {
		return nil
	}
	var out []*etree.Element
	for _, c := range el.ChildElements() {
		if is(c, ns, tag) {
			out = append(out, c)
		}
	}
	return out
}

// firstChild is el's first child element tag of namespace ns, or nil.
func firstChild(el *etree.Element, ns, tag string) *etree.Element {
	if c := childrenOf(el, ns, tag); len(c) > 0 {
		return c[0]
	}
	return nil
}

// walk calls fn for el and every element below it.
func walk(el *etree.Element, fn func(*etree.Element)) {
	fn(el)
	for _, c := range el.ChildElements() {
		walk(c, fn)
	}
}
