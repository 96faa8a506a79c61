package web

import (
	"bytes"
	"html/template"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdownHTML is a notification's Markdown message as HTML for the feed,
// safe to put on the page as it is: goldmark renders it (CommonMark with
// GitHub's tables, strikethrough and bare links), raw HTML in it shows as
// the text it is, an image as a link to it, and bluemonday then keeps only
// the elements Markdown makes and links to http, https and mailto
// addresses (a javascript: link is left as its text). DESIGN.md, "The rich
// notification in the dashboard and the tray".
func markdownHTML(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		// goldmark fails only when writing fails, which a buffer does not;
		// the text as text, all the same.
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(markdownPolicy.SanitizeBytes(buf.Bytes()))
}

var markdown = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
	goldmark.WithRendererOptions(
		html.WithHardWraps(), // a sender's line break is a line break, as in the tray
		renderer.WithNodeRenderers(util.Prioritized(asText{}, 100)),
	),
)

// markdownPolicy is what the feed keeps of goldmark's HTML: the elements
// Markdown makes, no images, no classes or styles but the code language's,
// links only to http(s) and mailto, opened in a new tab without a referrer.
var markdownPolicy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
		"h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+-]{1,32}$`)).OnElements("code")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.RequireNoReferrerOnLinks(true)
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// asText renders what goldmark would otherwise drop or draw: raw HTML as
// its text, and an image as a link to it (the feed shows no images from
// messages: a remote image is a tracking pixel, and the pages allow none
// but icons).
type asText struct{}

func (asText) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				w.Write(util.EscapeHTML(seg.Value(src)))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			w.WriteString("<p>")
			lines := b.Lines()
			for i := range lines.Len() {
				line := lines.At(i)
				w.Write(util.EscapeHTML(line.Value(src)))
			}
			if b.HasClosure() {
				w.Write(util.EscapeHTML(b.ClosureLine.Value(src)))
			}
			w.WriteString("</p>\n")
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindImage, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		img := n.(*ast.Image)
		if entering {
			w.WriteString(`<a href="`)
			w.Write(util.EscapeHTML(util.URLEscape(img.Destination, true)))
			w.WriteString(`">`)
		} else {
			w.WriteString("</a>")
		}
		// The alt text is the image's children: goldmark renders them as
		// the link's text.
		return ast.WalkContinue, nil
	})
}
