package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"personnel/server"
)

// camel is the operation ids' spelling of a path: "leave-types" is
// "LeaveTypes".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func TestDocs_TheReferencePageRendersTheDocumentAndTriesItWithTheToken(t *testing.T) {
	r := res{server.CompiledResources()[0]}
	forEachBackend(t, func(t *testing.T, s *site) {
		s.add(r, "TRIED", "Tried it", nil)
		tb := s.open(t)
		// Signed in to the admin UI in this tab, the reference page's
		// "try it" carries the same token.
		tb.signIn(editorName)
		tb.run("opening the API reference", chromedp.Navigate(s.url+server.DocsPath+"/"))
		tb.waitFor("the operations", `document.querySelectorAll(".opblock").length > 0`)
		for _, desc := range server.CompiledResources() {
			op := fmt.Sprintf("#operations-%s-list%s", desc.Path, camel(desc.Path))
			if n := tb.count(op); n != 1 {
				t.Errorf("%d elements %s: the list of %s is not shown", n, op, desc.Path)
			}
		}
		op := fmt.Sprintf("#operations-%s-list%s", r.Path, camel(r.Path))
		tb.click(op + " .opblock-summary-control")
		tb.click(op + " .try-out__btn")
		tb.click(op + " .execute")
		tb.waitText(op+" .live-responses-table .response-col_status", "200")
		tb.waitText(op+" .live-responses-table", "Tried it")
	})
}
