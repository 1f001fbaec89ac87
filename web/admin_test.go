package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"personnel/auth"
	"personnel/config"
	"personnel/resource"
	"personnel/server"
)

func TestAdmin_SignInShowsEveryResourceAndSignOutForgetsTheToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *site) {
		tb := s.open(t)
		tb.run("opening the admin UI", chromedp.Navigate(s.url+"/admin/"))
		tb.typeInto("#username", editorName)
		tb.typeInto("#password", "not the password")
		tb.click(button("Sign in"))
		tb.waitText(".signin-form [role=alert]", "Unable to log in with provided credentials.")

		tb.typeInto("#password", password)
		tb.click(button("Sign in"))
		tb.waitFor("the signed-in page", `document.querySelector("nav.resources") !== null`)
		for _, r := range server.CompiledResources() {
			if n := tb.count(fmt.Sprintf(`nav.resources a[href="#/%s"]`, r.Path)); n != 1 {
				t.Errorf("%d links to %s in the navigation", n, r.Path)
			}
			if got := tb.text(fmt.Sprintf(`nav.resources a[href="#/%s"]`, r.Path)); got != humanize(r.Path) {
				t.Errorf("the link to %s says %q, want %q", r.Path, got, humanize(r.Path))
			}
		}
		if got := tb.text(".who .user"); got != editorName+" (editor)" {
			t.Errorf("the page names the user %q", got)
		}

		tb.click(button("Sign out"))
		tb.waitText(".signin [role=status]", "You have signed out.")
		if stored := eval[bool](tb, `sessionStorage.getItem("personnel.session") !== null`); stored {
			t.Error("the token is still in sessionStorage after signing out")
		}
		tb.run("reloading", chromedp.Reload())
		tb.waitFor("the sign-in form after a reload", `document.querySelector("#username") !== null`)
	})
}

// nodeItem is a JavaScript expression of the tree item named name.
func nodeItem(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("[role=treeitem]")].find((li) => { const n = li.querySelector(":scope > .node .node-name"); return n && n.textContent === %s; })`, js(name))
}

// itemOf returns the visible tree item named name, or fails.
func itemOf(t *testing.T, items []treeItem, name string) treeItem {
	t.Helper()
	for _, it := range items {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no tree item %q in %+v", name, items)
	return treeItem{}
}

// clickNode clicks the name of the tree item named name (which selects
// it), or its twisty (which opens or closes it).
func (tb *tab) clickNode(name string, twisty bool) {
	tb.t.Helper()
	part := ".node-name"
	if twisty {
		part = ".twisty"
	}
	tb.waitFor("the tree item "+name, nodeItem(name)+" !== undefined")
	tb.do(fmt.Sprintf(`(%s).querySelector(":scope > .node %s").setAttribute("data-click", "1")`, nodeItem(name), part))
	tb.click(`[data-click="1"]`)
	// The click may have drawn the tree anew, without the marked element.
	tb.do(`document.querySelectorAll("[data-click]").forEach((e) => e.removeAttribute("data-click"))`)
}

func TestAdmin_TreeCreatesARootAndAChildBelowIt(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/tree")
		tb.waitText(".list-pane [role=status]", "0 top-level")

		tb.click(button("New " + r.singular()))
		tb.typeInto(field(r.Fields.Code), "ROOT1")
		tb.typeInto(field(r.Fields.Name), "Root one")
		tb.fillRequired(r)
		tb.click(button("Create"))
		tb.waitText(".detail-pane [role=status]", "Created.")
		tb.waitFor("the root in the tree", nodeItem("Root one")+" !== undefined")

		tb.click(button("Add a " + r.singular() + " below"))
		tb.waitText(".detail-pane h2", "New "+r.singular()+" below Root one (ROOT1)")
		tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, r.Fields.Parent), "Root one (ROOT1)")
		tb.typeInto(field(r.Fields.Code), "CHILD1")
		tb.typeInto(field(r.Fields.Name), "Child one")
		tb.fillRequired(r)
		tb.click(button("Create"))
		tb.waitText(".detail-pane [role=status]", "Created.")
		tb.waitFor("the child in the tree", nodeItem("Child one")+" !== undefined")

		items := tb.tree()
		root, child := itemOf(t, items, "Root one"), itemOf(t, items, "Child one")
		if root.Level != 1 || root.Count != "1" || root.Expanded != "true" {
			t.Errorf("the root shows as %+v, want level 1, 1 child, open", root)
		}
		if child.Level != 2 || child.Count != "" || child.Expanded != "" || !child.Selected {
			t.Errorf("the child shows as %+v, want level 2, a selected leaf", child)
		}
		if got := tb.text(".detail-pane .crumbs"); got != "Root one (ROOT1)Child one (CHILD1)" {
			t.Errorf("the breadcrumb reads %q", got)
		}
		var page struct {
			Data []map[string]any
		}
		s.mustJSON(s.call("GET", fmt.Sprintf("%s/%s/?%s=CHILD1", server.APIRoot, r.Path, r.Fields.Code), nil), 200, &page)
		var roots struct {
			Data []map[string]any
		}
		s.mustJSON(s.call("GET", fmt.Sprintf("%s/%s/?%s=ROOT1", server.APIRoot, r.Path, r.Fields.Code), nil), 200, &roots)
		if len(page.Data) != 1 || len(roots.Data) != 1 || page.Data[0][r.Fields.Parent] != roots.Data[0]["id"] {
			t.Errorf("stored: child %v, root %v", page.Data, roots.Data)
		}
	})
}

func TestAdmin_EditShowsTheServersMessagesBesideTheFieldsThenSaves(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		s.add(r, "TAKEN", "Taken", nil)
		id := s.add(r, "MINE", "Mine", nil)
		item := fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, id)
		// The messages the server gives for each change, to be shown as
		// they are: a blank name first (fields are checked before the
		// code's uniqueness), then a code taken ignoring case.
		var blank, taken struct{ Errors map[string][]string }
		s.mustJSON(s.call("PATCH", item, map[string]any{r.Fields.Code: "taken", r.Fields.Name: "  "}), 400, &blank)
		s.mustJSON(s.call("PATCH", item, map[string]any{r.Fields.Code: "taken", r.Fields.Name: "Mine again"}), 400, &taken)

		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/table/" + fmt.Sprint(id))
		tb.waitFor("the form", fmt.Sprintf(`document.querySelector(%s) !== null`, js(field(r.Fields.Code))))
		shown := func(key, want string) {
			t.Helper()
			sel := fmt.Sprintf(`.detail-pane [data-field=%q] .field-error`, key)
			if want == "" {
				tb.waitFor("no message beside "+key, fmt.Sprintf(`document.querySelector(%s).hidden`, js(sel)))
				return
			}
			tb.waitText(sel, want)
			if invalid := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute("aria-invalid")`, js(field(key)))); invalid != "true" {
				t.Errorf("%s: aria-invalid is %q", key, invalid)
			}
		}

		tb.typeInto(field(r.Fields.Code), "taken")
		tb.typeInto(field(r.Fields.Name), "  ")
		tb.click(button("Save"))
		shown(r.Fields.Name, blank.Errors[r.Fields.Name][0])
		tb.waitText(".detail-pane [role=alert]", "see the messages beside the fields")

		tb.typeInto(field(r.Fields.Name), "Mine again")
		tb.click(button("Save"))
		shown(r.Fields.Code, taken.Errors[r.Fields.Code][0])
		shown(r.Fields.Name, "")

		tb.typeInto(field(r.Fields.Code), "MINE2")
		tb.click(button("Save"))
		tb.waitText(".detail-pane [role=status]", "Saved.")
		if n := tb.count(".detail-pane .field-error:not([hidden])"); n != 0 {
			t.Errorf("%d field messages still shown after saving", n)
		}
		got := s.record(r.Path, id)
		if got[r.Fields.Code] != "MINE2" || got[r.Fields.Name] != "Mine again" {
			t.Errorf("stored %v", got)
		}
	})
}

func TestAdmin_MovingARecordRedrawsTheTreeAndACycleShowsTheServersMessage(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		from := s.add(r, "FROM", "From here", nil)
		to := s.add(r, "TO", "To there", nil)
		moved := s.add(r, "MOVED", "Moved one", from)

		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/tree")
		tb.clickNode("From here", true)
		tb.clickNode("Moved one", false)
		tb.waitText(".detail-pane h2", "Moved one")

		picker := fmt.Sprintf(`.detail-pane [data-field=%q] input`, r.Fields.Parent)
		tb.typeInto(picker, "To th")
		tb.waitText(".detail-pane [role=option]", "To there (TO)")
		tb.click(`//li[@role='option' and normalize-space()='To there (TO)']`)
		tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, r.Fields.Parent), "To there (TO)")
		tb.click(button("Save"))
		tb.waitText(".detail-pane [role=status]", "Saved.")
		tb.waitFor("the tree redrawn", fmt.Sprintf(`(%s).getAttribute("aria-expanded") === "true"`, nodeItem("To there")))

		items := tb.tree()
		if it := itemOf(t, items, "From here"); it.Count != "" || it.Expanded != "" {
			t.Errorf("the old parent shows as %+v, want a leaf", it)
		}
		if it := itemOf(t, items, "To there"); it.Count != "1" {
			t.Errorf("the new parent shows as %+v, want 1 child", it)
		}
		if it := itemOf(t, items, "Moved one"); it.Level != 2 {
			t.Errorf("the moved record shows as %+v, want level 2", it)
		}
		if got := tb.text(".detail-pane .crumbs"); got != "To there (TO)Moved one (MOVED)" {
			t.Errorf("the breadcrumb reads %q", got)
		}
		if got := s.record(r.Path, moved)[r.Fields.Parent]; got != float64(to) {
			t.Errorf("stored parent %v, want %d", got, to)
		}

		// A parent below the record itself: the server refuses, and says why.
		var want struct{ Errors map[string][]string }
		s.mustJSON(s.call("PATCH", fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, to), map[string]any{r.Fields.Parent: moved}), 400, &want)
		tb.clickNode("To there", false)
		tb.waitText(".detail-pane h2", "To there")
		tb.typeInto(picker, "Moved")
		tb.waitText(".detail-pane [role=option]", "Moved one (MOVED)")
		tb.click(`//li[@role='option' and normalize-space()='Moved one (MOVED)']`)
		tb.click(button("Save"))
		tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .field-error`, r.Fields.Parent), want.Errors[r.Fields.Parent][0])
		if got := s.record(r.Path, to)[r.Fields.Parent]; got != nil {
			t.Errorf("the refused move stored parent %v", got)
		}
	})
}

func TestAdmin_AStaleEditSaysSoAndReloads(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		id := s.add(r, "STALE", "As read", nil)
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, id))
		tb.waitFor("the form", fmt.Sprintf(`document.querySelector(%s) !== null`, js(field(r.Fields.Name))))
		tb.typeInto(field(r.Fields.Name), "Mine")
		// Someone else changes the record meanwhile.
		s.mustJSON(s.call("PATCH", fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, id), map[string]any{r.Fields.Name: "Theirs"}), 200, nil)
		tb.click(button("Save"))
		tb.waitText(".detail-pane [role=alert]", "was changed by someone else after you opened it, so your changes were not saved")
		if got := s.record(r.Path, id)[r.Fields.Name]; got != "Theirs" {
			t.Fatalf("the stale edit was stored: %v", got)
		}
		tb.click(button("Reload it"))
		tb.waitText(".detail-pane [role=status]", "Reloaded")
		if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).value`, js(field(r.Fields.Name)))); got != "Theirs" {
			t.Errorf("after reloading the form holds %q", got)
		}
		// And the reloaded form saves.
		tb.typeInto(field(r.Fields.Name), "Mine after all")
		tb.click(button("Save"))
		tb.waitText(".detail-pane [role=status]", "Saved.")
		if got := s.record(r.Path, id)[r.Fields.Name]; got != "Mine after all" {
			t.Errorf("stored %v", got)
		}
	})
}

func TestAdmin_DeletingAParentShowsTheServers409(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		parent := s.add(r, "PARENT", "Parent", nil)
		child := s.add(r, "CHILD", "Child", parent)
		var want struct{ Msg string }
		s.mustJSON(s.call("DELETE", fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, parent), nil), 409, &want)

		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, parent))
		tb.click(button("Delete"))
		tb.click(button("Delete Parent"))
		tb.waitText(".detail-pane [role=alert]", want.Msg)
		s.record(r.Path, parent) // still there

		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, child))
		tb.waitText(".detail-pane h2", "Child")
		tb.click(button("Delete"))
		tb.click(button("Delete Child"))
		tb.waitText(".detail-pane [role=status]", "Deleted Child (CHILD).")
		tb.waitFor("the table without the child", `![...document.querySelectorAll(".list-pane td")].some((td) => td.textContent === "CHILD")`)
		if a := s.call("GET", fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, child), nil); a.status != 404 {
			t.Errorf("after deleting, reading the child answers %d", a.status)
		}
	})
}

func TestAdmin_AViewerSeesNoEditControls(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		parent := s.add(r, "SEEN", "Seen", nil)
		id := s.add(r, "LOOKED", "Looked at", parent)
		tb := s.open(t)
		tb.signIn(viewerName)
		for _, view := range []string{"table", "tree"} {
			tb.goTo(fmt.Sprintf("#/%s/%s/%d", r.Path, view, id))
			tb.waitText(".detail-pane h2", "Looked at")
			tb.waitText(".detail-pane dl", "Seen (SEEN)")
			if n := tb.count(".detail-pane form, .detail-pane input, .detail-pane select, .detail-pane button"); n != 0 {
				t.Errorf("%s view: the viewer's record pane has %d controls", view, n)
			}
			if n := eval[int](tb, `[...document.querySelectorAll("main a, main button")].filter((e) => /^(New |Add |Delete|Save)/.test(e.textContent)).length`); n != 0 {
				t.Errorf("%s view: the viewer is offered %d edit controls", view, n)
			}
		}
		// Nor a form for a new record when asked for one.
		tb.goTo(fmt.Sprintf("#/%s/table/new", r.Path))
		tb.waitText(".detail-pane", "Choose a "+r.singular())
		if n := tb.count(".detail-pane form"); n != 0 {
			t.Errorf("the viewer got %d forms for a new record", n)
		}
	})
}

func TestAdmin_MarkupInTheDataIsShownAsText(t *testing.T) {
	r := treeRes(t)
	const name = `<img src=x onerror="window.injected=1">`
	const code = `<b>X</b>`
	forEachBackend(t, func(t *testing.T, s *site) {
		parent := s.add(r, code, name, nil)
		id := s.add(r, "PLAIN", "Plain", parent)
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/table")
		tb.waitText(".list-pane td", name)
		tb.goTo(fmt.Sprintf("#/%s/tree/%d", r.Path, id))
		tb.waitText(".detail-pane .crumbs", name+" ("+code+")")
		tb.waitText(".list-pane .node-name", name)
		tb.typeInto(fmt.Sprintf(`.detail-pane [data-field=%q] input`, r.Fields.Parent), "onerror")
		tb.waitText(".detail-pane [role=option]", name)
		tb.goTo(fmt.Sprintf("#/%s/tree/%d", r.Path, parent))
		tb.waitText(".detail-pane h2", name)
		if got := eval[string](tb, `document.querySelector(".detail-pane h2").firstChild.textContent`); got != name {
			t.Errorf("the heading's text is %q", got)
		}
		if n := tb.count("#app img, #app b"); n != 0 {
			t.Errorf("the data made %d elements", n)
		}
		if injected := eval[bool](tb, `window.injected === 1`); injected {
			t.Error("the data ran script")
		}
	})
}

func TestAdmin_TheTreeIsUsableWithTheKeyboardAlone(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		a := s.add(r, "KA", "Alpha", nil)
		s.add(r, "KA1", "Alpha one", a)
		s.add(r, "KA2", "Alpha two", a)
		s.add(r, "KB", "Beta", nil)
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/tree")
		tb.waitFor("the tree", nodeItem("Beta")+" !== undefined")
		if n := tb.count(`[role=treeitem][tabindex="0"]`); n != 1 {
			t.Fatalf("%d tree items in the tab order, want 1", n)
		}
		focused := func() string {
			return eval[string](tb, `(document.activeElement.querySelector(":scope > .node .node-name") || {textContent: ""}).textContent`)
		}
		tb.do(`document.querySelector('[role=treeitem][tabindex="0"]').focus()`)
		steps := []struct{ keys, focus, check string }{
			{"", "Alpha", ""},
			{kb.ArrowRight, "Alpha", nodeItem("Alpha") + `.getAttribute("aria-expanded") === "true" && ` + nodeItem("Alpha one") + ` !== undefined`}, // Right opens
			{kb.ArrowRight, "Alpha one", ""}, // Right again: the first child
			{kb.ArrowDown, "Alpha two", ""},  // Down
			{kb.ArrowLeft, "Alpha", ""},      // Left: the parent
			{kb.ArrowLeft, "Alpha", nodeItem("Alpha") + `.getAttribute("aria-expanded") === "false" && ` + nodeItem("Alpha one") + ` === undefined`}, // Left closes
			{kb.ArrowDown, "Beta", ""}, // Down, past the closed node's children
			{kb.Home, "Alpha", ""},
			{kb.End, "Beta", ""},
		}
		for i, st := range steps {
			if st.keys != "" {
				tb.key(st.keys)
			}
			if st.check != "" {
				tb.waitFor(fmt.Sprintf("step %d", i), st.check)
			}
			tb.waitFor(fmt.Sprintf("step %d: focus on %s", i, st.focus), fmt.Sprintf(`(document.activeElement.querySelector(":scope > .node .node-name") || {}).textContent === %s`, js(st.focus)))
		}
		tb.key(kb.Enter)
		tb.waitText(".detail-pane h2", "Beta")
		if got := focused(); got != "Beta" {
			t.Errorf("after Enter the focus is on %q, want it left on Beta in the tree", got)
		}
		if n := tb.count(`[role=treeitem][tabindex="0"]`); n != 1 {
			t.Errorf("%d tree items in the tab order after moving, want 1", n)
		}
	})
}

// axeViolation is one rule axe-core found broken, as the test reports it.
type axeViolation struct {
	ID     string
	Impact string
	Help   string
	Nodes  []string
}

// checkAccessibility runs axe-core on the page as it is and fails on any
// serious or critical violation (the others are logged).
func (tb *tab) checkAccessibility(t *testing.T, what string) {
	t.Helper()
	if !eval[bool](tb, `typeof axe !== "undefined"`) {
		source, err := os.ReadFile(filepath.Join("testdata", "axe-core", "axe.min.js"))
		if err != nil {
			t.Fatal(err)
		}
		tb.do(string(source))
	}
	found := eval[[]axeViolation](tb, `axe.run(document, {resultTypes: ["violations"]}).then((r) => r.violations.map((v) => ({
		ID: v.id, Impact: v.impact || "", Help: v.help, Nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
	})))`)
	for _, v := range found {
		msg := fmt.Sprintf("%s: axe-core %s (%s): %s, at %v", what, v.ID, v.Impact, v.Help, v.Nodes)
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

// sampleTree adds a small organisation, for pages that show something.
func (s *site) sampleTree(r res) map[string]int {
	ids := map[string]int{}
	add := func(code, name, parent string) {
		var p any
		if parent != "" {
			p = ids[parent]
		}
		ids[name] = s.add(r, code, name, p)
	}
	add("HQ", "Head office", "")
	add("FIN", "Finance", "Head office")
	add("HR", "Human resources", "Head office")
	add("REC", "Recruitment", "Human resources")
	add("PAY", "Payroll", "Human resources")
	add("OPS", "Operations", "")
	add("NORTH", "Northern plant", "Operations")
	add("SOUTH", "Southern plant", "Operations")
	add("LAB", "Laboratory", "")
	return ids
}

func TestAdmin_PagesHaveNoSeriousOrCriticalAccessibilityViolations(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		ids := s.sampleTree(r)
		tb := s.open(t)
		tb.run("opening the admin UI", chromedp.Navigate(s.url+"/admin/"))
		tb.typeInto("#username", editorName)
		tb.typeInto("#password", "not the password")
		tb.click(button("Sign in"))
		tb.waitText(".signin-form [role=alert]", "Unable to log in")
		tb.checkAccessibility(t, "the sign-in page with its message")

		tb.typeInto("#password", password)
		tb.click(button("Sign in"))
		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, ids["Recruitment"]))
		tb.waitText(".detail-pane h2", "Recruitment")
		tb.waitText(".list-pane td", "Recruitment")
		tb.checkAccessibility(t, "the table and a record's form")

		tb.goTo(fmt.Sprintf("#/%s/tree/%d", r.Path, ids["Recruitment"]))
		tb.clickNode("Head office", true)
		tb.clickNode("Human resources", true)
		tb.clickNode("Recruitment", false)
		tb.waitText(".detail-pane h2", "Recruitment")
		if *screenshot != "" && s.cfg.DBDriver == config.DriverSQLite {
			tb.run("sizing the screenshot", chromedp.EmulateViewport(1200, 600))
			png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			tb.run("the usual size again", chromedp.ResetViewport())
			if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", *screenshot)
		}
		tb.typeInto(fmt.Sprintf(`.detail-pane [data-field=%q] input`, r.Fields.Parent), "plant")
		tb.waitText(".detail-pane [role=option]", "Northern plant")
		tb.checkAccessibility(t, "the tree, a record's form and the parent picker's list")

		tb.typeInto(field(r.Fields.Name), " ")
		tb.click(button("Save"))
		tb.waitText(".detail-pane .field-error", "blank")
		tb.checkAccessibility(t, "a form with the server's messages")

		tb.click(button("New " + r.singular()))
		tb.waitText(".detail-pane h2", "New "+r.singular())
		tb.checkAccessibility(t, "the form for a new record")

		tb.click(button("Sign out"))
		tb.signIn(viewerName)
		tb.goTo(fmt.Sprintf("#/%s/tree/%d", r.Path, ids["Payroll"]))
		tb.waitText(".detail-pane dl", "Human resources (HR)")
		tb.checkAccessibility(t, "a viewer's record")
	})
}

func TestAdmin_ANarrowScreenNeedsNoSidewaysScrolling(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		ids := s.sampleTree(r)
		long := s.add(r, "LONG-CODE-THAT-GOES-ON", strings.Repeat("Averyveryverylongwordwithoutspaces", 2), ids["Payroll"])
		tb := s.open(t)
		tb.run("a phone-sized screen", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
		tb.signIn(editorName)
		fits := func(what string) {
			t.Helper()
			if w := eval[[]int](tb, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
				t.Errorf("%s: the page is %dpx wide on a %dpx screen", what, w[0], w[1])
			}
		}
		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, long))
		tb.waitText(".detail-pane h2", "Averyvery")
		tb.waitText(".list-pane td", "LONG-CODE")
		fits("the table and a record")
		tb.goTo(fmt.Sprintf("#/%s/tree/%d", r.Path, long))
		tb.clickNode("Head office", true)
		tb.clickNode("Human resources", true)
		tb.clickNode("Payroll", true)
		tb.waitFor("the long name in the tree", nodeItem(strings.Repeat("Averyveryverylongwordwithoutspaces", 2))+" !== undefined")
		fits("the tree opened three levels down")
	})
}

func TestAdmin_TheTableFiltersSortsAndPages(t *testing.T) {
	r := res{server.CompiledResources()[0]}
	forEachBackend(t, func(t *testing.T, s *site) {
		for i := 1; i <= 30; i++ {
			name := fmt.Sprintf("Beta %02d", i)
			if i <= 9 {
				name = fmt.Sprintf("Alpha %02d", i)
			}
			s.add(r, fmt.Sprintf("T%02d", i), name, nil)
		}
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/table")
		rows := func() []string {
			return eval[[]string](tb, `[...document.querySelectorAll(".list-pane tbody tr")].map((tr) => tr.children[1].textContent)`)
		}
		plural := strings.ToLower(r.title())
		tb.waitText(".list-pane [role=status]", "30 "+plural+" · page 1 of 2")
		if got := rows(); len(got) != 25 || got[0] != "T01" {
			t.Errorf("page 1 shows %v", got)
		}
		tb.click(button("Next"))
		tb.waitText(".list-pane [role=status]", "page 2 of 2")
		if got := rows(); len(got) != 5 || got[0] != "T26" {
			t.Errorf("page 2 shows %v", got)
		}

		tb.typeInto(fmt.Sprintf(`[data-param="%s_icontains"]`, r.Fields.Name), "ALPHA")
		tb.waitText(".list-pane [role=status]", "9 "+plural)
		if got := rows(); len(got) != 9 {
			t.Errorf("the filter shows %v", got)
		}
		tb.erase(fmt.Sprintf(`[data-param="%s_icontains"]`, r.Fields.Name))
		tb.waitText(".list-pane [role=status]", "30 "+plural)

		code := humanize(r.Fields.Code)
		tb.click(fmt.Sprintf(`//th/button[starts-with(normalize-space(), %s)]`, xpathString(code)))
		tb.waitFor("ascending by code", `document.querySelector("th[aria-sort=ascending]") !== null`)
		tb.click(fmt.Sprintf(`//th/button[starts-with(normalize-space(), %s)]`, xpathString(code)))
		tb.waitFor("descending by code", `document.querySelector("th[aria-sort=descending]") !== null`)
		tb.waitFor("T30 first", `document.querySelector(".list-pane tbody tr").children[1].textContent === "T30"`)

		tb.do(`(() => { const s = document.querySelector(".pager select"); s.value = "10"; s.dispatchEvent(new Event("change")); })()`)
		tb.waitText(".list-pane [role=status]", "30 "+plural+" · page 1 of 3")
	})
}

// clock is a server's clock that a test moves forward.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

func TestAdmin_AnExpiredTokenIsRefreshedAndAnExpiredSessionReturnsToSignIn(t *testing.T) {
	r := treeRes(t)
	needBrowser(t)
	for _, b := range backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c := &clock{}
			s := newSite(t, b, siteOption{server: []server.Option{server.WithAuthOptions(auth.Options{Clock: c.now})}})
			s.add(r, "KEPT", "Kept", nil)
			tb := s.open(t)
			tb.signIn(editorName)
			tb.goTo("#/" + r.Path + "/table")
			tb.waitText(".list-pane td", "KEPT")
			first := eval[string](tb, `JSON.parse(sessionStorage.getItem("personnel.session")).token`)

			// Past the token's lifetime, within the refresh window: the next
			// request is refused, the token refreshed, the request sent again.
			c.advance(s.cfg.JWTTTL + time.Minute)
			tb.goTo("#/" + r.Path + "/tree")
			tb.waitFor("the tree", nodeItem("Kept")+" !== undefined")
			if now := eval[string](tb, `JSON.parse(sessionStorage.getItem("personnel.session")).token`); now == first {
				t.Error("the token was not refreshed")
			}

			// Past the refresh window: back to the sign-in page, saying why.
			c.advance(s.cfg.JWTRefreshWindow)
			tb.goTo("#/" + r.Path + "/table")
			tb.waitText(".signin-form [role=alert]", "Your session has expired. Sign in again.")
			if stored := eval[bool](tb, `sessionStorage.getItem("personnel.session") !== null`); stored {
				t.Error("the expired session is still stored")
			}
		})
	}
}

// authRefreshPath is where tokens are refreshed.
const authRefreshPath = "/jwt-api-token-refresh/"

// passPageTime lets the page's clock (not the test's) run for d: its
// timers fire as that time passes, and it stands still while a request is
// under way. It returns once the page has lived through d.
func (tb *tab) passPageTime(d time.Duration) {
	tb.t.Helper()
	budget := float64(d.Milliseconds())
	pass := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
			Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending, Budget: &budget,
		})
		return err
	})
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(emulation.VirtualTimeBudgetExpired, nil, pass)); err != nil {
		tb.t.Fatalf("letting %s of the page's time pass: %v", d, err)
	}
}

func TestAdmin_AnIdleSessionRefreshesItsTokenAndEndsWhenRefreshingIsRefused(t *testing.T) {
	r := treeRes(t)
	needBrowser(t)
	for _, b := range backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c := &clock{}
			s := newSite(t, b, siteOption{server: []server.Option{server.WithAuthOptions(auth.Options{Clock: c.now})}})
			s.add(r, "KEPT", "Kept", nil)
			tb := s.open(t)
			tb.signIn(editorName)
			tb.goTo("#/" + r.Path + "/table")
			tb.waitText(".list-pane td", "KEPT")
			// When the page accepted its token, by the page's clock.
			received := `JSON.parse(sessionStorage.getItem("personnel.session")).received`
			first := eval[float64](tb, received)

			// Three quarters into its lifetime the token is traded for a
			// new one (within one second of the server's clock the new
			// token may be the same string: the page's clock is the proof).
			tb.passPageTime(s.cfg.JWTTTL * 9 / 10)
			if got, want := eval[float64](tb, received)-first, float64((s.cfg.JWTTTL * 3 / 4).Milliseconds()); got < want {
				t.Errorf("the token was last accepted %.0f ms after sign-in, want a refresh at %.0f ms", got, want)
			}
			if !tb.requested(authRefreshPath) {
				t.Errorf("the page never asked %s", authRefreshPath)
			}
			if n := tb.count(".signin-form"); n != 0 {
				t.Fatal("the session ended although its token was refreshed")
			}

			// Past the refresh window the next refresh is refused, and when
			// the token expires the page returns to the sign-in form and
			// says why, with no request of the user's to find out.
			c.advance(s.cfg.JWTRefreshWindow + s.cfg.JWTTTL)
			tb.passPageTime(s.cfg.JWTTTL)
			if got := tb.text(".signin-form [role=alert]"); got != "Your session has expired. Sign in again." {
				t.Errorf("after expiry the page says %q", got)
			}
		})
	}
}

func TestAdmin_TheTreeShowsAHundredNodesAtATimeAndMoreOnDemand(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		recs := make([]resource.NewRecord, 105)
		for i := range recs {
			recs[i] = resource.NewRecord{Code: fmt.Sprintf("M%03d", i), Name: fmt.Sprintf("Many %03d", i)}
		}
		if _, err := server.Loaders(s.db)[r.Name].Load(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/tree")
		tb.waitText(".list-pane .more", "Show more (5 not shown)")
		if items := tb.tree(); len(items) != 100 || items[99].Name != "Many 099" {
			t.Fatalf("the first page of roots: %d items", len(items))
		}
		tb.click(".list-pane .more")
		tb.waitFor("every root", `document.querySelectorAll("[role=treeitem]").length === 105`)
		if n := tb.count(".list-pane .more"); n != 0 {
			t.Errorf("%d \"show more\" items once all are shown", n)
		}
		if got := eval[string](tb, `document.activeElement.querySelector(".node-name").textContent`); got != "Many 100" {
			t.Errorf("after showing more the focus is on %q, want the first new one", got)
		}
		if got := eval[[]string](tb, `[...document.querySelectorAll("[role=treeitem]")].slice(99, 101).map((li) => li.getAttribute("aria-posinset") + "/" + li.getAttribute("aria-setsize"))`); got[0] != "100/105" || got[1] != "101/105" {
			t.Errorf("positions %v", got)
		}
	})
}
