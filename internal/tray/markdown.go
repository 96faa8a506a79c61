package tray

import (
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// mdParser reads Markdown as the dashboard renders it (CommonMark with
// GitHub's tables and strikethrough), so that what the tray strips is what
// the dashboard would have drawn.
var mdParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)).Parser()

// PlainText is a Markdown message as the plain text a menu or a desktop
// notification shows: the words without their syntax (emphasis, code
// marks, heading marks, link targets), a list item as "• item", one line per
// block, line breaks as the sender wrote them.
func PlainText(md string) string {
	src := []byte(md)
	doc := mdParser.Parse(text.NewReader(src))
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				v := c.Segment.Value(src)
				if n.Kind() != ast.KindCodeSpan {
					v = unescape(v)
				}
				b.Write(v)
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte('\n')
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.CodeSpan:
				walk(c)
			case *ast.AutoLink:
				b.Write(c.URL(src))
			case *ast.RawHTML:
				for i := range c.Segments.Len() {
					seg := c.Segments.At(i)
					b.Write(seg.Value(src))
				}
			case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
				lines := c.Lines()
				for i := range lines.Len() {
					line := lines.At(i)
					b.Write(line.Value(src))
				}
				endLine(&b)
			case *ast.ListItem:
				b.WriteString("• ")
				walk(c)
				endLine(&b)
			case *ast.ThematicBreak:
			case *extast.TableCell:
				if c.PreviousSibling() != nil {
					b.WriteString(" · ")
				}
				walk(c)
			default:
				walk(c)
				if c.Type() == ast.TypeBlock && c.Kind() != ast.KindList {
					endLine(&b)
				}
			}
		}
	}
	walk(doc)
	return strings.TrimSpace(b.String())
}

// endLine ends the text's last line, once.
func endLine(b *strings.Builder) {
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// unescape drops the backslash of an escaped punctuation character (\*),
// as Markdown does outside code.
func unescape(v []byte) []byte {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte(punctuation, v[i+1]) >= 0 {
			i++
		}
		out = append(out, v[i])
	}
	return out
}

// punctuation is what a backslash escapes in CommonMark.
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
